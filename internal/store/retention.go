package store

import (
	"context"
	"fmt"
	"time"
)

// Retention is how long data is kept, per kind; 0 keeps it forever.
type Retention struct {
	// Traces applies to the spans of kept traces, their summaries, findings and
	// clock offsets.
	Traces time.Duration
	// Logs applies to all logs.
	Logs time.Duration
}

// retentionTables names each table with the column its age is measured by,
// which retention applies, and how much longer than it the table keeps rows.
// Tables that are not partitioned by day (resources) expire row by row; the
// others drop whole parts.
var retentionTables = []struct {
	table, column string
	logs, both    bool // the logs' retention, or the longer of both
	extra         time.Duration
	rowByRow      bool
}{
	{"spans", "timestamp", false, false, 0, false},
	{"trace_summaries", "start", false, false, 0, false},
	{"trace_facts", "timestamp", false, false, 0, false},
	{"findings", "timestamp", false, false, 0, false},    // written before schema 020
	{"trace_clock", "timestamp", false, false, 0, false}, // written before schema 020
	{"red", "timestamp", false, false, 0, false},
	{"red_rollup", "timestamp", false, false, 0, false},
	{"clock_pairs", "timestamp", false, false, 0, false},
	{"logs", "timestamp", true, false, 0, false},
	{"trace_logs", "timestamp", true, false, 0, false}, // a copy of logs' traced lines
	// A resource's last_seen is refreshed hourly while it is in use; the
	// day more keeps it as long as the last span or log line that names it.
	{"resources", "last_seen", false, true, 24 * time.Hour, true},
}

// ApplyRetention sets (or removes) each table's TTL. Like the schema it runs
// on every start and is idempotent. Existing parts are not rewritten
// (materialize_ttl_after_modify = 0): expired rows go as parts merge, and
// whole day partitions are dropped once all their rows have expired
// (ttl_only_drop_parts), which costs nothing.
func ApplyRetention(ctx context.Context, c Conn, db string, r Retention) error {
	if !ValidDatabaseName(db) {
		return fmt.Errorf("database name %q is not a plain identifier", db)
	}
	for _, t := range retentionTables {
		keep := r.Traces
		switch {
		case t.logs:
			keep = r.Logs
		case t.both && (r.Traces == 0 || r.Logs == 0):
			keep = 0 // forever
		case t.both:
			keep = max(r.Traces, r.Logs)
		}
		if keep < 0 {
			return fmt.Errorf("retention of %s must not be negative, got %s", t.table, keep)
		}
		table := db + "." + t.table
		var stmt string
		if keep == 0 {
			has, err := hasTTL(ctx, c, db, t.table)
			if err != nil {
				return fmt.Errorf("reading the retention of %s: %w", table, err)
			}
			if !has {
				continue
			}
			stmt = fmt.Sprintf("ALTER TABLE %s REMOVE TTL", table)
		} else {
			// Seconds, rounded up: an integer literal from a duration, not
			// user text.
			secs := int64((keep + t.extra + time.Second - 1) / time.Second)
			stmt = fmt.Sprintf("ALTER TABLE %s MODIFY TTL toDateTime(%s) + toIntervalSecond(%d) "+
				"SETTINGS materialize_ttl_after_modify = 0", table, t.column, secs)
		}
		if err := c.Exec(ctx, stmt, nil); err != nil {
			return fmt.Errorf("setting the retention of %s: %w", table, err)
		}
		if !t.rowByRow {
			if err := c.Exec(ctx, fmt.Sprintf("ALTER TABLE %s MODIFY SETTING ttl_only_drop_parts = 1", table), nil); err != nil {
				return fmt.Errorf("setting the retention of %s: %w", table, err)
			}
		}
	}
	return nil
}

// hasTTL reports whether a table has a table TTL.
func hasTTL(ctx context.Context, c Conn, db, table string) (bool, error) {
	found := false
	err := c.Query(ctx, "SELECT 1 AS x FROM system.tables WHERE database = {db:String} AND name = {table:String} "+
		"AND position(engine_full, ' TTL ') > 0", Params{"db": db, "table": table}, func([]byte) error {
		found = true
		return nil
	})
	return found, err
}

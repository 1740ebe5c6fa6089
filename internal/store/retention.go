package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	{"trace_facts", "timestamp", false, false, 0, false}, // its lines by the logs' (linesTable)
	{"findings", "timestamp", false, false, 0, false},    // written before schema 020
	{"trace_clock", "timestamp", false, false, 0, false}, // written before schema 020
	{"red", "timestamp", false, false, 0, false},
	{"red_rollup", "timestamp", false, false, 0, false},
	{"clock_pairs", "timestamp", false, false, 0, false},
	{"logs", "timestamp", true, false, 0, false},
	// A resource's last_seen is refreshed hourly while it is in use; the
	// day more keeps it as long as the last span or log line that names it.
	{"resources", "last_seen", false, true, 24 * time.Hour, true},
}

// ApplyRetention sets (or removes) each table's TTL. Like the schema it runs
// on every start and is idempotent. Existing parts are not rewritten
// (materialize_ttl_after_modify = 0): expired rows go as parts merge, and
// whole day partitions are dropped once all their rows have expired
// (ttl_only_drop_parts), which costs nothing; trace_facts, whose lines and
// facts may expire apart, deletes rows as parts merge.
func ApplyRetention(ctx context.Context, c Conn, db string, r Retention) error {
	if !ValidDatabaseName(db) {
		return fmt.Errorf("database name %q is not a plain identifier", db)
	}
	if r.Traces < 0 || r.Logs < 0 {
		return fmt.Errorf("retention must not be negative, got %s for traces and %s for logs", r.Traces, r.Logs)
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
		ttl := ttlOf(t.column, keep+t.extra, keep == 0, "")
		dropParts := !t.rowByRow
		if t.table == linesTable && r.Logs != r.Traces {
			// Rows of two retentions: each rule deletes its own rows as
			// parts merge, and no part is dropped whole.
			ttl = strings.Join(slices.DeleteFunc([]string{
				ttlOf(t.column, r.Traces, r.Traces == 0, "fact != 'line'"),
				ttlOf(t.column, r.Logs, r.Logs == 0, "fact = 'line'")}, func(s string) bool { return s == "" }), ", ")
			dropParts = false
		}
		if err := setTTL(ctx, c, db, t.table, ttl, dropParts); err != nil {
			return err
		}
	}
	return nil
}

// linesTable holds rows of both retentions: a trace's findings and clock
// offsets, and its log lines (fact 'line', schema 023).
const linesTable = "trace_facts"

// ttlOf is a TTL rule of rows older than keep by column, for the rows of
// where if not empty; none ("") to keep them forever.
func ttlOf(column string, keep time.Duration, forever bool, where string) string {
	if forever {
		return ""
	}
	// Seconds, rounded up: an integer literal from a duration, not user text.
	secs := int64((keep + time.Second - 1) / time.Second)
	rule := fmt.Sprintf("toDateTime(%s) + toIntervalSecond(%d)", column, secs)
	if where != "" {
		rule += " WHERE " + where
	}
	return rule
}

// setTTL sets db.table's TTL to ttl, or removes it if ttl is empty;
// dropParts drops a part whole once all its rows have expired, rather than
// deleting rows as parts merge.
func setTTL(ctx context.Context, c Conn, db, table, ttl string, dropParts bool) error {
	name := db + "." + table
	var stmt string
	if ttl == "" {
		has, err := hasTTL(ctx, c, db, table)
		if err != nil {
			return fmt.Errorf("reading the retention of %s: %w", name, err)
		}
		if !has {
			return nil
		}
		stmt = fmt.Sprintf("ALTER TABLE %s REMOVE TTL", name)
	} else {
		stmt = fmt.Sprintf("ALTER TABLE %s MODIFY TTL %s SETTINGS materialize_ttl_after_modify = 0", name, ttl)
	}
	if err := c.Exec(ctx, stmt, nil); err != nil {
		return fmt.Errorf("setting the retention of %s: %w", name, err)
	}
	if ttl == "" {
		return nil
	}
	stmt = fmt.Sprintf("ALTER TABLE %s RESET SETTING ttl_only_drop_parts", name)
	if dropParts {
		stmt = fmt.Sprintf("ALTER TABLE %s MODIFY SETTING ttl_only_drop_parts = 1", name)
	}
	if err := c.Exec(ctx, stmt, nil); err != nil {
		return fmt.Errorf("setting the retention of %s: %w", name, err)
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

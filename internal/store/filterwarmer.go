package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// FilterWarmer reads the skip indexes that searches read whole, once per
// part, soon after the merge that made it, so that the first search after a
// merge finds them decompressed in the engine's index cache
// (index_uncompressed_cache_size in engine.xml), which is process memory:
//   - the bloom filters of attribute values of each part of spans that merges
//     compress with ZSTD: an attribute search reads every filter in its
//     window, and in a ZSTD part that costs three times the CPU of an LZ4
//     one; 100 M spans have about 270 MB of them;
//   - the bloom filter of trace ids of each merged part of trace_summaries,
//     which every search reads to sum up its candidates: about 20 MB at 100 M
//     spans, whose files a machine short of memory may have paged out of its
//     page cache by the time of the next search, and that search then reads
//     them from disk.
type FilterWarmer struct {
	conn Conn
	db   string
	// Budget is how many bytes of decompressed filters a pass reads at
	// most, newest parts first: more would push the newest out of the
	// engine's cache. Parts past it are never read.
	Budget uint64
	seen   map[string]bool
}

// DefaultFilterBudget is half the index cache of engine.xml (1 GiB), the
// share its SLRU policy gives entries read once.
const DefaultFilterBudget = 512 << 20

// FilterWarmEvery is how often the collector's store runs a FilterWarmer:
// a search right after a merge reads the new part's filters itself for at
// most this long.
const FilterWarmEvery = 5 * time.Second

// filterPartsSQL lists the parts whose filters the warmer reads, newest
// first, with the decompressed size of their skip indexes: those of spans
// in ZSTD (merged parts of 16 MiB or more) and the merged ones of
// trace_summaries (an insert's part is merged within a minute or so, read
// meanwhile from the page cache it was written through).
const filterPartsSQL = `SELECT table, name, toUInt64(secondary_indices_uncompressed_bytes) AS filter_bytes
FROM system.parts
WHERE database = {db:String} AND active
  AND (table = 'spans' AND NOT startsWith(default_compression_codec, 'LZ4')
    OR table = 'trace_summaries' AND level > 0)
ORDER BY modification_time DESC, name DESC`

// warmFiltersSQL, by table, reads one part's filters and nothing else: no
// granule holds the value, so each is skipped by its filter. Were a row to
// hold it, its granule would be read too, no worse.
var warmFiltersSQL = map[string]string{
	"spans": `SELECT count() AS rows FROM ${db}.spans
WHERE _part = {part:String} AND attributes['tracesift.filter_warmer'] = 'never stored'`,
	"trace_summaries": `SELECT count() AS rows FROM ${db}.trace_summaries
WHERE _part = {part:String} AND trace_id = 'tracesift.filter_warmer: never stored'`,
}

// NewFilterWarmer returns a FilterWarmer of db's spans and trace_summaries
// with the default budget.
func NewFilterWarmer(conn Conn, db string) *FilterWarmer {
	return &FilterWarmer{conn: conn, db: db, Budget: DefaultFilterBudget, seen: map[string]bool{}}
}

// Warm reads the filters of the parts that it has not seen in an earlier
// pass, within the budget, a statement a part. It returns how many parts it
// read.
func (w *FilterWarmer) Warm(ctx context.Context) (int, error) {
	if !ValidDatabaseName(w.db) {
		return 0, fmt.Errorf("database name %q is not a plain identifier", w.db)
	}
	type part struct {
		Table       string `json:"table"`
		Name        string `json:"name"`
		FilterBytes uint64 `json:"filter_bytes"`
	}
	// A part is known by its table and name: two tables' parts may share a
	// name.
	key := func(p part) string { return p.Table + "/" + p.Name }
	var read []part
	active := map[string]bool{}
	var used uint64
	err := w.conn.Query(ctx, filterPartsSQL, Params{"db": w.db}, func(row []byte) error {
		var p part
		if err := json.Unmarshal(row, &p); err != nil {
			return err
		}
		if _, ok := warmFiltersSQL[p.Table]; !ok {
			return fmt.Errorf("part %s of table %q, which has no filters to read", p.Name, p.Table)
		}
		active[key(p)] = true
		if w.seen[key(p)] {
			return nil
		}
		if used+p.FilterBytes <= w.Budget {
			used += p.FilterBytes
			read = append(read, p)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("listing the parts to warm: %w", err)
	}
	for i, p := range read {
		warm := strings.ReplaceAll(warmFiltersSQL[p.Table], "${db}", w.db)
		err := w.conn.Query(ctx, warm, Params{"part": p.Name}, func([]byte) error { return nil })
		if err != nil {
			// The parts not read yet are read by the next pass.
			for _, p := range read[i:] {
				delete(active, key(p))
			}
			w.seen = active
			return i, fmt.Errorf("reading the filters of part %s of %s: %w", p.Name, p.Table, err)
		}
	}
	// Parts merged away are forgotten; those past the budget are not read
	// later either (newer parts come first).
	w.seen = active
	return len(read), nil
}

// Run calls Warm every interval until ctx ends, and report after each pass
// with what it returned.
func (w *FilterWarmer) Run(ctx context.Context, every time.Duration, report func(parts int, err error)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := w.Warm(ctx)
		if ctx.Err() != nil {
			return
		}
		report(n, err)
	}
}

package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// FilterWarmer reads the bloom filters of attribute values of each part of
// spans that merges compress with ZSTD, once, soon after the merge, so that
// the first attribute search after a merge does not decompress them itself:
// a search reads every filter in its window, and in a ZSTD part that costs
// three times the CPU of an LZ4 one. The engine keeps what it read
// decompressed in its index cache (index_uncompressed_cache_size in
// engine.xml); 100 M spans have about 270 MB of these filters.
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

// filterPartsSQL lists the parts of spans whose filters a search pays to
// decompress, those of ZSTD (merged parts of 16 MiB or more), newest first,
// with the decompressed size of their skip indexes.
const filterPartsSQL = `SELECT name, toUInt64(secondary_indices_uncompressed_bytes) AS filter_bytes
FROM system.parts
WHERE database = {db:String} AND table = 'spans' AND active AND NOT startsWith(default_compression_codec, 'LZ4')
ORDER BY modification_time DESC, name DESC`

// warmFiltersSQL reads one part's filters of attribute values and nothing
// else: no granule holds the value, so each is skipped by its filter. Were a
// span to carry this key and value, its granule would be read too, no worse.
const warmFiltersSQL = `SELECT count() AS rows FROM ${db}.spans
WHERE _part = {part:String} AND attributes['tracesift.filter_warmer'] = 'never stored'`

// NewFilterWarmer returns a FilterWarmer of db's spans with the default
// budget.
func NewFilterWarmer(conn Conn, db string) *FilterWarmer {
	return &FilterWarmer{conn: conn, db: db, Budget: DefaultFilterBudget, seen: map[string]bool{}}
}

// Warm reads the filters of the ZSTD parts of spans that it has not seen
// in an earlier pass, within the budget, a statement a part (a few a minute
// at 100 M spans an hour). It returns how many parts it read.
func (w *FilterWarmer) Warm(ctx context.Context) (int, error) {
	if !ValidDatabaseName(w.db) {
		return 0, fmt.Errorf("database name %q is not a plain identifier", w.db)
	}
	var read []string
	active := map[string]bool{}
	var used uint64
	err := w.conn.Query(ctx, filterPartsSQL, Params{"db": w.db}, func(row []byte) error {
		var p struct {
			Name        string `json:"name"`
			FilterBytes uint64 `json:"filter_bytes"`
		}
		if err := json.Unmarshal(row, &p); err != nil {
			return err
		}
		active[p.Name] = true
		if w.seen[p.Name] {
			return nil
		}
		if used+p.FilterBytes <= w.Budget {
			used += p.FilterBytes
			read = append(read, p.Name)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("listing the parts of spans: %w", err)
	}
	warm := strings.ReplaceAll(warmFiltersSQL, "${db}", w.db)
	for i, part := range read {
		err := w.conn.Query(ctx, warm, Params{"part": part}, func([]byte) error { return nil })
		if err != nil {
			// The parts not read yet are read by the next pass.
			for _, p := range read[i:] {
				delete(active, p)
			}
			w.seen = active
			return i, fmt.Errorf("reading the filters of part %s of spans: %w", part, err)
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

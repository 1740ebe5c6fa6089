package embedded

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/store"
)

// TestFilterWarmer: the warmer reads the attribute filters of a merged (ZSTD)
// part of spans once, and an attribute search then finds them all in the
// engine's index cache; the same search over a part not warmed does not.
func TestFilterWarmer(t *testing.T) {
	ctx := context.Background()
	// search reads db's filters for a value no span has, as an attribute
	// search does, and returns the cache misses it had.
	search := func(db string) int64 {
		before := uncompressedCacheMisses(t)
		rows := queryRows(t, "SELECT count() AS n FROM "+db+".spans WHERE attributes['blob'] = 'absent'", nil)
		require.Len(t, rows, 1)
		assert.Equal(t, int64(0), asInt64(t, rows[0]["n"]))
		return uncompressedCacheMisses(t) - before
	}
	w := mergedAfterWarming(t, "ts_filter_warmer", "spans", insertBlobParts)
	mergedAfterWarming(t, "ts_filter_warmer_cold", "spans", insertBlobParts)

	n, err := w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the merged part")
	n, err = w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "read once")

	assert.Equal(t, int64(0), search("ts_filter_warmer"), "cache misses over the warmed part")
	assert.Positive(t, search("ts_filter_warmer_cold"), "cache misses over the part not warmed")
}

// TestFilterWarmerSummaries: the warmer reads the filter of trace ids of a
// merged part of trace_summaries, not those of the parts inserts write, and
// a search, which reads that filter to sum up its candidates, then finds it
// in the engine's index cache; over a part not warmed it does not.
func TestFilterWarmerSummaries(t *testing.T) {
	ctx := context.Background()
	search := func(db string) int64 {
		before := uncompressedCacheMisses(t)
		got, err := store.NewReader(conn, db, store.ReaderConfig{}).SearchTraces(ctx, store.TracesFilter{
			Start: fixtureBase.Add(-time.Hour).UnixNano(), End: fixtureBase.Add(time.Hour).UnixNano(), Limit: 20})
		require.NoError(t, err)
		assert.Len(t, got, 20)
		return uncompressedCacheMisses(t) - before
	}
	insert := func(t *testing.T, db string) {
		for range 2 {
			require.NoError(t, conn.Exec(ctx, "INSERT INTO "+db+".trace_summaries (start, trace_id, duration_ns, "+
				"root_service, root_name, span_count, error_count, services) SELECT "+fixtureBaseSQL+
				" - toIntervalMillisecond(number), "+
				"hex(randomString(16)), 1000, 'svc', 'op', 1, 0, ['svc'] FROM numbers(20000)", nil))
		}
	}
	w := mergedAfterWarming(t, "ts_filter_warmer_summaries", "trace_summaries", insert)
	mergedAfterWarming(t, "ts_filter_warmer_summaries_cold", "trace_summaries", insert)

	n, err := w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the merged part")
	assert.Equal(t, int64(0), search("ts_filter_warmer_summaries"), "cache misses over the warmed part")
	assert.Positive(t, search("ts_filter_warmer_summaries_cold"), "cache misses over the part not warmed")
}

// mergedAfterWarming makes db anew with the parts insert writes, checks that
// a warmer reads none of them (inserts' parts are not warmed), then merges
// table into one part, and returns the warmer, which has not read that part.
func mergedAfterWarming(t *testing.T, db, table string, insert func(*testing.T, string)) *store.FilterWarmer {
	t.Helper()
	ctx := context.Background()
	freshDatabase(t, db)
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	insert(t, db)
	w := store.NewFilterWarmer(conn, db)
	n, err := w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "the parts inserts write are not read")
	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+db+"."+table+" FINAL", nil))
	return w
}

// uncompressedCacheMisses is the engine's count of reads of skip indexes
// (and of columns read with use_uncompressed_cache) not found decompressed
// in its caches.
func uncompressedCacheMisses(t *testing.T) int64 {
	t.Helper()
	var n int64
	for _, row := range queryRows(t, "SELECT toInt64(sum(value)) AS n FROM system.events WHERE event = 'UncompressedCacheMisses'", nil) {
		n = asInt64(t, row["n"])
	}
	return n
}

// TestFilterWarmerBudget: parts past the budget, oldest, are not read.
func TestFilterWarmerBudget(t *testing.T) {
	ctx := context.Background()
	const db = "ts_filter_warmer_budget"
	freshDatabase(t, db)
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewFilterWarmer(conn, db)
	w.Budget = 1 // less than any part's filters
	insertBlobParts(t, db)
	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+db+".spans FINAL", nil))
	n, err := w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n)
}

// asInt64 is a number of a queryRows row.
func asInt64(t *testing.T, v any) int64 {
	t.Helper()
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	require.NoError(t, err, "%v", v)
	return n
}

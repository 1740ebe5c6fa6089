package embedded

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/store"
)

// TestFilterWarmer: the warmer reads the attribute filters of a merged (ZSTD)
// part of spans once, and an attribute search then finds them all in the
// engine's index cache; the same search over a part not warmed does not.
func TestFilterWarmer(t *testing.T) {
	ctx := context.Background()
	misses := func() int64 {
		var n int64
		for _, row := range queryRows(t, "SELECT toInt64(sum(value)) AS n FROM system.events WHERE event = 'UncompressedCacheMisses'", nil) {
			n = asInt64(t, row["n"])
		}
		return n
	}
	// search reads db's filters for a value no span has, as an attribute
	// search does, and returns the cache misses it had.
	search := func(db string) int64 {
		before := misses()
		rows := queryRows(t, "SELECT count() AS n FROM "+db+".spans WHERE attributes['blob'] = 'absent'", nil)
		require.Len(t, rows, 1)
		assert.Equal(t, int64(0), asInt64(t, rows[0]["n"]))
		return misses() - before
	}
	warmers := map[string]*store.FilterWarmer{}
	for _, db := range []string{"ts_filter_warmer", "ts_filter_warmer_cold"} {
		freshDatabase(t, db)
		require.NoError(t, store.ApplySchema(ctx, conn, db))
		insertBlobParts(t, db)
		w := store.NewFilterWarmer(conn, db)
		n, err := w.Warm(ctx)
		require.NoError(t, err)
		assert.Equal(t, 0, n, "LZ4 parts as inserted are not read")
		require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+db+".spans FINAL", nil))
		warmers[db] = w
	}

	n, err := warmers["ts_filter_warmer"].Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the merged part")
	n, err = warmers["ts_filter_warmer"].Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "read once")

	assert.Equal(t, int64(0), search("ts_filter_warmer"), "cache misses over the warmed part")
	assert.Positive(t, search("ts_filter_warmer_cold"), "cache misses over the part not warmed")
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

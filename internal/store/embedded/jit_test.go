package embedded

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tenant"
)

// compiled is how many expressions the engine has compiled to machine code
// since it started.
func compiled(t *testing.T) uint64 {
	t.Helper()
	return count(t, "SELECT toUInt64(sum(value)) AS n FROM system.events WHERE event = 'CompileFunction'", nil)
}

// The engine compiles an expression once it has been used three times, in
// the statement that uses it next, which waits for it: the reader's
// statements, used again and again, never have it compile theirs.
func TestReaderStatementsAreNotCompiled(t *testing.T) {
	ctx := context.Background()
	const db = "ts_no_jit"
	shopStore(t, db, 0x71, tenant.Default, true)

	// The count moves for a statement without the reader's settings.
	before := compiled(t)
	q := fmt.Sprintf("SELECT sum(number * %d + 1) AS n FROM numbers(1000)", 1000+time.Now().UnixNano()%1_000_000)
	for range 5 {
		require.NoError(t, conn.Query(ctx, q, nil, func([]byte) error { return nil }))
	}
	require.Greater(t, compiled(t), before, "an expression used five times is compiled")

	r := store.NewReader(conn, db, store.ReaderConfig{})
	start, end := getTraceBase.Add(-time.Minute).UnixNano(), getTraceBase.Add(time.Minute).UnixNano()
	before = compiled(t)
	for range 6 {
		tr, err := r.GetTrace(ctx, traceID(0x71).String())
		require.NoError(t, err)
		require.Len(t, tr.Spans, 2)
		found, err := r.SearchTraces(ctx, store.TracesFilter{Service: "shop", Start: start, End: end, Limit: 20})
		require.NoError(t, err)
		require.Len(t, found, 1)
		_, err = r.GetFindingSummaries(ctx, store.FindingsFilter{Start: start, End: end, Limit: 10})
		require.NoError(t, err)
		_, err = r.RED(ctx, store.REDFilter{Service: "shop", Start: start, End: end, Step: int64(time.Minute)})
		require.NoError(t, err)
	}
	r.Wait()
	assert.Equal(t, before, compiled(t), "expressions compiled for the reader's statements")
}

package embedded

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/query"
	"github.com/tracesift/tracesift/internal/store"
)

// The reader's limits reach the engine: a trace with more spans than
// MaxSpans comes back as its earliest spans, marked truncated; a read over
// its memory bound fails as a query-limit error, which the API answers 400
// (not 500: the client asked for too much).
func TestReaderLimits(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	base := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "limits")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	for i := 5; i >= 1; i-- { // stored latest first: the read orders them
		s := spans.AppendEmpty()
		s.SetTraceID(traceID(0xe1))
		s.SetSpanID(spanID(byte(i)))
		if i > 1 {
			s.SetParentSpanID(spanID(1))
		}
		s.SetName("op")
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i+1) * time.Millisecond)))
	}
	_, err := store.NewWriter(conn, db).WriteTraces(ctx, td)
	require.NoError(t, err)
	id := traceID(0xe1).String()

	spanIDs := func(tr *model.Trace) []string {
		var ids []string
		for _, s := range tr.Spans {
			ids = append(ids, s.SpanID)
		}
		return ids
	}
	// Past the cap the engine sorts (a second read); within it, the reader.
	got, err := store.NewReader(conn, db, store.ReaderConfig{MaxSpans: 3}).GetTrace(ctx, id)
	require.NoError(t, err)
	assert.True(t, got.Truncated)
	assert.Equal(t, []string{spanID(1).String(), spanID(2).String(), spanID(3).String()}, spanIDs(got), "the earliest spans")

	got, err = store.NewReader(conn, db, store.ReaderConfig{MaxSpans: 5}).GetTrace(ctx, id)
	require.NoError(t, err)
	assert.False(t, got.Truncated, "exactly MaxSpans spans: whole")
	assert.Equal(t, []string{spanID(1).String(), spanID(2).String(), spanID(3).String(), spanID(4).String(),
		spanID(5).String()}, spanIDs(got), "earliest first")

	tight := store.NewReader(conn, db, store.ReaderConfig{MaxQueryMemory: 1})
	_, err = tight.GetTrace(ctx, id)
	require.Error(t, err)
	assert.True(t, store.IsQueryLimit(err), "%v", err)

	// The searches' windows hold the trace: a read of nothing may stay
	// under any bound.
	h := query.NewHandler(tight, zap.NewNop())
	v1 := url.Values{"service": {"limits"}, "start": {base.Add(-time.Hour).Format(time.RFC3339)},
		"end": {base.Add(time.Hour).Format(time.RFC3339)}}
	jaeger := url.Values{"service": {"limits"}, "start": {strconv.FormatInt(base.Add(-time.Hour).UnixMicro(), 10)},
		"end": {strconv.FormatInt(base.Add(time.Hour).UnixMicro(), 10)}}
	for path, params := range map[string]url.Values{"/api/v1/traces/" + id: nil, "/api/v1/traces": v1, "/api/traces": jaeger} {
		code, body := apiGet(t, h, path, params)
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", path, body)
		assert.Contains(t, string(body), "narrow the window", path)
	}
}

// The engine stops a statement at max_execution_time, given in fractions of
// a second as the reader writes it, with an error IsQueryLimit knows.
func TestQueryTimeLimit(t *testing.T) {
	start := time.Now()
	err := conn.Query(context.Background(), "SELECT count() FROM numbers(1000000000000) SETTINGS max_execution_time = 0.5",
		nil, func([]byte) error { return nil })
	require.Error(t, err)
	assert.True(t, store.IsQueryLimit(err), "%v", err)
	assert.Less(t, time.Since(start), 30*time.Second, "stopped near its limit, not run to the end")
}

// A statement that fails after a part of it output rows leaves none of them
// to the next statement.
func TestFailedStatementLeavesNoRows(t *testing.T) {
	ctx := context.Background()
	err := conn.Query(ctx, "SELECT count() AS n FROM numbers(1000000000000) UNION ALL SELECT 1 SETTINGS max_execution_time = 0.3",
		nil, func([]byte) error { return nil })
	require.Error(t, err)
	var rows []string
	require.NoError(t, conn.Query(ctx, "SELECT 42 AS b", nil, func(b []byte) error {
		rows = append(rows, string(b))
		return nil
	}))
	assert.Equal(t, []string{`{"b":42}`}, rows)
}

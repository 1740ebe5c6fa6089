package query

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
)

func TestGetFindings(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	get := func(path string) *httptest.ResponseRecorder { return getJSON(t, h, path) }

	before := time.Now()
	rec := get("/api/v1/findings")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"maxValue":27`)
	assert.Contains(t, rec.Body.String(), `"exampleTraceIds":["4bf92f3577b34da6a3ce929d0e0e4736"]`)
	assert.Equal(t, time.Hour.Nanoseconds(), lastFilter.End-lastFilter.Start, "the last hour by default")
	assert.GreaterOrEqual(t, lastFilter.End, before.UnixNano())
	assert.Equal(t, 100, lastFilter.Limit)

	rec = get("/api/v1/findings?kind=clock_skew&service=pay%27%20OR%201=1&start=2026-11-30T10:00:00Z&end=1796036400000000000&limit=5")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, store.FindingsFilter{Kind: "clock_skew", Service: "pay' OR 1=1", Limit: 5,
		Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixNano(), End: 1796036400000000000}, lastFilter,
		"values reach the store as parameters, never as SQL")

	for path, want := range map[string]string{
		"/api/v1/findings?limit=0":                          "`limit`",
		"/api/v1/findings?limit=5000":                       "`limit`",
		"/api/v1/findings?start=yesterday":                  "`start`",
		"/api/v1/findings?end=-5":                           "`end`",
		"/api/v1/findings?start=2000&end=1000":              "`start` is after `end`",
		"/api/v1/findings?kind=" + strings.Repeat("k", 300): "at most",
	} {
		rec := get(path)
		assert.Equal(t, http.StatusBadRequest, rec.Code, path)
		assert.Contains(t, rec.Body.String(), want, path)
	}
	rec = get("/api/v1/findings?kind=fail")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
}

// A server span on a host whose clock is 300 ms ahead is shown inside the
// client span that called it, and the logs follow the adjusted order; the
// raw times stay as stored.
func TestTraceTimesAdjustedForClockSkew(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	const ms = uint64(time.Millisecond)
	base := uint64(1796010663000000000)
	skew := 300 * ms
	reader := fakeReader{id: {
		TraceID: id,
		Spans: []model.Span{
			{SpanID: "0000000000000001", Name: "GET /cart", Kind: model.KindServer, Service: "web", Host: "web-1",
				StartUnixNano: base, EndUnixNano: base + 100*ms},
			{SpanID: "0000000000000002", ParentSpanID: "0000000000000001", Name: "SELECT", Kind: model.KindClient, Service: "web",
				Host: "web-1", StartUnixNano: base + 10*ms, EndUnixNano: base + 90*ms},
			{SpanID: "0000000000000003", ParentSpanID: "0000000000000002", Name: "SELECT", Kind: model.KindServer, Service: "db",
				Host: "db-1", StartUnixNano: base + 20*ms + skew, EndUnixNano: base + 80*ms + skew},
		},
		Logs: []model.Log{
			{Body: "query done", Host: "db-1", TimeUnixNano: base + 70*ms + skew},
			{Body: "rendering", Host: "web-1", TimeUnixNano: base + 95*ms},
		},
	}}
	rec := httptest.NewRecorder()
	NewHandler(reader, zap.NewNop()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/traces/"+id, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var got Trace
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	db := got.Spans[2]
	assert.Equal(t, base+20*ms+skew, db.StartTimeUnixNano, "raw time kept")
	assert.Equal(t, base+20*ms, db.AdjustedStartTimeUnixNano)
	assert.Equal(t, base+80*ms, db.AdjustedEndTimeUnixNano)
	assert.Equal(t, base, got.Spans[0].AdjustedStartTimeUnixNano, "the root's host is the reference")
	require.Len(t, got.Logs, 2)
	assert.Equal(t, "query done", got.Logs[0].Body, "ordered by adjusted time")
	assert.Equal(t, base+70*ms, got.Logs[0].AdjustedTimeUnixNano)
	assert.Equal(t, base+70*ms+skew, got.Logs[0].TimeUnixNano)
	assert.Equal(t, map[string]int64{"db-1": int64(skew)}, got.ClockOffsets, "the offsets used are in the response")

	// Offsets stored with the trace (the estimate over many traces) win
	// over the trace's own calls.
	reader[id].ClockOffsets = map[string]int64{"db-1": int64(250 * ms)}
	rec = httptest.NewRecorder()
	NewHandler(reader, zap.NewNop()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/traces/"+id, nil))
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, base+70*ms, got.Spans[2].AdjustedStartTimeUnixNano)
	assert.Equal(t, map[string]int64{"db-1": int64(250 * ms)}, got.ClockOffsets)
}

// A pool that ran dry shows in the trace's logs only: the trace read gets a
// pool_exhausted finding for that service; a service whose spans already
// say so gets no second one.
func TestPoolExhaustedFromLogs(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	reader := fakeReader{id: {
		TraceID: id,
		Spans:   []model.Span{{TraceID: id, SpanID: "0000000000000001", Service: "orders", Name: "POST /orders"}},
		Logs: []model.Log{
			{Service: "orders", SpanID: "0000000000000001", Body: "HikariPool-1 - Connection is not available, request timed out after 30000ms."},
			{Service: "orders", SpanID: "0000000000000001", Body: "HikariPool-1 - Connection is not available, request timed out after 30001ms."},
			{Service: "orders", Body: "order 42 saved"},
			{Service: "notify", Body: "java.util.concurrent.RejectedExecutionException: Task rejected"},
		},
		Findings: []model.Finding{{Kind: "pool_exhausted", Service: "notify", SpanIDs: []string{}, Summary: "from spans"}},
	}}
	rec := httptest.NewRecorder()
	NewHandler(reader, zap.NewNop()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/traces/"+id, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var got Trace
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	require.Len(t, got.Findings, 2)
	f := got.Findings[1]
	assert.Equal(t, "pool_exhausted", f.Kind)
	assert.Equal(t, "orders", f.Service)
	assert.Equal(t, 2.0, f.Value)
	assert.Equal(t, []string{"0000000000000001"}, f.SpanIDs)
	assert.Contains(t, f.Summary, "orders: a pool ran dry, as its log says: HikariPool-1 - Connection is not available")
}

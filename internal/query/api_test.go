package query

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
)

type fakeReader map[string]*model.Trace

// lastFilter is what the last GetFindingSummaries call was given, and
// lastLogs the last SearchLogs.
var (
	lastFilter store.FindingsFilter
	lastLogs   store.LogsFilter
)

var lastTraces store.TracesFilter

func (f fakeReader) SearchTraces(_ context.Context, tf store.TracesFilter) ([]model.TraceSummary, error) {
	lastTraces = tf
	if tf.Service == "fail" {
		return nil, errors.New("connection refused")
	}
	return []model.TraceSummary{{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", RootService: "shop", RootName: "GET /cart",
		StartUnixNano: 1796010663450975897, DurationNano: 5000000, SpanCount: 3, ErrorCount: 1,
		Services: []string{"shop"}}}, nil
}

func (f fakeReader) Services(context.Context, int64, int64) ([]string, error) {
	return []string{"shop", "shop-db"}, nil
}

func (f fakeReader) Operations(_ context.Context, service string, _, _ int64) ([]string, error) {
	if service == "fail" {
		return nil, errors.New("connection refused")
	}
	return []string{"GET /cart " + service}, nil
}

func (f fakeReader) SearchLogs(_ context.Context, lf store.LogsFilter) ([]model.LogMatch, error) {
	lastLogs = lf
	if lf.Service == "fail" {
		return nil, errors.New("connection refused")
	}
	return []model.LogMatch{{Log: model.Log{Body: "card declined", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		Attributes: map[string]string{}, Resource: map[string]string{}}, Kept: true}}, nil
}

func (f fakeReader) GetFindingSummaries(_ context.Context, ff store.FindingsFilter) ([]model.FindingSummary, error) {
	lastFilter = ff
	if ff.Kind == "fail" {
		return nil, errors.New("connection refused")
	}
	return []model.FindingSummary{{Kind: "retry_fanout", Service: "checkout", Subject: "checkout → payments POST /charge",
		Count: 3, Traces: 3, AvgValue: 9, P50Value: 9, MaxValue: 27, ExampleTraceIDs: []string{"4bf92f3577b34da6a3ce929d0e0e4736"}}}, nil
}

func (f fakeReader) GetTrace(_ context.Context, id string) (*model.Trace, error) {
	if id == "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee" {
		return nil, errors.New("connection refused")
	}
	if t, ok := f[id]; ok {
		return t, nil
	}
	return nil, store.ErrNotFound
}

func TestGetTrace(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	reader := fakeReader{id: {
		TraceID: id,
		Spans: []model.Span{{TraceID: id, SpanID: "00f067aa0ba902b7", StartUnixNano: 1796010663450975897,
			EndUnixNano: 1796010663455975897, StatusCode: model.StatusError, Attributes: map[string]string{"k": "v"}}},
	}}
	h := NewHandler(reader, zap.NewNop())
	span := "/api/v1/traces/" + id + "/spans/"
	tests := []struct {
		path     string
		wantCode int
		wantBody string
	}{
		{"/api/v1/traces/" + id, http.StatusOK, `"startTimeUnixNano":"1796010663450975897"`},
		{"/api/v1/traces/" + strings.ToUpper(id), http.StatusBadRequest, "use lowercase hex"},
		{"/api/v1/traces/xyz", http.StatusBadRequest, "malformed trace id"},
		{"/api/v1/traces/" + strings.Repeat("0", 32), http.StatusBadRequest, "malformed trace id"},
		{"/api/v1/traces/%27%20OR%201=1", http.StatusBadRequest, "malformed trace id"},
		{"/api/v1/traces/0123456789abcdef0123456789abcdef", http.StatusNotFound, "is not stored"},
		{"/api/v1/traces/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", http.StatusInternalServerError, "see the server log"},
		{"/api/v1/traces/" + id + "?brief=yes", http.StatusBadRequest, "`brief`: want true or false"},
		{span + "00f067aa0ba902b7", http.StatusOK, `"attributes":{"k":"v"}`},
		{span + "00f067aa0ba902b8", http.StatusNotFound, "has no span 00f067aa0ba902b8"},
		{"/api/v1/traces/0123456789abcdef0123456789abcdef/spans/00f067aa0ba902b7", http.StatusNotFound, "is not stored"},
		{"/api/v1/nothing", http.StatusNotFound, "no such endpoint"},
		{"/health", http.StatusOK, `"ok"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
			assert.Equal(t, tt.wantCode, rec.Code)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			assert.Contains(t, rec.Body.String(), tt.wantBody)
			assert.True(t, json.Valid(rec.Body.Bytes()))
		})
	}
}

func TestGetTraceShape(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	h := NewHandler(fakeReader{id: {TraceID: id, Spans: []model.Span{{TraceID: id}}}}, zap.NewNop())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/traces/"+id, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	// Lists and maps are empty, never null, though the model's are nil.
	for _, k := range []string{"traceId", "spans", "logs", "findings", "clockOffsets"} {
		assert.NotNil(t, body[k], k)
	}
	span := body["spans"].([]any)[0].(map[string]any)
	for _, k := range []string{"traceId", "spanId", "parentSpanId", "name", "kind", "service", "host",
		"startTimeUnixNano", "endTimeUnixNano", "adjustedStartTimeUnixNano", "adjustedEndTimeUnixNano", "durationNano",
		"status", "attributes", "resource", "events", "links"} {
		assert.NotNil(t, span[k], k)
	}
	assert.Equal(t, "unspecified", span["kind"])
	assert.Equal(t, map[string]any{"code": "UNSET", "message": ""}, span["status"])

	// Brief spans: what a waterfall draws, without the details.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/traces/"+id+"?brief=true", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	brief := body["spans"].([]any)[0].(map[string]any)
	assert.ElementsMatch(t, []string{"spanId", "parentSpanId", "name", "kind", "service", "host", "startTimeUnixNano",
		"endTimeUnixNano", "adjustedStartTimeUnixNano", "adjustedEndTimeUnixNano", "durationNano", "status"},
		slices.Collect(maps.Keys(brief)))
	for k, v := range brief {
		assert.Equal(t, span[k], v, k)
	}
}

func TestPostIsRejected(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/traces/4bf92f3577b34da6a3ce929d0e0e4736", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

// getJSON serves GET path and checks that the answer is JSON.
func getJSON(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	require.True(t, json.Valid(rec.Body.Bytes()), rec.Body.String())
	return rec
}

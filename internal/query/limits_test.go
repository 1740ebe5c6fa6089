package query

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
)

// heldReader is a fakeReader whose service lists wait for release, so that
// a test can hold the API's only slot.
type heldReader struct {
	fakeReader
	entered chan struct{}
	release chan struct{}
	calls   atomic.Int32
}

func (h *heldReader) Services(ctx context.Context, start, end int64) ([]string, error) {
	h.calls.Add(1)
	h.entered <- struct{}{}
	<-h.release
	return h.fakeReader.Services(ctx, start, end)
}

func TestConcurrentQueriesAreBounded(t *testing.T) {
	r := &heldReader{fakeReader: fakeReader{}, entered: make(chan struct{}, 4), release: make(chan struct{})}
	h := NewHandler(r, zap.NewNop(), WithLimits(Limits{MaxConcurrent: 1, QueueWait: 50 * time.Millisecond}))

	first := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/services", nil))
		first <- rec.Code
	}()
	<-r.entered // the only slot is taken

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/services", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Contains(t, rec.Body.String(), "too many queries in flight")

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/services", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "the Jaeger API shares the bound")
	var jr struct {
		Errors []struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		} `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &jr))
	require.Len(t, jr.Errors, 1, "in Jaeger's envelope")
	assert.Equal(t, http.StatusServiceUnavailable, jr.Errors[0].Code)

	// A client that gives up while waiting runs no query.
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/services", nil).WithContext(ctx))
	}()
	cancel()
	<-gone

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	assert.Equal(t, http.StatusOK, rec.Code, "health is not a query")

	close(r.release)
	assert.Equal(t, http.StatusOK, <-first)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/services", nil))
	assert.Equal(t, http.StatusOK, rec.Code, "the slot is free again")
	assert.EqualValues(t, 2, r.calls.Load(), "the refused and the abandoned requests never reached the store")
}

// Queries that would scan everything are refused before they run: an empty
// attribute value (which matches every span that lacks the key) and a
// window past Limits.MaxWindow.
func TestUnboundedQueriesAreRefused(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	tags, _ := json.Marshal(map[string]string{"http.route": ""})
	for _, c := range []struct {
		path   string
		params url.Values
		want   string
	}{
		{"/api/v1/traces", url.Values{"attr.http.route": {""}}, "must be 1 to 256 bytes"},
		{"/api/v1/logs", url.Values{"attr.thread": {""}}, "must be 1 to 256 bytes"},
		{"/api/traces", url.Values{"tags": {string(tags)}}, "an empty value would match every span"},
		{"/api/v1/traces", url.Values{"start": {"0"}}, "at most 31 days"},
		{"/api/v1/logs", url.Values{"start": {"0"}}, "at most 31 days"},
		{"/api/v1/findings", url.Values{"start": {"0"}}, "at most 31 days"},
		{"/api/v1/services", url.Values{"start": {"0"}}, "at most 31 days"},
		{"/api/traces", url.Values{"start": {"0"}}, "at most 31 days"},
		{"/api/v1/dependencies", url.Values{"start": {time.Now().Add(-10 * 24 * time.Hour).Format(time.RFC3339)}}, "at most 7 days"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path+"?"+c.params.Encode(), nil))
		assert.Equal(t, http.StatusBadRequest, rec.Code, "%s?%s", c.path, c.params.Encode())
		assert.Contains(t, rec.Body.String(), c.want, "%s?%s", c.path, c.params.Encode())
	}
	// 31 days exactly is allowed.
	end := time.Now()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/traces?"+url.Values{
		"start": {end.Add(-DefaultLimits.MaxWindow).Format(time.RFC3339Nano)}, "end": {end.Format(time.RFC3339Nano)}}.Encode(), nil))
	assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
}

// budgetReader answers searches at once and reads traces until the
// request's context ends, as the store does: no statement starts after it.
type budgetReader struct {
	fakeReader
	reads atomic.Int32
}

func (b *budgetReader) SearchTraces(_ context.Context, _ store.TracesFilter) ([]model.TraceSummary, error) {
	var out []model.TraceSummary
	for i := range 3 {
		out = append(out, model.TraceSummary{TraceID: strings.Repeat(string(rune('a'+i)), 32)})
	}
	return out, nil
}

func (b *budgetReader) GetTrace(ctx context.Context, id string) (*model.Trace, error) {
	if b.reads.Add(1) > 1 {
		<-ctx.Done() // the second read outlasts the request's time
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &model.Trace{TraceID: id, Spans: []model.Span{{TraceID: id, SpanID: "00f067aa0ba902b7", Name: "op"}}}, nil
}

// A request's store work is bounded by RequestTime: a read it cuts off is
// answered 400, and a Jaeger search answers the traces it read in time (the
// newest found), a shorter page.
func TestRequestTimeBoundsAReadsWork(t *testing.T) {
	r := &budgetReader{fakeReader: fakeReader{}}
	h := NewHandler(r, zap.NewNop(), WithLimits(Limits{RequestTime: 100 * time.Millisecond}))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/traces?service=shop", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var jr struct {
		Data []struct {
			TraceID string `json:"traceID"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &jr))
	require.Len(t, jr.Data, 1, "the trace read before the time ran out")
	assert.Equal(t, strings.Repeat("a", 32), jr.Data[0].TraceID)

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/traces/"+strings.Repeat("b", 32), nil))
	assert.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "narrow the window")
}

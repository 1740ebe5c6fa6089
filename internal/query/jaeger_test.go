package query

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
)

// lastDeps is the window of the last Dependencies call.
var lastDeps [2]int64

func (f fakeReader) Dependencies(_ context.Context, start, end int64) ([]model.Dependency, error) {
	lastDeps = [2]int64{start, end}
	if end == 1e6 { // endTs=1
		return nil, errors.New("connection refused")
	}
	return []model.Dependency{{Parent: "shop", Child: "shop-db", Calls: 42, Errors: 21, P99Nanos: 930e6}}, nil
}

// jaegerFixture is a trace across two hosts, db-1's clock 300 ms ahead of
// web-1's (the root's), with an event, a link, logs (one of a span, one of
// the trace only) and findings (one on a span, one on the trace).
func jaegerFixture() *model.Trace {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	t0 := uint64(1796010663000000000)
	ms := uint64(time.Millisecond)
	web := map[string]string{"service.name": "shop", "host.name": "web-1"}
	return &model.Trace{TraceID: id,
		Spans: []model.Span{
			{TraceID: id, SpanID: "00f067aa0ba902b7", Name: "GET /cart", Kind: model.KindServer, Service: "shop", Host: "web-1",
				StartUnixNano: t0, EndUnixNano: t0 + 50*ms, Attributes: map[string]string{"http.route": "/cart"}, Resource: web,
				ScopeName: "io.opentelemetry.tomcat", ScopeVersion: "2.1"},
			{TraceID: id, SpanID: "00f067aa0ba902b8", ParentSpanID: "00f067aa0ba902b7", Name: "SELECT cart", Kind: model.KindClient,
				Service: "shop", Host: "web-1", StartUnixNano: t0 + 10*ms, EndUnixNano: t0 + 40*ms, StatusCode: model.StatusError,
				StatusMessage: "timeout", Resource: web, TraceState: "vendor=1",
				Events: []model.Event{{Name: "exception", TimeUnixNano: t0 + 39*ms,
					Attributes: map[string]string{"exception.type": "java.net.SocketTimeoutException"}}}},
			{TraceID: id, SpanID: "00f067aa0ba902b9", ParentSpanID: "00f067aa0ba902b8", Name: "SELECT cart", Kind: model.KindServer,
				Service: "shop-db", Host: "db-1", StartUnixNano: t0 + 310*ms, EndUnixNano: t0 + 335*ms, StatusCode: model.StatusOK,
				Resource: map[string]string{"service.name": "shop-db", "host.name": "db-1"},
				Links:    []model.Link{{TraceID: "0000000000000000a3ce929d0e0e4736", SpanID: "00000000000000aa"}}},
		},
		Logs: []model.Log{
			{TimeUnixNano: t0 + 320*ms, Host: "db-1", TraceID: id, SpanID: "00f067aa0ba902b9", SeverityText: "WARN",
				Body: "slow query", Attributes: map[string]string{"thread": "main"}},
			{TimeUnixNano: t0 + 5*ms, Host: "web-1", TraceID: id, SeverityText: "INFO", Body: "cart requested"},
		},
		Findings: []model.Finding{
			{TraceID: id, Kind: "slowest_hop", SpanIDs: []string{"00f067aa0ba902b9"}, Summary: "shop-db SELECT cart took 25 ms"},
			{TraceID: id, Kind: "error_origin", Summary: "the error started in shop"},
		},
		ClockOffsets: map[string]int64{"db-1": int64(300 * time.Millisecond)},
	}
}

// The trace as Grafana's Jaeger data source reads it: Jaeger's JSON, times
// corrected for the skew, logs and findings on their spans.
func TestJaegerTrace(t *testing.T) {
	tr := jaegerFixture()
	h := NewHandler(fakeReader{tr.TraceID: tr}, zap.NewNop())
	rec := getJSON(t, h, "/api/traces/"+tr.TraceID+"?start=1000&end=2000") // Grafana's milliseconds: ignored
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"data": [{
  "traceID": "4bf92f3577b34da6a3ce929d0e0e4736",
  "processes": {
    "p1": {"serviceName": "shop", "tags": [{"key": "host.name", "type": "string", "value": "web-1"}]},
    "p2": {"serviceName": "shop-db", "tags": [{"key": "host.name", "type": "string", "value": "db-1"}]}
  },
  "warnings": null,
  "spans": [
    {"traceID": "4bf92f3577b34da6a3ce929d0e0e4736", "spanID": "00f067aa0ba902b7", "flags": 1, "operationName": "GET /cart",
     "references": [], "startTime": 1796010663000000, "duration": 50000, "processID": "p1",
     "tags": [{"key": "otel.scope.name", "type": "string", "value": "io.opentelemetry.tomcat"},
              {"key": "otel.scope.version", "type": "string", "value": "2.1"},
              {"key": "http.route", "type": "string", "value": "/cart"},
              {"key": "span.kind", "type": "string", "value": "server"}],
     "logs": [{"timestamp": 1796010663005000, "fields": [{"key": "event", "type": "string", "value": "log"},
              {"key": "level", "type": "string", "value": "INFO"}, {"key": "message", "type": "string", "value": "cart requested"}]}],
     "warnings": ["error_origin: the error started in shop"]},
    {"traceID": "4bf92f3577b34da6a3ce929d0e0e4736", "spanID": "00f067aa0ba902b8", "flags": 1, "operationName": "SELECT cart",
     "references": [{"refType": "CHILD_OF", "traceID": "4bf92f3577b34da6a3ce929d0e0e4736", "spanID": "00f067aa0ba902b7"}],
     "startTime": 1796010663010000, "duration": 30000, "processID": "p1",
     "tags": [{"key": "span.kind", "type": "string", "value": "client"},
              {"key": "otel.status_code", "type": "string", "value": "ERROR"},
              {"key": "error", "type": "bool", "value": true},
              {"key": "otel.status_description", "type": "string", "value": "timeout"},
              {"key": "w3c.tracestate", "type": "string", "value": "vendor=1"}],
     "logs": [{"timestamp": 1796010663039000, "fields": [{"key": "event", "type": "string", "value": "exception"},
              {"key": "exception.type", "type": "string", "value": "java.net.SocketTimeoutException"}]}],
     "warnings": null},
    {"traceID": "4bf92f3577b34da6a3ce929d0e0e4736", "spanID": "00f067aa0ba902b9", "flags": 1, "operationName": "SELECT cart",
     "references": [{"refType": "CHILD_OF", "traceID": "4bf92f3577b34da6a3ce929d0e0e4736", "spanID": "00f067aa0ba902b8"},
                    {"refType": "FOLLOWS_FROM", "traceID": "a3ce929d0e0e4736", "spanID": "00000000000000aa"}],
     "startTime": 1796010663010000, "duration": 25000, "processID": "p2",
     "tags": [{"key": "span.kind", "type": "string", "value": "server"},
              {"key": "otel.status_code", "type": "string", "value": "OK"}],
     "logs": [{"timestamp": 1796010663020000, "fields": [{"key": "event", "type": "string", "value": "log"},
              {"key": "level", "type": "string", "value": "WARN"}, {"key": "message", "type": "string", "value": "slow query"},
              {"key": "thread", "type": "string", "value": "main"}]}],
     "warnings": ["clock skew: db-1's clock is +300ms off the root's host; this span's times are corrected by -300ms",
                  "slowest_hop: shop-db SELECT cart took 25 ms"]}
  ]}],
 "total": 0, "limit": 0, "offset": 0, "errors": null}`, rec.Body.String())
}

func TestJaegerTraceErrors(t *testing.T) {
	tr := jaegerFixture()
	short := &model.Trace{TraceID: "0000000000000000a3ce929d0e0e4736", Spans: []model.Span{{SpanID: "00000000000000aa"}}}
	h := NewHandler(fakeReader{tr.TraceID: tr, short.TraceID: short}, zap.NewNop())
	for _, tc := range []struct {
		path     string
		code     int
		contains string
	}{
		{"/api/traces/A3CE929D0E0E4736", http.StatusOK, `"traceID":"a3ce929d0e0e4736"`}, // Jaeger's 64-bit form, any case
		{"/api/traces/" + strings.ToUpper(tr.TraceID), http.StatusOK, `"traceID":"` + tr.TraceID + `"`},
		{"/api/traces/0123456789abcdef0123456789abcdef", http.StatusNotFound,
			`{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":404,"msg":"trace not found"}]}`},
		{"/api/traces/xyz", http.StatusBadRequest, `"code":400,"msg":"malformed trace id`},
		{"/api/traces/" + strings.Repeat("a", 33), http.StatusBadRequest, "malformed trace id"},
		{"/api/traces/0", http.StatusBadRequest, "malformed trace id"},
		{"/api/traces/%27%20OR%201=1", http.StatusBadRequest, "malformed trace id"},
		{"/api/traces/eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", http.StatusInternalServerError, "see the server log"},
	} {
		rec := getJSON(t, h, tc.path)
		assert.Equal(t, tc.code, rec.Code, tc.path)
		assert.Contains(t, rec.Body.String(), tc.contains, tc.path)
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	}
}

func TestJaegerServicesAndOperations(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	rec := getJSON(t, h, "/api/services")
	assert.JSONEq(t, `{"data":["shop","shop-db"],"total":2,"limit":0,"offset":0,"errors":null}`, rec.Body.String())
	rec = getJSON(t, h, "/api/services/shop%2Fv2/operations")
	assert.JSONEq(t, `{"data":["GET /cart shop/v2"],"total":1,"limit":0,"offset":0,"errors":null}`, rec.Body.String())
	rec = getJSON(t, h, "/api/services/fail/operations")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.JSONEq(t, `{"data":null,"total":0,"limit":0,"offset":0,"errors":[{"code":500,"msg":"listing operations failed; see the server log"}]}`,
		rec.Body.String())
}

// Grafana's search: every parameter reaches the store's filter, and each
// result is a whole trace.
func TestJaegerSearch(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736" // what fakeReader.SearchTraces finds
	tr := jaegerFixture()
	h := NewHandler(fakeReader{id: tr}, zap.NewNop())
	rec := getJSON(t, h, `/api/traces?service=shop&operation=SELECT+cart&minDuration=1.5ms&maxDuration=2s&limit=7`+
		`&start=1796010600000000&end=1796010700000000&tags=`+
		`%7B%22error%22%3A%22true%22%2C%22http.status_code%22%3A%22500%22%2C%22k%27%20OR%201%3D1%22%3A%22v%27%22%7D&tag=db.system:postgresql`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, store.TracesFilter{Service: "shop", SpanName: "SELECT cart", MinDuration: 1500 * time.Microsecond,
		MaxDuration: 2 * time.Second, ErrorsOnly: true,
		Attributes: []store.AttributeFilter{{Key: "db.system", Value: "postgresql"}, {Key: "http.status_code", Value: "500"},
			{Key: "k' OR 1=1", Value: "v'"}},
		Start: 1796010600000000000, End: 1796010700000000000, Limit: 7}, lastTraces)
	assert.Contains(t, rec.Body.String(), `"spanID":"00f067aa0ba902b9"`)
	assert.Contains(t, rec.Body.String(), `"errors":null`)

	before := time.Now()
	getJSON(t, h, "/api/traces")
	assert.Equal(t, jaegerSearchLimit, lastTraces.Limit)
	assert.Empty(t, lastTraces.Service)
	assert.InDelta(t, float64(jaegerSearchRange), float64(lastTraces.End-lastTraces.Start), float64(time.Second))
	assert.GreaterOrEqual(t, lastTraces.End, before.UnixNano())

	// A trace found but gone when read is left out, not sent without spans.
	rec = getJSON(t, NewHandler(fakeReader{}, zap.NewNop()), "/api/traces?service=shop")
	assert.JSONEq(t, `{"data":[],"total":0,"limit":0,"offset":0,"errors":null}`, rec.Body.String())

	for q, msg := range map[string]string{
		"minDuration=100":                         "unable to parse param 'minDuration'",
		"maxDuration=-1s":                         "unable to parse param 'maxDuration'",
		"minDuration=2s&maxDuration=1s":           "'maxDuration' should be greater than 'minDuration'",
		"start=yesterday":                         "unable to parse param 'start'",
		"end=-5":                                  "unable to parse param 'end'",
		"start=2000&end=1000":                     "'start' is after 'end'",
		"limit=many":                              "unable to parse param 'limit'",
		"limit=100000":                            "unable to parse param 'limit'",
		"tag=nocolon":                             "malformed 'tag' parameter",
		"tags=%7B%22a%22%3A1%7D":                  "malformed 'tags' parameter",
		"tags=%7B%22error%22%3A%22false%22%7D":    "tag 'error': only",
		"tag=a:1&tag=b:2&tag=c:3&tag=d:4&tag=e:5": "at most 4 tags",
		"service=" + strings.Repeat("s", 300):     "'service' and 'operation' are at most 256 bytes",
	} {
		rec := getJSON(t, h, "/api/traces?"+q)
		assert.Equal(t, http.StatusBadRequest, rec.Code, q)
		assert.Contains(t, rec.Body.String(), `"code":400,"msg":"`+msg, q)
	}
	rec = getJSON(t, h, "/api/traces?service=fail")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
}

func TestJaegerDependencies(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	rec := getJSON(t, h, "/api/dependencies?endTs=1796010700000&lookback=3600000")
	assert.JSONEq(t, `{"data":[{"parent":"shop","child":"shop-db","callCount":42}],"total":1,"limit":0,"offset":0,"errors":null}`,
		rec.Body.String())
	assert.Equal(t, [2]int64{1796007100000000000, 1796010700000000000}, lastDeps)
	before := time.Now()
	getJSON(t, h, "/api/dependencies")
	assert.Equal(t, int64(jaegerDepsLookback), lastDeps[1]-lastDeps[0], "24 hours by default")
	assert.GreaterOrEqual(t, lastDeps[1], before.UnixMilli()*int64(time.Millisecond))
	for q, msg := range map[string]string{
		"endTs=now":           "unable to parse param 'endTs'",
		"lookback=-1":         "unable to parse param 'lookback'",
		"lookback=9999999999": "'lookback' is at most",
	} {
		rec := getJSON(t, h, "/api/dependencies?"+q)
		assert.Equal(t, http.StatusBadRequest, rec.Code, q)
		assert.Contains(t, rec.Body.String(), `"code":400,"msg":"`+msg, q)
	}
	rec = getJSON(t, h, "/api/dependencies?endTs=1&lookback=0")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
}

func TestGetDependencies(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	rec := getJSON(t, h, "/api/v1/dependencies?start=1796007100000000000&end=1796010700000000000")
	assert.JSONEq(t, `{"start":"1796007100000000000","end":"1796010700000000000","dependencies":[
		{"parent":"shop","child":"shop-db","calls":42,"errors":21,"errorRate":0.5,"p99Ms":930}]}`, rec.Body.String())
	assert.Equal(t, [2]int64{1796007100000000000, 1796010700000000000}, lastDeps)
	rec = getJSON(t, h, "/api/v1/dependencies?start=0&end=1796010700000000000")
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Contains(t, rec.Body.String(), "at most 7 days")
	rec = getJSON(t, h, "/api/v1/dependencies?start=x")
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	rec = getJSON(t, h, "/api/v1/dependencies?start=0&end=1000000")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
}

func (f fakeReader) ClockPairs(_ context.Context, start, end int64) ([]model.ClockPair, error) {
	if end == 1e6 {
		return nil, errors.New("connection refused")
	}
	return []model.ClockPair{
		{TimeUnixNano: 1796010660000000000, A: "db-1", B: "web-1", OffsetNanos: -300e6, Samples: 5},
		{TimeUnixNano: 1796010720000000000, A: "db-1", B: "web-1", OffsetNanos: -310e6, Samples: 9},
		{TimeUnixNano: 1796010660000000000, A: "mq-1", B: "web-1", OffsetNanos: 150e6, Samples: 5},
	}, nil
}

func TestGetClockSkew(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	rec := getJSON(t, h, "/api/v1/clock-skew?start=1796007100000000000&end=1796010800000000000")
	assert.JSONEq(t, `{"start":"1796007100000000000","end":"1796010800000000000","pairs":[
		{"hostA":"db-1","hostB":"web-1","points":[{"timeUnixNano":"1796010660000000000","offsetMs":-300,"samples":5},
			{"timeUnixNano":"1796010720000000000","offsetMs":-310,"samples":9}]},
		{"hostA":"mq-1","hostB":"web-1","points":[{"timeUnixNano":"1796010660000000000","offsetMs":150,"samples":5}]}]}`,
		rec.Body.String())
	for q, code := range map[string]int{"start=0&end=1796010700000000000": http.StatusBadRequest, "end=x": http.StatusBadRequest,
		"start=0&end=1000000": http.StatusInternalServerError} {
		assert.Equal(t, code, getJSON(t, h, "/api/v1/clock-skew?"+q).Code, q)
	}
}

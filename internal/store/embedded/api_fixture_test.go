package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/query"
	"github.com/tracesift/tracesift/internal/store"
)

// The query API against the real store: a small fixture written through
// store.Writer into chDB, read through the real store.Reader and the real
// HTTP handler, with the exact answers expected.

// fixtureBase is the start of the fixture's window; every trace but the old
// one starts in its first minute.
var fixtureBase = time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)

// fixtureBaseSQL is fixtureBase as a DateTime64(9) of the engine, for tests
// that insert rows by SQL: tables are partitioned by day, and rows stamped
// now() fall into two partitions, so two merged parts, near midnight.
var fixtureBaseSQL = fmt.Sprintf("fromUnixTimestamp64Nano(toInt64(%d))", fixtureBase.UnixNano())

// fixtureSpan is one span of a fixture trace, its times relative to
// fixtureBase. The first span of a trace is its root; the others are its
// children.
type fixtureSpan struct {
	service, name string
	start, dur    time.Duration
	err           bool
	attrs         map[string]any
	// late spans come in a batch of their own, after the others, as the
	// spans of one trace do when a service reports late.
	late bool
}

type fixtureTrace struct {
	id    byte
	spans []fixtureSpan
}

// fixtureTraces: 0x3b and 0x3c start at the same time, as do 0x34 and 0x35,
// in the other order of their ids than of their writes, for the stable
// order; 0x3c lasts exactly 200 ms and 0x3b exactly 1 s, for the inclusive
// bounds; 0x30 is two hours before the window.
var fixtureTraces = []fixtureTrace{
	{0x31, []fixtureSpan{
		{service: "shop-web", name: "GET /cart", dur: 50 * time.Millisecond},
		{service: "shop-db", name: "SELECT cart", start: 10 * time.Millisecond, dur: 20 * time.Millisecond,
			attrs: map[string]any{"db.system": "postgresql"}},
	}},
	{0x32, []fixtureSpan{
		{service: "shop-web", name: "POST /pay", start: time.Second, dur: 1500 * time.Millisecond},
		{service: "shop-pay", name: "charge", start: 1100 * time.Millisecond, dur: 1600 * time.Millisecond, err: true, late: true,
			attrs: map[string]any{"payment.provider": "acme", "db.system": "postgresql"}},
	}},
	{0x3c, []fixtureSpan{{service: "shop-web", name: "GET /cart", start: 2 * time.Second, dur: 200 * time.Millisecond}}},
	{0x3b, []fixtureSpan{{service: "shop-web", name: "GET /cart", start: 2 * time.Second, dur: time.Second, err: true,
		attrs: map[string]any{"http.route": "/cart", "http.response.status_code": 500}}}},
	{0x35, []fixtureSpan{{service: "shop-admin", name: "GET /report", start: 3 * time.Second, dur: 5 * time.Second}}},
	{0x34, []fixtureSpan{{service: "shop-web", name: "GET /cart", start: 3 * time.Second, dur: 10 * time.Millisecond,
		attrs: map[string]any{"http.route": "/cart"}}}},
	{0x37, []fixtureSpan{{service: "shop-web", name: "GET /it's", start: 59 * time.Second, dur: time.Millisecond}}},
	{0x30, []fixtureSpan{{service: "legacy", name: "GET /old", start: -2 * time.Hour, dur: time.Millisecond}}},
}

// fixtureLogs are the fixture's log lines: service, severity, body, trace
// (0: none) and time after fixtureBase.
var fixtureLogs = []struct {
	service, severity, body string
	trace                   byte
	at                      time.Duration
}{
	{"shop-web", "INFO", "cart rendered quickly", 0x31, 10 * time.Millisecond},
	{"shop-pay", "ERROR", "payment declined by acquirer", 0x32, 1200 * time.Millisecond},
	{"shop-db", "WARN", "slow query on carts", 0, 5 * time.Second},
}

// freshDatabase drops db, left by an earlier run in this process (-count).
// Not with SYNC: in chDB 26.5 `DROP DATABASE … SYNC` never returns.
func freshDatabase(t *testing.T, db string) {
	t.Helper()
	require.NoError(t, conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db, nil))
}

// fixtureSpans are the spans of traces that come late, or those that do
// not.
func fixtureSpans(t *testing.T, traces []fixtureTrace, late bool) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	for _, ft := range traces {
		for i, fs := range ft.spans {
			if fs.late != late {
				continue
			}
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", fs.service)
			rs.Resource().Attributes().PutStr("deployment.environment", "prod")
			s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			s.SetTraceID(traceID(ft.id))
			s.SetSpanID(spanID(byte(i + 1)))
			if i > 0 {
				s.SetParentSpanID(spanID(1))
			}
			s.SetName(fs.name)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(fixtureBase.Add(fs.start)))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(fixtureBase.Add(fs.start + fs.dur)))
			if fs.err {
				s.Status().SetCode(ptrace.StatusCodeError)
			}
			require.NoError(t, s.Attributes().FromRaw(fs.attrs))
		}
	}
	return td
}

// writeFixture creates db with the current schema and writes the fixture
// into it through store.Writer; it returns the API's handler over db.
func writeFixture(t *testing.T, db string) http.Handler {
	t.Helper()
	ctx := context.Background()
	freshDatabase(t, db)
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)

	for _, late := range []bool{false, true} {
		_, err := w.WriteTraces(ctx, fixtureSpans(t, fixtureTraces, late))
		require.NoError(t, err)
	}

	ld := plog.NewLogs()
	for _, fl := range fixtureLogs {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", fl.service)
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(fixtureBase.Add(fl.at)))
		lr.SetSeverityText(fl.severity)
		lr.Body().SetStr(fl.body)
		if fl.trace != 0 {
			lr.SetTraceID(traceID(fl.trace))
		}
	}
	_, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)

	at := func(id byte) uint64 { return uint64(fixtureBase.UnixNano()) + uint64(id-0x30)*uint64(time.Second) }
	require.NoError(t, w.WriteFindings(ctx, []model.Finding{
		{TraceID: traceID(0x32).String(), TimeUnixNano: at(0x32), Kind: "retry_fanout", Service: "shop-web",
			Subject: "shop-web → shop-pay charge", SpanIDs: []string{spanID(2).String()}, Value: 3, Summary: "3 attempts"},
		{TraceID: traceID(0x35).String(), TimeUnixNano: at(0x35), Kind: "slowest_hop", Service: "shop-admin",
			Subject: "shop-admin GET /report", SpanIDs: []string{spanID(1).String()}, Value: 5000, Summary: "5 s in the report"},
	}))
	require.NoError(t, w.WriteClockOffsets(ctx, []model.ClockOffset{
		{TraceID: traceID(0x32).String(), TimeUnixNano: at(0x32), Host: "pay-1", OffsetNanos: 3_000_000, Source: "estimate"},
	}))
	return query.NewHandler(store.NewReader(conn, db, store.ReaderConfig{}), zap.NewNop())
}

// apiGet asks h for path with the query params and returns the status and
// the body, which must be JSON whatever the status.
func apiGet(t *testing.T, h http.Handler, path string, params url.Values) (int, []byte) {
	t.Helper()
	target := path
	if len(params) > 0 {
		target += "?" + params.Encode()
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	require.True(t, json.Valid(rec.Body.Bytes()), "GET %s: not JSON: %s", target, rec.Body.String())
	return rec.Code, rec.Body.Bytes()
}

// decodeField decodes one field of a JSON object.
func decodeField(t *testing.T, body []byte, field string, into any) {
	t.Helper()
	var obj map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &obj), string(body))
	raw, ok := obj[field]
	require.True(t, ok, "no %q in %s", field, body)
	require.NoError(t, json.Unmarshal(raw, into), string(body))
}

// ids are the trace ids of the fixture traces named by their byte.
func fixtureIDs(bs ...byte) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, traceID(b).String())
	}
	return out
}

// ns is a time of the fixture as the API's Unix nanoseconds.
func fixtureNs(d time.Duration) string { return strconv.FormatInt(fixtureBase.Add(d).UnixNano(), 10) }

// window is the fixture's first minute, both ends given.
func fixtureWindow(kv ...string) url.Values {
	v := url.Values{"start": {fixtureNs(0)}, "end": {fixtureNs(59 * time.Second)}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func TestSearchAPIFixture(t *testing.T) {
	h := writeFixture(t, "ts_api_fixture")
	search := func(params url.Values) []string {
		t.Helper()
		code, body := apiGet(t, h, "/api/v1/traces", params)
		require.Equal(t, http.StatusOK, code, "%v: %s", params, body)
		var traces []query.TraceSummary
		decodeField(t, body, "traces", &traces)
		got := []string{}
		for _, s := range traces {
			got = append(got, s.TraceID)
		}
		return got
	}
	all := fixtureIDs(0x37, 0x35, 0x34, 0x3c, 0x3b, 0x32, 0x31)

	tests := []struct {
		name   string
		params url.Values
		want   []string
	}{
		{"newest first, equal start times by trace id, descending", fixtureWindow(), all},
		{"service: any the trace crosses", fixtureWindow("service", "shop-web"), fixtureIDs(0x37, 0x34, 0x3c, 0x3b, 0x32, 0x31)},
		{"service of a child span", fixtureWindow("service", "shop-db"), fixtureIDs(0x31)},
		{"service of a span written late", fixtureWindow("service", "shop-pay"), fixtureIDs(0x32)},
		{"service unknown", fixtureWindow("service", "shop"), fixtureIDs()},
		{"operation: the root span's name", fixtureWindow("operation", "GET /cart"), fixtureIDs(0x34, 0x3c, 0x3b, 0x31)},
		{"operation of a child span is not a root's", fixtureWindow("operation", "charge"), fixtureIDs()},
		{"operation with a quote", fixtureWindow("operation", "GET /it's"), fixtureIDs(0x37)},
		{"minDuration inclusive", fixtureWindow("minDuration", "200ms"), fixtureIDs(0x35, 0x3c, 0x3b, 0x32)},
		{"minDuration above by 1ns", fixtureWindow("minDuration", "200.000001ms"), fixtureIDs(0x35, 0x3b, 0x32)},
		{"maxDuration inclusive", fixtureWindow("maxDuration", "200ms"), fixtureIDs(0x37, 0x34, 0x3c, 0x31)},
		{"both durations inclusive", fixtureWindow("minDuration", "50ms", "maxDuration", "1s"), fixtureIDs(0x3c, 0x3b, 0x31)},
		{"duration to the end of a late span", fixtureWindow("minDuration", "1.7s", "maxDuration", "1.7s"), fixtureIDs(0x32)},
		{"status=error: any span", fixtureWindow("status", "error"), fixtureIDs(0x3b, 0x32)},
		{"attribute", fixtureWindow("attr.db.system", "postgresql"), fixtureIDs(0x32, 0x31)},
		{"attribute of the root", fixtureWindow("attr.http.route", "/cart"), fixtureIDs(0x34, 0x3b)},
		{"attributes: all of them, on any span", fixtureWindow("attr.db.system", "postgresql", "attr.payment.provider", "acme"), fixtureIDs(0x32)},
		{"attribute not a string", fixtureWindow("attr.http.response.status_code", "500"), fixtureIDs(0x3b)},
		{"attribute value differs", fixtureWindow("attr.db.system", "mysql"), fixtureIDs()},
		{"attribute key twice: both values", fixtureWindow("attr.db.system", "postgresql", "attr.db.system", "mysql"), fixtureIDs()},
		{"resource attributes are not span attributes", fixtureWindow("attr.deployment.environment", "prod"), fixtureIDs()},
		{"every filter", fixtureWindow("service", "shop-web", "operation", "GET /cart", "status", "error", "minDuration", "1s",
			"maxDuration", "1s", "attr.http.route", "/cart"), fixtureIDs(0x3b)},
		{"attribute, the longest window (31 days)",
			url.Values{"start": {fixtureNs(time.Hour - 31*24*time.Hour)}, "end": {fixtureNs(time.Hour)}, "attr.db.system": {"postgresql"}},
			fixtureIDs(0x32, 0x31)},
		{"start and end in ns, inclusive",
			url.Values{"start": {fixtureNs(2 * time.Second)}, "end": {fixtureNs(3 * time.Second)}}, fixtureIDs(0x35, 0x34, 0x3c, 0x3b)},
		{"start and end in RFC 3339",
			url.Values{"start": {"2026-11-30T15:00:02Z"}, "end": {"2026-11-30T15:00:03Z"}}, fixtureIDs(0x35, 0x34, 0x3c, 0x3b)},
		{"RFC 3339 with an offset",
			url.Values{"start": {"2026-11-30T16:00:02+01:00"}, "end": {"2026-11-30T10:00:03-05:00"}}, fixtureIDs(0x35, 0x34, 0x3c, 0x3b)},
		{"RFC 3339 with nanoseconds",
			url.Values{"start": {"2026-11-30T15:00:02.000000001Z"}, "end": {"2026-11-30T15:00:03Z"}}, fixtureIDs(0x35, 0x34)},
		{"end 1ns before a start", url.Values{"start": {fixtureNs(0)}, "end": {fixtureNs(3*time.Second - 1)}}, fixtureIDs(0x3c, 0x3b, 0x32, 0x31)},
		{"a window before", url.Values{"start": {fixtureNs(-3 * time.Hour)}, "end": {fixtureNs(-time.Hour)}}, fixtureIDs(0x30)},
		{"a page", fixtureWindow("limit", "2", "offset", "2"), fixtureIDs(0x34, 0x3c)},
		{"the last page, short", fixtureWindow("limit", "3", "offset", "6"), fixtureIDs(0x31)},
		{"past the end", fixtureWindow("limit", "3", "offset", "7"), fixtureIDs()},
		{"a page of a filtered search", fixtureWindow("service", "shop-web", "limit", "2", "offset", "1"), fixtureIDs(0x34, 0x3c)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, search(tt.params))
		})
	}

	// Pages never overlap and together are the whole ordered list.
	for limit := 1; limit <= len(all)+1; limit++ {
		var pages []string
		for offset := 0; offset <= len(all); offset += limit {
			page := search(fixtureWindow("limit", strconv.Itoa(limit), "offset", strconv.Itoa(offset)))
			assert.LessOrEqual(t, len(page), limit)
			pages = append(pages, page...)
		}
		assert.Equal(t, all, pages, "limit %d", limit)
	}

	// A summary, exactly as the API answers it: from the per-trace index,
	// with the span written late counted in.
	code, body := apiGet(t, h, "/api/v1/traces", fixtureWindow("service", "shop-pay"))
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, fmt.Sprintf(`{"traces": [{"traceId": %q, "rootService": "shop-web", "rootName": "POST /pay",
		"startTimeUnixNano": %q, "durationNano": 1700000000, "status": "ERROR", "spanCount": 2, "errorCount": 1,
		"services": ["shop-pay", "shop-web"]}]}`, traceID(0x32).String(), fixtureNs(time.Second)), string(body))
}

func TestServicesAndOperationsAPIFixture(t *testing.T) {
	h := writeFixture(t, "ts_api_names")
	names := func(path, field string, params url.Values) []string {
		t.Helper()
		code, body := apiGet(t, h, path, params)
		require.Equal(t, http.StatusOK, code, "%s %v: %s", path, params, body)
		var got []string
		decodeField(t, body, field, &got)
		return got
	}
	services := func(params url.Values) []string { return names("/api/v1/services", "services", params) }
	operations := func(service string, params url.Values) []string {
		return names("/api/v1/services/"+url.PathEscape(service)+"/operations", "operations", params)
	}

	assert.Equal(t, []string{"shop-admin", "shop-db", "shop-pay", "shop-web"}, services(fixtureWindow()), "by name")
	assert.Equal(t, []string{"legacy"}, services(url.Values{"start": {fixtureNs(-3 * time.Hour)}, "end": {fixtureNs(-time.Hour)}}))
	assert.Equal(t, []string{"legacy", "shop-admin", "shop-db", "shop-pay", "shop-web"},
		services(url.Values{"start": {"2026-11-30T12:00:00Z"}, "end": {"2026-11-30T16:00:00Z"}}), "RFC 3339")
	assert.Equal(t, []string{"shop-admin"}, services(url.Values{"start": {fixtureNs(7 * time.Second)}, "end": {fixtureNs(58 * time.Second)}}),
		"a trace still running in the window is in it")
	assert.Equal(t, []string{}, services(url.Values{"start": {fixtureNs(time.Hour)}, "end": {fixtureNs(2 * time.Hour)}}))

	assert.Equal(t, []string{"GET /cart", "GET /it's", "POST /pay"}, operations("shop-web", fixtureWindow()), "by name")
	assert.Equal(t, []string{"SELECT cart"}, operations("shop-db", fixtureWindow()))
	assert.Equal(t, []string{"charge"}, operations("shop-pay", fixtureWindow()), "child spans' names too")
	assert.Equal(t, []string{"GET /old"}, operations("legacy", url.Values{"start": {fixtureNs(-3 * time.Hour)}, "end": {fixtureNs(0)}}))
	assert.Equal(t, []string{}, operations("legacy", fixtureWindow()), "outside the window")
	assert.Equal(t, []string{}, operations("shop", fixtureWindow()))
	assert.Equal(t, []string{"GET /cart"}, operations("shop-web",
		url.Values{"start": {"2026-11-30T15:00:02Z"}, "end": {"2026-11-30T15:00:03Z"}}))
}

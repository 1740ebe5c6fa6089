package loki

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// wantRecord and wantStream describe expected records compactly.
type wantRecord struct {
	ts      uint64 // 0: the receive time
	body    string
	sevText string
	sevNum  plog.SeverityNumber
	attrs   [][2]string
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
}

type wantStream struct {
	res     [][2]string
	records []wantRecord
}

func buildLogs(streams ...wantStream) plog.Logs {
	ld := plog.NewLogs()
	for _, s := range streams {
		rl := ld.ResourceLogs().AppendEmpty()
		for _, kv := range s.res {
			rl.Resource().Attributes().PutStr(kv[0], kv[1])
		}
		lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
		for _, w := range s.records {
			lr := lrs.AppendEmpty()
			lr.SetObservedTimestamp(testNowTS)
			if w.ts == 0 {
				lr.SetTimestamp(testNowTS)
			} else {
				lr.SetTimestamp(pcommon.Timestamp(w.ts))
			}
			lr.Body().SetStr(w.body)
			lr.SetSeverityText(w.sevText)
			lr.SetSeverityNumber(w.sevNum)
			for _, kv := range w.attrs {
				lr.Attributes().PutStr(kv[0], kv[1])
			}
			lr.SetTraceID(w.traceID)
			lr.SetSpanID(w.spanID)
		}
	}
	return ld
}

const traceHex = "4bf92f3577b34da6a3ce929d0e0e4736"

// The push of TestPushJSON, as JSON and as the equivalent protobuf.
const pushJSON = `{"streams": [
  {"stream": {"job": "varlogs", "service": "api-svc", "service_name": "api", "host": "node-1", "level": "warn"},
   "values": [
     ["1700000000000000001", "first line"],
     ["1700000000000000002", "second line", {"trace_id": "` + traceHex + `", "level": "ERROR"}]
   ]},
  {"stream": {"job": "batch", "instance": "10.0.0.7:9100"},
   "values": [["1700000000500000000", "third line", {"detected_level": "debug", "user": "ann"}]]},
  {"stream": {"service": "billing", "job": "ignored", "hostname": "h2", "severity": "notice"},
   "values": [["1700000001000000000", "fourth line"]]},
  {"stream": {}, "values": [["1700000002000000000", "no labels at all"]]}
]}`

var pushStreams = []pbStream{
	{labels: `{job="varlogs", service="api-svc", service_name="api", host="node-1", level="warn"}`, entries: []pbEntry{
		{secs: 1700000000, nanos: 1, line: "first line"},
		{secs: 1700000000, nanos: 2, line: "second line", meta: [][2]string{{"trace_id", traceHex}, {"level", "ERROR"}}},
	}},
	{labels: `{job="batch",instance="10.0.0.7:9100"}`, entries: []pbEntry{
		{secs: 1700000000, nanos: 500000000, line: "third line", meta: [][2]string{{"detected_level", "debug"}, {"user", "ann"}}},
	}},
	{labels: `{service="billing", job="ignored", hostname="h2", severity="notice"}`, entries: []pbEntry{
		{secs: 1700000001, line: "fourth line"},
	}},
	{labels: `{}`, entries: []pbEntry{{secs: 1700000002, line: "no labels at all"}}},
}

var pushWant = buildLogs(
	wantStream{
		res: [][2]string{{"job", "varlogs"}, {"service", "api-svc"}, {"service_name", "api"}, {"host", "node-1"},
			{"level", "warn"}, {"service.name", "api"}, {"host.name", "node-1"}},
		records: []wantRecord{
			{ts: 1700000000000000001, body: "first line", sevText: "warn", sevNum: plog.SeverityNumberWarn},
			{ts: 1700000000000000002, body: "second line", sevText: "ERROR", sevNum: plog.SeverityNumberError,
				attrs: [][2]string{{"trace_id", traceHex}, {"level", "ERROR"}}},
		},
	},
	wantStream{
		res: [][2]string{{"job", "batch"}, {"instance", "10.0.0.7:9100"}, {"service.name", "batch"},
			{"host.name", "10.0.0.7"}},
		records: []wantRecord{
			{ts: 1700000000500000000, body: "third line", sevText: "debug", sevNum: plog.SeverityNumberDebug,
				attrs: [][2]string{{"detected_level", "debug"}, {"user", "ann"}}},
		},
	},
	wantStream{
		res: [][2]string{{"service", "billing"}, {"job", "ignored"}, {"hostname", "h2"}, {"severity", "notice"},
			{"service.name", "billing"}, {"host.name", "h2"}},
		records: []wantRecord{
			{ts: 1700000001000000000, body: "fourth line", sevText: "notice", sevNum: plog.SeverityNumberInfo},
		},
	},
	wantStream{
		res:     [][2]string{{"service.name", "unknown_service"}},
		records: []wantRecord{{ts: 1700000002000000000, body: "no labels at all"}},
	},
)

func TestPushJSON(t *testing.T) {
	e := newEnv(t, envOptions{})
	resp, body := e.post(t, pushPath, "application/json", "", []byte(pushJSON))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	assert.Empty(t, body)
	requireSameLogs(t, pushWant, e.lastLogs(t))

	// gzip, as Fluent Bit's `compress gzip` sends it, and the legacy path.
	resp, body = e.post(t, legacyPushPath, "application/json; charset=utf-8", "gzip", gzipped(t, []byte(pushJSON)))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	requireSameLogs(t, pushWant, e.lastLogs(t))

	assert.Equal(t, int64(2), e.requests(t, "push", "ok"))
	assert.Equal(t, int64(10), e.counter(t, "otelcol_tracesift_loki_records", attrEndpoint("push")))
	assert.Zero(t, e.counter(t, "otelcol_tracesift_loki_records_truncated"))
	assert.Equal(t, int64(2*len(pushJSON)), e.counter(t, "otelcol_tracesift_loki_bytes", attrEndpoint("push")),
		"bytes after HTTP decompression")
	assert.Empty(t, e.logged.FilterLevelExact(zapWarn).All())
}

func TestPushProtobuf(t *testing.T) {
	e := newEnv(t, envOptions{})
	resp, body := e.post(t, pushPath, "application/x-protobuf", "", snappyPush(pushStreams...))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	fromProto := e.lastLogs(t)
	requireSameLogs(t, pushWant, fromProto)

	resp, body = e.post(t, pushPath, "application/json", "", []byte(pushJSON))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	requireSameLogs(t, e.lastLogs(t), fromProto)

	// No Content-Type: protobuf, as in Loki.
	resp, body = e.post(t, pushPath, "", "", snappyPush(pushStreams...))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	requireSameLogs(t, pushWant, e.lastLogs(t))

	// Content-Encoding: snappy: confighttp takes the snappy layer off.
	resp, body = e.post(t, pushPath, "application/x-protobuf", "snappy", snappyPush(pushStreams...))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	requireSameLogs(t, pushWant, e.lastLogs(t))

	// gzip around the snappy-compressed body, which Loki accepts too.
	resp, body = e.post(t, pushPath, "application/x-protobuf", "gzip", gzipped(t, snappyPush(pushStreams...)))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	requireSameLogs(t, pushWant, e.lastLogs(t))

	// An empty body is an empty request.
	resp, body = e.post(t, pushPath, "application/x-protobuf", "", nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	assert.Len(t, e.logs.AllLogs(), 5, "nothing is sent on for no records")
	assert.Equal(t, int64(6), e.requests(t, "push", "ok"))
}

// TestPushProtobufLabels: label-set text edge cases, through the wire.
func TestPushProtobufLabels(t *testing.T) {
	e := newEnv(t, envOptions{})
	resp, body := e.post(t, pushPath, "application/x-protobuf", "", snappyPush(
		pbStream{labels: `{app="web", msg="he said \"hi, there\"", path="C:\\tmp,{x}=y", multi="a\nb"}`,
			entries: []pbEntry{{secs: 1, line: "a"}}},
		pbStream{labels: `{}`, entries: []pbEntry{{secs: 2, line: "b"}}},
		pbStream{labels: ``, entries: []pbEntry{{secs: 3, line: "c"}}},
		pbStream{labels: `{"service.name"="dotted", job="j",}`, entries: []pbEntry{{secs: 4, line: "d"}}},
		pbStream{labels: `{job=varlogs}`, entries: []pbEntry{{secs: 5, line: "e"}}},
	))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", body)
	want := buildLogs(
		wantStream{res: [][2]string{{"app", "web"}, {"msg", `he said "hi, there"`}, {"path", `C:\tmp,{x}=y`},
			{"multi", "a\nb"}, {"service.name", "unknown_service"}},
			records: []wantRecord{{ts: 1e9, body: "a"}}},
		wantStream{res: [][2]string{{"service.name", "unknown_service"}}, records: []wantRecord{{ts: 2e9, body: "b"}}},
		wantStream{res: [][2]string{{"service.name", "unknown_service"}}, records: []wantRecord{{ts: 3e9, body: "c"}}},
		wantStream{res: [][2]string{{"service.name", "dotted"}, {"job", "j"}}, records: []wantRecord{{ts: 4e9, body: "d"}}},
		wantStream{res: [][2]string{{"loki.labels", "{job=varlogs}"}, {"service.name", "unknown_service"}},
			records: []wantRecord{{ts: 5e9, body: "e"}}},
	)
	requireSameLogs(t, want, e.lastLogs(t))
	assert.Equal(t, int64(1), e.invalid(t, "bad_labels"))
	assert.Len(t, e.logged.FilterMessageSnippet("Could not parse the label set").All(), 1)
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		in      string
		want    []labelPair
		wantErr string
	}{
		{in: `{}`},
		{in: ``},
		{in: "  \t"},
		{in: ` { job = "varlogs" , } `, want: []labelPair{{"job", "varlogs"}}},
		{in: `{job="varlogs", service_name="api", level="info"}`,
			want: []labelPair{{"job", "varlogs"}, {"service_name", "api"}, {"level", "info"}}},
		{in: `{q="say \"hi\", ok", b="back\\slash", n="l1\nl2", t="\t", u="\u00e9\U0001F600"}`,
			want: []labelPair{{"q", `say "hi", ok`}, {"b", `back\slash`}, {"n", "l1\nl2"}, {"t", "\t"}, {"u", "é😀"}}},
		{in: `{a="x,y=z}{", b=""}`, want: []labelPair{{"a", "x,y=z}{"}, {"b", ""}}},
		{in: "{a=`raw \\n`}", want: []labelPair{{"a", `raw \n`}}},
		{in: `{"service.name"="x", "we\"ird"="y"}`, want: []labelPair{{"service.name", "x"}, {`we"ird`, "y"}}},
		{in: `{k8s.pod="p", a:b="c"}`, want: []labelPair{{"k8s.pod", "p"}, {"a:b", "c"}}},
		{in: `{a="1", a="2"}`, want: []labelPair{{"a", "1"}, {"a", "2"}}},
		{in: `{a=b}`, wantErr: "value of label \"a\""},
		{in: `{a="b"`, wantErr: "ends early"},
		{in: `{a="b`, wantErr: "unterminated"},
		{in: `a="b"`, wantErr: "must start with '{'"},
		{in: `{a="b"} x`, wantErr: "want end of label set"},
		{in: `{a!="b"}`, wantErr: "want '=' after label name"},
		{in: `{="b"}`, wantErr: "want a label name"},
		{in: `{1a="b"}`, wantErr: "want a label name"},
		{in: `{a="b" c="d"}`, wantErr: "want ',' or '}'"},
		{in: `{a="\q"}`, wantErr: "bad escape"},
		{in: `{""="x"}`, wantErr: "empty label name"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseLabels(tt.in, nil)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestPushEntryShapes: entries that are not quite right are stored as well
// as possible and counted; the request succeeds.
func TestPushEntryShapes(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := `{"streams":[{"values":[
		["nope", "bad timestamp"],
		[1700000000000000000, "a number is fine"],
		["1700000000000000000", {"not": "a string"}],
		"not an entry",
		["1700000000000000000"],
		["1700000000000000000", "metadata not an object", [1, 2]],
		["1700000000000000000", "metadata values", {"n": 1, "b": true, "s": "x", "z": null}, "ignored"],
		["-5", "negative"]
	], "stream": {"job": "shapes", "level": "info"}, "unknown": {"x": [1]}}], "other": 1}`
	resp, rb := e.post(t, pushPath, "application/json", "", []byte(body))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", rb)
	info := plog.SeverityNumberInfo
	want := buildLogs(wantStream{
		res: [][2]string{{"job", "shapes"}, {"level", "info"}, {"service.name", "shapes"}},
		records: []wantRecord{
			{body: "bad timestamp", sevText: "info", sevNum: info},
			{ts: 1.7e18, body: "a number is fine", sevText: "info", sevNum: info},
			{ts: 1.7e18, body: `{"not": "a string"}`, sevText: "info", sevNum: info},
			{body: `"not an entry"`, sevText: "info", sevNum: info},
			{ts: 1.7e18, body: "", sevText: "info", sevNum: info},
			{ts: 1.7e18, body: "metadata not an object", sevText: "info", sevNum: info},
			{ts: 1.7e18, body: "metadata values", sevText: "info", sevNum: info,
				attrs: [][2]string{{"n", "1"}, {"b", "true"}, {"s", "x"}}},
			{body: "negative", sevText: "info", sevNum: info},
		},
	})
	requireSameLogs(t, want, e.lastLogs(t))
	assert.Equal(t, int64(3), e.invalid(t, "bad_timestamp"), "nope, not an entry, -5")
	assert.Equal(t, int64(4), e.invalid(t, "bad_entry"), "object line, not an entry, no line, metadata array")
	assert.Equal(t, int64(8), e.counter(t, "otelcol_tracesift_loki_records", attrEndpoint("push")))
	assert.Len(t, e.logged.FilterMessageSnippet("timestamp is missing or unreadable").All(), 1)
	assert.Len(t, e.logged.FilterMessageSnippet("push entry of the wrong shape").All(), 1)
}

// TestPushLegacyJSON: Loki's first JSON format, labels as text and entries
// as objects. Streams without entries are left out.
func TestPushLegacyJSON(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := `{"streams":[{"labels":"{job=\"old\", host=\"h\"}","entries":[
		{"ts":"2023-11-14T22:13:20.5Z","line":"legacy"},
		{"line":"no ts"}]},
		{"stream":{"job":"empty"},"values":[]}, {"stream":{"job":"null"},"values":null}]}`
	resp, rb := e.post(t, pushPath, "application/json", "", []byte(body))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", rb)
	want := buildLogs(wantStream{
		res: [][2]string{{"job", "old"}, {"host", "h"}, {"service.name", "old"}, {"host.name", "h"}},
		records: []wantRecord{
			{ts: 1700000000500000000, body: "legacy"},
			{body: "no ts"},
		},
	})
	requireSameLogs(t, want, e.lastLogs(t))
	assert.Equal(t, int64(1), e.invalid(t, "bad_timestamp"))
}

func TestPushProtobufTimestamps(t *testing.T) {
	e := newEnv(t, envOptions{})
	resp, rb := e.post(t, pushPath, "application/x-protobuf", "", snappyPush(pbStream{labels: `{job="ts"}`,
		entries: []pbEntry{
			{noTS: true, line: "no timestamp"},
			{line: "zero timestamp"},
			{secs: -5, line: "before 1970"},
			{secs: 1, nanos: -1, line: "negative nanos"},
			{secs: 1, nanos: 999999999, line: "ok"},
		}}))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", rb)
	want := buildLogs(wantStream{
		res: [][2]string{{"job", "ts"}, {"service.name", "ts"}},
		records: []wantRecord{
			{body: "no timestamp"}, {body: "zero timestamp"}, {body: "before 1970"}, {body: "negative nanos"},
			{ts: 1999999999, body: "ok"},
		},
	})
	requireSameLogs(t, want, e.lastLogs(t))
	assert.Equal(t, int64(4), e.invalid(t, "bad_timestamp"))
}

package loki

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/tracesift/tracesift/internal/traceid"
)

func decodeAnswer(t *testing.T, body []byte) linesAnswer {
	t.Helper()
	var a linesAnswer
	require.NoError(t, json.Unmarshal(body, &a), "%s", body)
	return a
}

func tsOf(s string) uint64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return uint64(t.UnixNano())
}

func TestLinesPlain(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := "2026-05-01 12:00:00 INFO starting\r\n" +
		"2026-05-01 12:00:01 ERROR request failed\n" +
		"java.lang.IllegalStateException: boom\n" +
		"\tat com.example.Foo.bar(Foo.java:10)\n" +
		"\tat com.example.Foo.main(Foo.java:5)\n" +
		"Caused by: java.io.IOException: disk\n" +
		"    at com.example.Disk.read(Disk.java:3)\n" +
		"\t... 2 more\n" +
		"\n" +
		"   \n" +
		"  indented, but not a frame\n" +
		"com.example.NotAnException: no frame follows\n" +
		"last line without newline"
	for _, ct := range []string{"text/plain; charset=utf-8", "", "application/x-www-form-urlencoded"} {
		resp, rb := e.post(t, linesPath+"?service=checkout&host=node-7", ct, "", []byte(body))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.Equal(t, linesAnswer{Accepted: 5}, decodeAnswer(t, rb))
		want := buildLogs(wantStream{
			res: [][2]string{{"service.name", "checkout"}, {"host.name", "node-7"}},
			records: []wantRecord{
				{body: "2026-05-01 12:00:00 INFO starting"},
				{body: "2026-05-01 12:00:01 ERROR request failed\n" +
					"java.lang.IllegalStateException: boom\n" +
					"\tat com.example.Foo.bar(Foo.java:10)\n" +
					"\tat com.example.Foo.main(Foo.java:5)\n" +
					"Caused by: java.io.IOException: disk\n" +
					"    at com.example.Disk.read(Disk.java:3)\n" +
					"\t... 2 more"},
				{body: "  indented, but not a frame"},
				{body: "com.example.NotAnException: no frame follows"},
				{body: "last line without newline"},
			},
		})
		requireSameLogs(t, want, e.lastLogs(t))
	}
	assert.Equal(t, int64(3), e.requests(t, "lines", "ok"))
	assert.Equal(t, int64(15), e.counter(t, "otelcol_tracesift_loki_records", attrEndpoint("lines")))

	// An empty body is fine, and nothing is sent on.
	resp, rb := e.post(t, linesPath+"?service=checkout", "text/plain", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	assert.Equal(t, linesAnswer{}, decodeAnswer(t, rb))
	assert.Len(t, e.logs.AllLogs(), 3)
}

// TestLinesJoinBounds: a joined record stops at max_line_bytes and at
// maxJoinLines; a continuation line first in the body is a record.
func TestLinesJoinBounds(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *Config) { c.MaxLineBytes = 63 }})
	body := "\tat first.line(X.java:1)\n" +
		"head of a long trace\n" +
		"\tat a.b.C.d(C.java:1)\n" + // 21 bytes: 20+1+21 = 42
		"\tat a.b.C.e(C.java:2)\n" + // 42+1+21 = 64 > 63: a new record
		"\tat a.b.C.f(C.java:3)\n"
	resp, rb := e.post(t, linesPath+"?service=s", "text/plain", "", []byte(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	want := buildLogs(wantStream{
		res: [][2]string{{"service.name", "s"}},
		records: []wantRecord{
			{body: "\tat first.line(X.java:1)"},
			{body: "head of a long trace\n\tat a.b.C.d(C.java:1)"},
			{body: "\tat a.b.C.e(C.java:2)\n\tat a.b.C.f(C.java:3)"},
		},
	})
	requireSameLogs(t, want, e.lastLogs(t))

	var sb strings.Builder
	sb.WriteString("x\n")
	for range maxJoinLines + 5 {
		sb.WriteString("\tat y\n")
	}
	e2 := newEnv(t, envOptions{})
	resp, rb = e2.post(t, linesPath+"?service=s", "text/plain", "", []byte(sb.String()))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	lrs := e2.lastLogs(t).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	require.Equal(t, 2, lrs.Len())
	assert.Equal(t, maxJoinLines, strings.Count(lrs.At(0).Body().Str(), "\n")+1)
	assert.Equal(t, 6, strings.Count(lrs.At(1).Body().Str(), "\n")+1)
}

func TestLinesNDJSON(t *testing.T) {
	e := newEnv(t, envOptions{})
	const (
		trace  = "4bf92f3577b34da6a3ce929d0e0e4736"
		span   = "00f067aa0ba902b7"
		trace2 = "0af7651916cd43dd8448eb211c80319c"
		span2  = "b7ad6b7169203331"
		b3     = "463ac35c9f6413ad"
	)
	body := `{"time":"2026-05-01T10:00:00.123456789Z","level":"warn","message":"m1","traceId":"` + trace +
		`","spanId":"` + span + `","user":{"id":42,"name":"ann","tags":["a", "b"]},"ok":true,"nothing":null,"ratio":1.50,"empty":{}}
{"timestamp":1700000000,"severity":"ERROR","msg":"m2","trace_id":"bad","span_id":"` + span + `"}
  {"ts":1700000000123,"lvl":"debug","log":"m3\n","traceID":"` + trace2 + `","spanID":"` + span2 + `"}
{"@timestamp":"2026-05-01 10:00:00+02:00","loglevel":"info","body":"m4","trace":{"id":"` + b3 + `"},"span":{"id":"` + span + `"}}
{"ts":1700000000123456,"log":{"level":"error"},"message":{"not":"string"}}
{"ts":"1700000000123456789","level":30,"msg":"pino","MSG":"second message key"}

not json at all
[1,2]
{"time":"yesterday","msg":"bad time","trace.id":"00000000000000000000000000000000"}
{"msg": "broken",
`
	resp, rb := e.post(t, linesPath+"?service=api", "application/x-ndjson", "", []byte(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	assert.Equal(t, linesAnswer{Accepted: 10, Invalid: 4}, decodeAnswer(t, rb))

	tid := func(s string) pcommon.TraceID {
		id, ok := traceid.ParseTraceID(s)
		require.True(t, ok)
		return id
	}
	sid := func(s string) pcommon.SpanID {
		id, ok := traceid.ParseSpanID(s)
		require.True(t, ok)
		return id
	}
	want := buildLogs(wantStream{
		res: [][2]string{{"service.name", "api"}},
		records: []wantRecord{
			{ts: tsOf("2026-05-01T10:00:00.123456789Z"), sevText: "warn", sevNum: plog.SeverityNumberWarn, body: "m1",
				traceID: tid(trace), spanID: sid(span),
				attrs: [][2]string{{"user.id", "42"}, {"user.name", "ann"}, {"user.tags", `["a", "b"]`}, {"ok", "true"},
					{"ratio", "1.50"}}},
			{ts: 1700000000e9, sevText: "ERROR", sevNum: plog.SeverityNumberError, body: "m2",
				attrs: [][2]string{{"trace_id", "bad"}, {"span_id", span}}},
			{ts: 1700000000123e6, sevText: "debug", sevNum: plog.SeverityNumberDebug, body: "m3",
				traceID: tid(trace2), spanID: sid(span2)},
			{ts: tsOf("2026-05-01T08:00:00Z"), sevText: "info", sevNum: plog.SeverityNumberInfo, body: "m4",
				traceID: tid("0000000000000000" + b3), spanID: sid(span)},
			{ts: 1700000000123456e3, sevText: "error", sevNum: plog.SeverityNumberError,
				body:  `{"ts":1700000000123456,"log":{"level":"error"},"message":{"not":"string"}}`,
				attrs: [][2]string{{"message.not", "string"}}},
			{ts: 1700000000123456789, sevText: "info", sevNum: plog.SeverityNumberInfo, body: "pino",
				attrs: [][2]string{{"MSG", "second message key"}}},
			{body: "not json at all"},
			{body: "[1,2]"},
			{body: "bad time", attrs: [][2]string{{"time", "yesterday"}, {"trace.id", "00000000000000000000000000000000"}}},
			{body: `{"msg": "broken",`},
		},
	})
	requireSameLogs(t, want, e.lastLogs(t))
	assert.Equal(t, int64(3), e.invalid(t, "not_json"))
	assert.Equal(t, int64(1), e.invalid(t, "bad_timestamp"))
	assert.Len(t, e.logged.FilterMessageSnippet("NDJSON line that is not a JSON object").All(), 1)

	// application/json: the same, line by line.
	resp, rb = e.post(t, linesPath+"?service=api", "application/json", "", []byte(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	requireSameLogs(t, want, e.lastLogs(t))
}

// TestLinesJSONWhole: a body that is one JSON array, or one object over
// several lines, is taken as a whole.
func TestLinesJSONWhole(t *testing.T) {
	e := newEnv(t, envOptions{})
	resp, rb := e.post(t, linesPath+"?service=s", "application/json", "",
		[]byte("[\n {\"msg\": \"a\"},\n \"str\",\n {\"msg\": \"b\", \"n\": [1, {\"x\": 2}]}\n]\n"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	want := buildLogs(wantStream{
		res: [][2]string{{"service.name", "s"}},
		records: []wantRecord{
			{body: "a"}, {body: `"str"`}, {body: "b", attrs: [][2]string{{"n", `[1, {"x": 2}]`}}},
		},
	})
	requireSameLogs(t, want, e.lastLogs(t))

	resp, rb = e.post(t, linesPath+"?service=s", "application/json", "",
		[]byte("{\n  \"msg\": \"pretty\",\n  \"level\": \"info\"\n}\n"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	want = buildLogs(wantStream{
		res:     [][2]string{{"service.name", "s"}},
		records: []wantRecord{{body: "pretty", sevText: "info", sevNum: plog.SeverityNumberInfo}},
	})
	requireSameLogs(t, want, e.lastLogs(t))
}

func TestLinesQuery(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		query, wantErr string
	}{
		{"", "the `service` query parameter is required"},
		{"?service=", "the `service` query parameter is required"},
		{"?service=%20%20", "the `service` query parameter is required"},
		{"?host=h", "the `service` query parameter is required"},
		{"?service=" + strings.Repeat("s", 257), "the `service` query parameter is 257 bytes long, the limit is 256"},
		{"?service=%ff", "not valid UTF-8"},
		{"?service=s&host=" + strings.Repeat("h", 300), "the `host` query parameter is 300 bytes long"},
		{"?service=%zz", "malformed query string"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, rb := e.post(t, linesPath+tt.query, "text/plain", "", []byte("hello\n"))
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", rb)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var answer struct{ Error string }
			require.NoError(t, json.Unmarshal(rb, &answer))
			assert.Contains(t, answer.Error, tt.wantErr)
		})
	}
	assert.Zero(t, e.logs.LogRecordCount())
	assert.Equal(t, int64(len(tests)), e.requests(t, "lines", "malformed"))
	assert.Len(t, e.logged.FilterMessageSnippet("`service` query parameter is required").All(), 1)

	resp, rb := e.post(t, linesPath+"?service=%20spaced%20&host=", "text/plain", "", []byte("hello\n"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	requireSameLogs(t, buildLogs(wantStream{res: [][2]string{{"service.name", "spaced"}},
		records: []wantRecord{{body: "hello"}}}), e.lastLogs(t))
}

package loki

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestTruncation(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *Config) { c.MaxLineBytes = 10 }})
	long := strings.Repeat("0123456789", 10)

	// Push: the line, and a structured-metadata value, cut.
	resp, rb := e.post(t, pushPath, "application/x-protobuf", "", snappyPush(pbStream{
		labels: `{job="t"}`,
		entries: []pbEntry{
			{secs: 1, line: long, meta: [][2]string{{"k", long}}},
			{secs: 2, line: "short"},
			// é is 2 bytes: the cut backs off to a character start.
			{secs: 3, line: "abcdefghi" + "é" + "xyz"},
		},
	}))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", rb)
	want := buildLogs(wantStream{
		res: [][2]string{{"job", "t"}, {"service.name", "t"}},
		records: []wantRecord{
			{ts: 1e9, body: "0123456789…[truncated 90 bytes]", attrs: [][2]string{{"k", "0123456789…[truncated 90 bytes]"}}},
			{ts: 2e9, body: "short"},
			{ts: 3e9, body: "abcdefghi…[truncated 5 bytes]"},
		},
	})
	requireSameLogs(t, want, e.lastLogs(t))
	assert.Equal(t, int64(2), e.counter(t, "otelcol_tracesift_loki_records_truncated"), "one per record")

	// Lines: plain and NDJSON.
	resp, rb = e.post(t, linesPath+"?service=s", "text/plain", "", []byte(long+"\nok\n"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	assert.Equal(t, linesAnswer{Accepted: 2, Truncated: 1}, decodeAnswer(t, rb))
	assert.Equal(t, "0123456789…[truncated 90 bytes]",
		e.lastLogs(t).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str())

	resp, rb = e.post(t, linesPath+"?service=s", "application/x-ndjson", "",
		[]byte(`{"msg":"`+long+`","stack":"`+long+`","n":1}`+"\n"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	assert.Equal(t, linesAnswer{Accepted: 1, Truncated: 1}, decodeAnswer(t, rb))
	requireSameLogs(t, buildLogs(wantStream{
		res: [][2]string{{"service.name", "s"}},
		records: []wantRecord{{body: "0123456789…[truncated 90 bytes]",
			attrs: [][2]string{{"stack", "0123456789…[truncated 90 bytes]"}, {"n", "1"}}}},
	}), e.lastLogs(t))

	assert.Equal(t, int64(4), e.counter(t, "otelcol_tracesift_loki_records_truncated"))
	warnings := e.logged.FilterMessageSnippet("longer than `max_line_bytes`").All()
	require.Len(t, warnings, 1)
	assert.Equal(t, "100 bytes: 0123456789", warnings[0].ContextMap()["example"])
}

func TestInvalidUTF8(t *testing.T) {
	e := newEnv(t, envOptions{})
	resp, rb := e.post(t, pushPath, "application/x-protobuf", "", snappyPush(pbStream{
		labels:  "{job=\"bad\xffjob\"}",
		entries: []pbEntry{{secs: 1, line: "caf\xe9 au lait", meta: [][2]string{{"k", "v\xc3"}}}, {secs: 2, line: "fine"}},
	}))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", rb)
	requireSameLogs(t, buildLogs(wantStream{
		res: [][2]string{{"job", "bad\uFFFDjob"}, {"service.name", "bad\uFFFDjob"}},
		records: []wantRecord{
			{ts: 1e9, body: "caf\uFFFD au lait", attrs: [][2]string{{"k", "v\uFFFD"}}},
			{ts: 2e9, body: "fine"},
		},
	}), e.lastLogs(t))
	assert.Equal(t, int64(2), e.invalid(t, "invalid_utf8"), "both records carry the stream's bad label")

	resp, rb = e.post(t, pushPath, "application/json", "",
		[]byte("{\"streams\":[{\"stream\":{\"job\":\"j\"},\"values\":[[\"1\",\"\xff\xfe raw\"]]}]}"))
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "%s", rb)
	assert.Equal(t, "\uFFFD raw", e.lastLogs(t).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str(),
		"a run of bad bytes is one U+FFFD, as strings.ToValidUTF8 does")

	resp, rb = e.post(t, linesPath+"?service=s", "text/plain", "", []byte("ok\nbad \x80 byte\n"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	assert.Equal(t, linesAnswer{Accepted: 2, Invalid: 1}, decodeAnswer(t, rb))
	assert.Equal(t, "bad \uFFFD byte", e.lastLogs(t).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(1).Body().Str())

	assert.Equal(t, int64(4), e.invalid(t, "invalid_utf8"))
	assert.Len(t, e.logged.FilterMessageSnippet("not valid UTF-8").All(), 1)
}

// TestRejections: what is answered 4xx, in which format, and how it is
// counted.
func TestRejections(t *testing.T) {
	const limit = 4096
	e := newEnv(t, envOptions{config: func(c *Config) { c.ServerConfig.MaxRequestBodySize = limit }})
	big := strings.Repeat("a log line that compresses well\n", 200)
	require.Greater(t, len(big), limit)
	bigJSON := `{"streams":[{"stream":{"job":"j"},"values":[["1",` + `"` + strings.Repeat("x", limit) + `"]]}]}`
	wrongWireType := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7)
	badEntry := pbPush(pbStream{labels: `{a="b"}`, entries: []pbEntry{{secs: 1, line: "x"}}})
	badEntry = badEntry[:len(badEntry)-8] // cut inside the stream

	tests := []struct {
		name, path, method, ct, ce string
		body                       []byte
		chunked                    bool
		wantCode                   int
		wantMsg                    string
	}{
		{"json syntax", pushPath, "POST", "application/json", "", []byte(`{"streams":[{"stream":`), false, 400, "malformed JSON push request: invalid JSON at byte offset 22: unexpected end of input"},
		{"json not an object", pushPath, "POST", "application/json", "", []byte(`[1]`), false, 400, "want '{' (a Loki push request object)"},
		{"json streams not an array", pushPath, "POST", "application/json", "", []byte(`{"streams":{}}`), false, 400, `want '[' (the "streams" array)`},
		{"json trailing data", pushPath, "POST", "application/json", "", []byte(`{"streams":[]} {}`), false, 400, "want end of input"},
		{"json empty", pushPath, "POST", "application/json", "", nil, false, 400, "unexpected end of input"},
		{"bad snappy", pushPath, "POST", "application/x-protobuf", "", []byte("definitely not snappy"), false, 400, "not snappy-compressed (block format)"},
		{"bad protobuf", pushPath, "POST", "application/x-protobuf", "", snappy.Encode(nil, []byte{0x0a, 0xff}), false, 400, "invalid protobuf PushRequest"},
		{"wrong wire type", pushPath, "POST", "application/x-protobuf", "", snappy.Encode(nil, wrongWireType), false, 400, "PushRequest field 1 has wire type 0, want 2"},
		{"truncated stream", pushPath, "POST", "application/x-protobuf", "", snappy.Encode(nil, badEntry), false, 400, "invalid protobuf PushRequest"},
		{"corrupt gzip", pushPath, "POST", "application/json", "gzip", []byte("not gzip"), false, 400, `decoding the body (Content-Encoding "gzip")`},
		{"unknown encoding", linesPath + "?service=s", "POST", "text/plain", "br2", []byte("x"), false, 400, "unsupported Content-Encoding"},
		{"push text/plain", pushPath, "POST", "text/plain", "", []byte("x"), false, 415, `unsupported Content-Type "text/plain", supported: application/x-protobuf`},
		{"push bad media type", pushPath, "POST", "application/json;;", "", []byte("{}"), false, 415, "unsupported Content-Type"},
		{"lines xml", linesPath + "?service=s", "POST", "application/xml", "", []byte("<x/>"), false, 415, `unsupported Content-Type \"application/xml\"`},
		{"push GET", pushPath, "GET", "", "", nil, false, 405, "method GET not allowed, use POST"},
		{"lines PUT", linesPath + "?service=s", "PUT", "text/plain", "", []byte("x"), false, 405, "method PUT not allowed"},
		{"too large", pushPath, "POST", "application/json", "", []byte(bigJSON), false, 413, "request too large: the body is over the limit of 4096 bytes (4 KiB), set by `max_request_body_size`"},
		{"too large chunked", linesPath + "?service=s", "POST", "text/plain", "", []byte(big), true, 413, "over the limit of 4096 bytes"},
		{"gzip expands past the limit", linesPath + "?service=s", "POST", "text/plain", "gzip", gzipped(t, []byte(big)), false, 413, "over the limit of 4096 bytes"},
		{"snappy expands past the limit", pushPath, "POST", "application/x-protobuf", "", snappy.Encode(nil, pbPush(pbStream{labels: "{}", entries: []pbEntry{{secs: 1, line: big}}})), false, 413, "the snappy-decoded size of the body is over the limit"},
	}
	var pushMalformed, linesMalformed int64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rd io.Reader = bytes.NewReader(tt.body)
			if tt.chunked {
				rd = io.MultiReader(rd)
			}
			req, err := http.NewRequest(tt.method, e.url(tt.path), rd)
			require.NoError(t, err)
			if tt.ct != "" {
				req.Header.Set("Content-Type", tt.ct)
			}
			if tt.ce != "" {
				req.Header.Set("Content-Encoding", tt.ce)
			}
			resp, rb := e.do(t, req)
			require.Equal(t, tt.wantCode, resp.StatusCode, "%s", rb)
			assert.Contains(t, string(rb), tt.wantMsg)
			if tt.wantCode == http.StatusServiceUnavailable {
				assert.Equal(t, "5", resp.Header.Get("Retry-After"), "a client told to retry is told when")
			}
			assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
			if strings.HasPrefix(tt.path, linesPath) {
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				linesMalformed++
			} else {
				assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
				pushMalformed++
			}
			if tt.wantCode == http.StatusMethodNotAllowed {
				assert.Equal(t, "POST", resp.Header.Get("Allow"))
			}
		})
	}
	assert.Zero(t, e.logs.LogRecordCount())
	assert.Equal(t, pushMalformed, e.requests(t, "push", "malformed"))
	assert.Equal(t, linesMalformed, e.requests(t, "lines", "malformed"))
	assert.Zero(t, e.requests(t, "push", "ok"))
	assert.Len(t, e.logged.FilterMessageSnippet("Rejected an unreadable request with 400").All(), 1)
	assert.Len(t, e.logged.FilterMessageSnippet("Rejected an oversized request with 413").All(), 1)
	assert.Len(t, e.logged.FilterMessageSnippet("unsupported method (405) or Content-Type (415)").All(), 1)

	// Unknown paths are not ours.
	resp, _ := e.post(t, "/loki/api/v1/query", "application/json", "", []byte("{}"))
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestConsumerErrors(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantCode    int
		wantOutcome string
		wantMsg     string
	}{
		{"retryable", errors.New("queue is full"), http.StatusServiceUnavailable, "unavailable", "retry later: queue is full"},
		{"permanent", consumererror.NewPermanent(errors.New("bad data")), http.StatusBadRequest, "dropped", "they were dropped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{next: consumertest.NewErr(tt.err)})
			resp, rb := e.post(t, pushPath, "application/x-protobuf", "", snappyPush(pushStreams...))
			require.Equal(t, tt.wantCode, resp.StatusCode, "%s", rb)
			assert.Contains(t, string(rb), tt.wantMsg)
			if tt.wantCode == http.StatusServiceUnavailable {
				assert.Equal(t, "5", resp.Header.Get("Retry-After"), "a client told to retry is told when")
			}
			resp, rb = e.post(t, linesPath+"?service=s", "text/plain", "", []byte("a\nb\n"))
			require.Equal(t, tt.wantCode, resp.StatusCode, "%s", rb)
			assert.Contains(t, string(rb), `"error":`)

			assert.Equal(t, int64(1), e.requests(t, "push", tt.wantOutcome))
			assert.Equal(t, int64(1), e.requests(t, "lines", tt.wantOutcome))
			assert.Zero(t, e.counter(t, "otelcol_tracesift_loki_records", attrEndpoint("push")))
			var wantDropped int64
			if tt.wantOutcome == "dropped" {
				wantDropped = 5
				assert.Len(t, e.logged.FilterMessageSnippet("permanent error").All(), 1)
			}
			assert.Equal(t, wantDropped, e.counter(t, "otelcol_tracesift_loki_records_dropped", attrEndpoint("push")))
		})
	}
}

// Records over max_lines_per_second are refused with 429 and the seconds to
// wait, and taken once the bound allows them; a request larger than the
// bound can ever let through is 413.
func TestLinesPerSecondBound(t *testing.T) {
	var elapsed atomic.Int64 // since testNow, in ns
	e := newEnv(t, envOptions{
		config: func(c *Config) { c.MaxLinesPerSecond = 10 },
		clock:  func() time.Time { return testNow.Add(time.Duration(elapsed.Load())) },
	})
	lines := func(n int) []byte { return []byte(strings.Repeat("a line\n", n)) }
	post := func(n int) (*http.Response, []byte) {
		return e.post(t, linesPath+"?service=s", "text/plain", "", lines(n))
	}

	resp, body := post(8)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, body = post(5) // 2 left of 10
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", body)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Contains(t, string(body), "over `max_lines_per_second` (10): retry in 300ms")
	assert.Equal(t, 8, e.logs.LogRecordCount(), "the refused records are not taken")
	assert.EqualValues(t, 1, e.requests(t, "lines", "limited"))

	elapsed.Store(int64(300 * time.Millisecond)) // 2 + 3 refilled
	resp, body = post(5)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, body = e.post(t, pushPath, "application/json", "",
		[]byte(`{"streams":[{"stream":{"service_name":"s"},"values":[["1","x"]]}]}`))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "both endpoints share the bound: %s", body)
	assert.EqualValues(t, 1, e.requests(t, "push", "limited"))

	elapsed.Store(int64(2 * time.Second)) // refilled: an empty bucket would answer 429 before reading
	resp, body = post(11)
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "more than `max_lines_per_second` (10) lets through at once")
	assert.Equal(t, 13, e.logs.LogRecordCount())
	assert.Equal(t, 1, e.logged.FilterMessageSnippet("max_lines_per_second").FilterMessageSnippet("429").Len(),
		"explained once in the log")
}

func TestUnboundedLinesPerSecond(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *Config) { c.MaxLinesPerSecond = 0 }})
	resp, body := e.post(t, linesPath+"?service=s", "text/plain", "", []byte(strings.Repeat("a line\n", 5000)))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, 5000, e.logs.LogRecordCount())
}

// A request of more records than max_records_per_request is refused whole
// (413) in every format, decoding no further; one at the bound is taken.
func TestMaxRecordsPerRequest(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *Config) { c.MaxRecordsPerRequest = 3 }})
	entries := func(n int) []pbEntry {
		var out []pbEntry
		for i := range n {
			out = append(out, pbEntry{secs: 1700000000, nanos: int32(i), line: "l"})
		}
		return out
	}
	jsonPush := func(n int) []byte {
		vals := strings.TrimSuffix(strings.Repeat(`["1","x"],`, n), ",")
		return []byte(`{"streams":[{"stream":{"service_name":"s"},"values":[` + vals + `]}]}`)
	}
	for _, tc := range []struct {
		name, path, contentType string
		body                    func(n int) []byte
	}{
		{"plain", linesPath + "?service=s", "text/plain", func(n int) []byte { return []byte(strings.Repeat("a line\n", n)) }},
		{"ndjson", linesPath + "?service=s", "application/x-ndjson", func(n int) []byte {
			return []byte(strings.Repeat(`{"msg":"a"}`+"\n", n))
		}},
		{"ndjson array", linesPath + "?service=s", "application/json", func(n int) []byte {
			return []byte("[" + strings.TrimSuffix(strings.Repeat(`{"msg":"a"},`, n), ",") + "]")
		}},
		{"json push", pushPath, "application/json", jsonPush},
		{"protobuf push", pushPath, "application/x-protobuf", func(n int) []byte {
			return snappyPush(pbStream{labels: `{service_name="s"}`, entries: entries(n)})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.logs.LogRecordCount()
			resp, body := e.post(t, tc.path, tc.contentType, "", tc.body(4))
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), "`max_records_per_request` (3)")
			assert.Equal(t, before, e.logs.LogRecordCount(), "nothing of it is taken")
			resp, body = e.post(t, tc.path, tc.contentType, "", tc.body(3))
			require.Less(t, resp.StatusCode, 300, "%s", body)
			assert.Equal(t, before+3, e.logs.LogRecordCount())
		})
	}
}

// Over the rate bound, a request is refused before its body is read: a
// malformed one gets 429, not 400.
func TestRateBoundBeforeDecoding(t *testing.T) {
	e := newEnv(t, envOptions{
		config: func(c *Config) { c.MaxLinesPerSecond = 2 },
		clock:  func() time.Time { return testNow },
	})
	resp, body := e.post(t, linesPath+"?service=s", "text/plain", "", []byte("a\nb\n"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, body = e.post(t, pushPath, "application/json", "", []byte(`{not json`))
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", body)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
}

// A request whose body would pass max_bytes_in_flight, while another is
// held by the pipeline, is answered 429 with Retry-After.
func TestMaxBytesInFlight(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var calls atomic.Int32
	next, err := consumer.NewLogs(func(context.Context, plog.Logs) error {
		if calls.Add(1) == 1 {
			entered <- struct{}{}
			<-release
		}
		return nil
	})
	require.NoError(t, err)
	e := newEnv(t, envOptions{next: next, config: func(c *Config) {
		c.ServerConfig.MaxRequestBodySize = 1 << 20
		c.MaxBytesInFlight = 1 << 20
	}})
	body := []byte(strings.Repeat("a line of a log file\n", 30000)) // 630 000 bytes: two do not fit
	held := make(chan int, 1)
	go func() {
		resp, _ := e.post(t, linesPath+"?service=s", "text/plain", "", body)
		held <- resp.StatusCode
	}()
	<-entered
	resp, rb := e.post(t, linesPath+"?service=s", "text/plain", "", body)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", rb)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Contains(t, string(rb), "max_bytes_in_flight")
	assert.EqualValues(t, 1, e.requests(t, "lines", "limited"))
	close(release)
	assert.Equal(t, http.StatusOK, <-held)
	resp, rb = e.post(t, linesPath+"?service=s", "text/plain", "", body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
}

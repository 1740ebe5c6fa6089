package otlpraw

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// decodeStatus reads a google.rpc.Status error body in the response's
// encoding.
func decodeStatus(t testing.TB, resp *http.Response, body []byte) *spb.Status {
	t.Helper()
	st := &spb.Status{}
	switch ct := resp.Header.Get("Content-Type"); ct {
	case pbContentType:
		require.NoError(t, proto.Unmarshal(body, st))
	case jsonContentType:
		require.NoError(t, protojson.Unmarshal(body, st), "%s", body)
	default:
		t.Fatalf("error body with Content-Type %q: %s", ct, body)
	}
	return st
}

func TestHTTPTraces(t *testing.T) {
	e := newEnv(t, envOptions{})
	pb, js, gz := testTraces(30), testTraces(12), testTraces(20)

	resp, body := e.post(t, "/v1/traces", pbContentType, "", mustProto(t, pb))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, pbContentType, resp.Header.Get("Content-Type"))
	er := ptraceotlp.NewExportResponse()
	require.NoError(t, er.UnmarshalProto(body))
	assert.Empty(t, body, "an empty export response, partial_success unset")

	resp, body = e.post(t, "/v1/traces", jsonContentType, "", mustJSON(t, js))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, jsonContentType, resp.Header.Get("Content-Type"))
	require.NoError(t, er.UnmarshalJSON(body))
	assert.JSONEq(t, `{}`, string(body))

	resp, body = e.post(t, "/v1/traces", pbContentType+"; charset=binary", "gzip", gzipped(t, mustProto(t, gz)))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)

	got := e.sampler.requests()
	require.Len(t, got, 3)
	requireSameTraces(t, pb, got[0])
	assert.Equal(t, mustProto(t, pb), got[0], "protobuf bodies reach the sampler as sent")
	requireSameTraces(t, js, got[1])
	requireSameTraces(t, gz, got[2])

	assert.Equal(t, int64(3), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "http"), attribute.String("outcome", "ok")))
}

// TestHTTPTracesChunked: a body without Content-Length (chunked) is read
// whole, too.
func TestHTTPTracesChunked(t *testing.T) {
	e := newEnv(t, envOptions{})
	td := testTraces(50)
	req, err := http.NewRequest(http.MethodPost, e.url("/v1/traces"), io.MultiReader(bytes.NewReader(mustProto(t, td))))
	require.NoError(t, err)
	req.Header.Set("Content-Type", pbContentType)
	require.Equal(t, int64(0), req.ContentLength)
	req.ContentLength = -1
	resp, body := e.do(t, req)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	got := e.sampler.requests()
	require.Len(t, got, 1)
	requireSameTraces(t, td, got[0])
}

func TestHTTPLogs(t *testing.T) {
	e := newEnv(t, envOptions{})
	ld := testLogs(3)
	pbBody, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	require.NoError(t, err)
	jsBody, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)

	resp, body := e.post(t, "/v1/logs", pbContentType, "", pbBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Empty(t, body)
	resp, body = e.post(t, "/v1/logs", jsonContentType, "", jsBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.JSONEq(t, `{}`, string(body))
	resp, body = e.post(t, "/v1/logs", pbContentType, "gzip", gzipped(t, pbBody))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)

	all := e.logs.AllLogs()
	require.Len(t, all, 3)
	for _, got := range all {
		requireSameLogs(t, ld, got)
	}
	assert.Empty(t, e.sampler.requests())
}

func TestHTTPMalformed(t *testing.T) {
	e := newEnv(t, envOptions{})
	badProto := []byte{0x0a, 0x09, 0x12, 0x07, 0x12, 0x05, 0x0a, 0x03, 1, 2, 3} // a 3-byte trace_id
	tests := []struct {
		name, path, contentType, encoding string
		body                              []byte
		wantMsg                           string
	}{
		{"traces protobuf", "/v1/traces", pbContentType, "", badProto, "malformed OTLP trace request"},
		{"traces json", "/v1/traces", jsonContentType, "", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}`), "malformed OTLP/JSON trace request"},
		{"traces json syntax", "/v1/traces", jsonContentType, "", []byte(`{"resourceSpans":`), "malformed OTLP/JSON trace request"},
		{"traces corrupt gzip", "/v1/traces", pbContentType, "gzip", []byte("not gzip at all"), ""},
		{"logs protobuf", "/v1/logs", pbContentType, "", []byte{0xff, 0xff, 0xff}, "malformed OTLP logs request"},
		{"logs json", "/v1/logs", jsonContentType, "", []byte(`[1,2`), "malformed OTLP logs request"},
		{"unsupported content encoding", "/v1/traces", pbContentType, "br2", badProto, "unsupported Content-Encoding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := e.post(t, tt.path, tt.contentType, tt.encoding, tt.body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", body)
			assert.Equal(t, tt.contentType, resp.Header.Get("Content-Type"), "answered in the request's encoding")
			st := decodeStatus(t, resp, body)
			assert.Equal(t, int32(codes.InvalidArgument), st.GetCode())
			assert.NotEmpty(t, st.GetMessage())
			assert.Contains(t, st.GetMessage(), tt.wantMsg)
		})
	}
	assert.Empty(t, e.sampler.requests())
	assert.Equal(t, 0, e.logs.LogRecordCount())
	assert.Equal(t, int64(5), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "http"), attribute.String("outcome", "malformed")))
	assert.Len(t, e.logged.FilterMessageSnippet("Rejected a malformed OTLP request").All(), 1)
}

func TestHTTPTooLarge(t *testing.T) {
	const limit = 4096
	e := newEnv(t, envOptions{config: func(c *Config) {
		c.Protocols.HTTP.Get().ServerConfig.MaxRequestBodySize = limit
	}})
	big := mustProto(t, testTraces(60))
	require.Greater(t, len(big), limit)
	zipped := gzipped(t, big)
	require.Less(t, len(zipped), limit, "the compressed body is under the limit, the decompressed one is not")

	t.Run("content-length", func(t *testing.T) {
		resp, body := e.post(t, "/v1/traces", pbContentType, "", big)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
		st := decodeStatus(t, resp, body)
		assert.Contains(t, st.GetMessage(), "`protocols::http::max_request_body_size`")
		assert.Contains(t, st.GetMessage(), "4096 bytes (4 KiB)")
	})
	t.Run("chunked", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, e.url("/v1/traces"), io.MultiReader(bytes.NewReader(big)))
		require.NoError(t, err)
		req.ContentLength = -1
		req.Header.Set("Content-Type", jsonContentType)
		resp, body := e.do(t, req)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
		assert.Contains(t, decodeStatus(t, resp, body).GetMessage(), "request too large: the body is over the limit")
	})
	t.Run("gzip expands past the limit", func(t *testing.T) {
		resp, body := e.post(t, "/v1/traces", pbContentType, "gzip", zipped)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
		assert.Contains(t, decodeStatus(t, resp, body).GetMessage(), "request too large: the body is over the limit")
	})
	t.Run("logs", func(t *testing.T) {
		resp, body := e.post(t, "/v1/logs", pbContentType, "", big)
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", body)
	})
	assert.Empty(t, e.sampler.requests())
	assert.Equal(t, int64(3), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "http"), attribute.String("outcome", "malformed")))
	assert.Len(t, e.logged.FilterMessageSnippet("oversized").All(), 1)
}

func TestHTTPSamplerErrors(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := mustProto(t, testTraces(4))

	e.sampler.setErr(pushbackErr(t, 1500*time.Millisecond))
	resp, rb := e.post(t, "/v1/traces", pbContentType, "", body)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", rb)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"), "1.5 s rounds up")
	st := decodeStatus(t, resp, rb)
	assert.Equal(t, int32(codes.ResourceExhausted), st.GetCode())
	assert.Equal(t, "tracesift_sampler: buffer full", st.GetMessage())
	require.Len(t, st.GetDetails(), 1, "RetryInfo travels in the body too")

	resp, rb = e.post(t, "/v1/traces", jsonContentType, "", mustJSON(t, testTraces(2)))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", rb)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"))
	assert.Equal(t, int32(codes.ResourceExhausted), decodeStatus(t, resp, rb).GetCode())

	e.sampler.setErr(errors.New("tracesift_sampler: shut down, not accepting spans"))
	resp, rb = e.post(t, "/v1/traces", pbContentType, "", body)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", rb)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"), "told when to come back")
	assert.Equal(t, int32(codes.Unavailable), decodeStatus(t, resp, rb).GetCode())

	assert.Equal(t, int64(2), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "http"), attribute.String("outcome", "refused")))
	assert.Equal(t, int64(1), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "http"), attribute.String("outcome", "error")))
}

func TestHTTPLogsConsumerErrors(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantHTTP int
	}{
		{"retryable", errors.New("queue full"), http.StatusServiceUnavailable},
		{"permanent", consumererror.NewPermanent(errors.New("bad data")), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &fakeSampler{}
			cfg := testConfig()
			f := newFactory(samplerFactoryOf(s))
			r, err := f.CreateLogs(context.Background(), testSettings(), cfg, consumertest.NewErr(tt.err))
			require.NoError(t, err)
			require.NoError(t, r.Start(context.Background(), nopHost()))
			defer func() { require.NoError(t, r.Shutdown(context.Background())) }()

			pbBody, err := plogotlp.NewExportRequestFromLogs(testLogs(1)).MarshalProto()
			require.NoError(t, err)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Post("http://"+r.(*otlpRaw).httpAddr.String()+"/v1/logs",
				pbContentType, bytes.NewReader(pbBody))
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tt.wantHTTP, resp.StatusCode)

			// Traces are not served by a logs-only receiver.
			resp2, err := (&http.Client{Transport: tr}).Post("http://"+r.(*otlpRaw).httpAddr.String()+"/v1/traces",
				pbContentType, bytes.NewReader(nil))
			require.NoError(t, err)
			defer resp2.Body.Close()
			assert.Equal(t, http.StatusNotFound, resp2.StatusCode)
			_, started, _ := s.state()
			assert.Zero(t, started, "no traces pipeline, no sampler")
		})
	}
}

func TestHTTPUnsupported(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := mustProto(t, testTraces(2))

	for _, ct := range []string{"text/plain", "application/protobuf", "", "application/x-protobuf;;"} {
		resp, rb := e.post(t, "/v1/traces", ct, "", body)
		assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "Content-Type %q: %s", ct, rb)
		assert.Contains(t, string(rb), "unsupported media type")
	}
	resp, rb := e.post(t, "/v1/logs", "text/csv", "", body)
	assert.Equal(t, http.StatusUnsupportedMediaType, resp.StatusCode, "%s", rb)

	for _, m := range []string{http.MethodGet, http.MethodPut} {
		req, err := http.NewRequest(m, e.url("/v1/traces"), strings.NewReader(""))
		require.NoError(t, err)
		resp, rb := e.do(t, req)
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s", m, rb)
		assert.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
	}
	resp, _ = e.post(t, "/v1/metrics", pbContentType, "", body)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	assert.Empty(t, e.sampler.requests())
	assert.Equal(t, int64(6), counterValue(t, e, "otelcol_tracesift_receiver_requests",
		attribute.String("signal", "traces"), attribute.String("transport", "http"), attribute.String("outcome", "malformed")))
	assert.Len(t, e.logged.FilterMessageSnippet("unsupported method").All(), 1)
}

// TestHTTPBufferReuse: request buffers are pooled, so the sampler's copy
// must not change when the next request reuses the buffer.
func TestHTTPBufferReuse(t *testing.T) {
	e := newEnv(t, envOptions{})
	a, b := testTraces(10), testTraces(14)
	for _, td := range []ptrace.Traces{a, b, a} {
		resp, rb := e.post(t, "/v1/traces", pbContentType, "", mustProto(t, td))
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	}
	got := e.sampler.requests()
	require.Len(t, got, 3)
	requireSameTraces(t, a, got[0])
	requireSameTraces(t, b, got[1])
	requireSameTraces(t, a, got[2])
}

// Requests held (here: by the sampler) count against max_bytes_in_flight: a
// request that would pass it is answered 429 / ResourceExhausted with a
// delay, over HTTP and gRPC alike, and passes once the others are answered.
func TestMaxBytesInFlight(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *Config) {
		c.Protocols.GRPC.Get().MaxRecvMsgSizeMiB = 1
		c.Protocols.HTTP.Get().ServerConfig.MaxRequestBodySize = 1 << 20
		c.MaxBytesInFlight = 1 << 20
	}})
	big := mustProto(t, testTraces(2000))
	require.Greater(t, len(big), 1<<19, "two of them do not fit")
	require.Less(t, len(big), 1<<20)

	entered, release := make(chan struct{}), make(chan struct{})
	e.sampler.hold(entered, release)
	held := make(chan int, 1)
	go func() {
		resp, _ := e.post(t, "/v1/traces", pbContentType, "", big)
		held <- resp.StatusCode
	}()
	<-entered
	e.sampler.hold(nil, nil)

	resp, rb := e.post(t, "/v1/traces", pbContentType, "", big)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%s", rb)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Contains(t, decodeStatus(t, resp, rb).GetMessage(), "max_bytes_in_flight")
	_, err := ptraceotlp.NewGRPCClient(e.conn).Export(context.Background(),
		ptraceotlp.NewExportRequestFromTraces(testTraces(2000)))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)

	close(release)
	assert.Equal(t, http.StatusOK, <-held)
	resp, rb = e.post(t, "/v1/traces", pbContentType, "", big)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", rb)
	_, err = ptraceotlp.NewGRPCClient(e.conn).Export(context.Background(),
		ptraceotlp.NewExportRequestFromTraces(testTraces(2000)))
	require.NoError(t, err)
	assert.Zero(t, e.r.bodies.Budget.Used(), "every request gave its bytes back")
}

package limitsextension

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tracesift/tracesift/internal/extension/limitsextension/internal/metadata"
	"github.com/tracesift/tracesift/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func newTestLimits(t *testing.T, limit int64) (*limitsExtension, *componenttest.Telemetry, *observer.ObservedLogs) {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.WarnLevel)
	set := extensiontest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	ext, err := NewFactory().Create(context.Background(), set, &Config{MaxRequestBodySize: limit})
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext.(*limitsExtension), tel, logs
}

// serve runs, behind a real HTTP server, what confighttp builds around a
// middleware: the receiver's MaxBytesReader outside, the middleware, then a
// handler that, like the OTLP receiver, answers 400 when reading fails.
func serve(t *testing.T, ext *limitsExtension, receiverLimit int64, inner http.Handler) *httptest.Server {
	t.Helper()
	wrap, err := ext.GetHTTPHandler(context.Background())
	require.NoError(t, err)
	h, err := wrap(context.Background(), inner)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, receiverLimit)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// otlpLike reads the whole body and answers 400 with the read error, as
// otlpreceiver's readAndCloseBody does.
func otlpLike(called *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called.Add(1)
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "receiver says: "+err.Error())
			return
		}
		_, _ = w.Write([]byte("ok " + string(rune('0'+len(b)%10))))
	})
}

// chunked hides the length of b, so the client sends it chunked and only
// reading tells the server how big it is.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func do(t *testing.T, srv *httptest.Server, contentType string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/logs", body)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	client := srv.Client()
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestLimitsUnderLimitPassesThrough(t *testing.T) {
	ext, _, _ := newTestLimits(t, 100)
	var called atomic.Int32
	srv := serve(t, ext, 1000, otlpLike(&called))

	for _, body := range []io.Reader{
		strings.NewReader(strings.Repeat("x", 100)), // exactly the limit
		chunked{strings.NewReader(strings.Repeat("x", 99))},
	} {
		resp, got := do(t, srv, "text/plain", body)
		assert.Equal(t, http.StatusOK, resp.StatusCode, got)
		assert.True(t, strings.HasPrefix(got, "ok"), got)
	}
	assert.Equal(t, int32(2), called.Load())

	// A 400 that has nothing to do with size stays a 400.
	bad := serve(t, ext, 1000, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		http.Error(w, "malformed", http.StatusBadRequest)
	}))
	resp, got := do(t, bad, "", strings.NewReader("x"))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "malformed\n", got)
}

func TestLimitsContentLengthRejectedUnread(t *testing.T) {
	ext, tel, logs := newTestLimits(t, 100)
	var called atomic.Int32
	srv := serve(t, ext, 1000, otlpLike(&called))

	resp, got := do(t, srv, "text/plain", strings.NewReader(strings.Repeat("x", 101)))
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Zero(t, called.Load(), "inner handler must not run")
	assert.Contains(t, got, "limit of 100 bytes")
	assert.Contains(t, got, "`max_request_body_size` of the tracesift_limits extension")
	assert.True(t, resp.Close, "connection should close rather than drain an unread body")

	assert.Equal(t, int64(1), testutil.MetricSum(t, tel, "otelcol_tracesift_http_requests_too_large",
		attribute.String("reason", "content_length")))
	require.Equal(t, 1, logs.Len())
	assert.Contains(t, logs.All()[0].Message, "413")
}

func TestLimitsChunkedOverReceiverLimit(t *testing.T) {
	ext, tel, _ := newTestLimits(t, 1<<20)
	var called atomic.Int32
	srv := serve(t, ext, 1000, otlpLike(&called))

	resp, got := do(t, srv, "text/plain", chunked{strings.NewReader(strings.Repeat("x", 5000))})
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, got)
	assert.Equal(t, int32(1), called.Load())
	assert.Contains(t, got, "limit of 1000 bytes")
	assert.Contains(t, got, "the receiver's `max_request_body_size`")
	assert.NotContains(t, got, "receiver says", "the 400 body must not leak into the 413")
	assert.Equal(t, int64(1), testutil.MetricSum(t, tel, "otelcol_tracesift_http_requests_too_large",
		attribute.String("reason", "receiver")))
}

func TestLimitsChunkedOverOwnLimit(t *testing.T) {
	ext, tel, _ := newTestLimits(t, 2048)
	var called atomic.Int32
	srv := serve(t, ext, 1<<20, otlpLike(&called))

	resp, got := do(t, srv, "text/plain", chunked{strings.NewReader(strings.Repeat("x", 5000))})
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, got)
	assert.Contains(t, got, "limit of 2048 bytes (2 KiB)")
	assert.Contains(t, got, "tracesift_limits")
	assert.Equal(t, int64(1), testutil.MetricSum(t, tel, "otelcol_tracesift_http_requests_too_large",
		attribute.String("reason", "body_read")))
}

func TestLimitedBodyReadsExactlyTheLimit(t *testing.T) {
	b := &limitedBody{rc: io.NopCloser(strings.NewReader("0123456789")), limit: 10, remaining: 10}
	got, err := io.ReadAll(b)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(got))

	b = &limitedBody{rc: io.NopCloser(strings.NewReader("0123456789A")), limit: 10, remaining: 10}
	got, err = io.ReadAll(b)
	var mbe *http.MaxBytesError
	require.True(t, errors.As(err, &mbe), "got %v", err)
	assert.Equal(t, int64(10), mbe.Limit)
	assert.Equal(t, "0123456789", string(got))
	_, err = b.Read(make([]byte, 4))
	assert.True(t, errors.As(err, &mbe), "the error must stick")
}

func TestLimitsStatusEncoding(t *testing.T) {
	ext, _, _ := newTestLimits(t, 10)
	var called atomic.Int32
	srv := serve(t, ext, 1000, otlpLike(&called))

	resp, got := do(t, srv, "application/x-protobuf", bytes.NewReader(make([]byte, 11)))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, "application/x-protobuf", resp.Header.Get("Content-Type"))
	var st spb.Status
	require.NoError(t, proto.Unmarshal([]byte(got), &st))
	assert.Contains(t, st.GetMessage(), "max_request_body_size")

	resp, got = do(t, srv, "application/json; charset=utf-8", strings.NewReader(strings.Repeat(" ", 11)))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	st.Reset()
	require.NoError(t, protojson.Unmarshal([]byte(got), &st))
	assert.Contains(t, st.GetMessage(), "max_request_body_size")
}

// limitsHost hands the receiver our extension, as the collector's service
// does for the IDs listed under `extensions:`.
type limitsHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h limitsHost) GetExtensions() map[component.ID]component.Component { return h.exts }

// TestLimitsWithOTLPReceiver runs the real OTLP receiver with the middleware
// configured as users write it, which checks confighttp's ordering (the
// middleware sits inside its MaxBytesReader and decompressor) end to end.
func TestLimitsWithOTLPReceiver(t *testing.T) {
	const receiverLimit, ownLimit = 4096, 8192
	ext, tel, _ := newTestLimits(t, ownLimit)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"protocols": map[string]any{"http": map[string]any{
			"endpoint":              addr,
			"max_request_body_size": receiverLimit,
			"middlewares":           []any{map[string]any{"id": "tracesift_limits"}},
		}},
	}).Unmarshal(cfg))
	sink := new(consumertest.LogsSink)
	rcv, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(t, err)
	host := limitsHost{Host: componenttest.NewNopHost(),
		exts: map[component.ID]component.Component{component.NewID(metadata.Type): ext}}
	require.NoError(t, rcv.Start(context.Background(), host))
	t.Cleanup(func() { require.NoError(t, rcv.Shutdown(context.Background())) })

	logsOfSize := func(n int) []byte {
		ld := plog.NewLogs()
		ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().
			SetStr(strings.Repeat("x", n))
		b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
		require.NoError(t, err)
		return b
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(b)
		require.NoError(t, zw.Close())
		return buf.Bytes()
	}
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	post := func(body io.Reader, gzipped bool) (int, string) {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/logs", body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-protobuf")
		if gzipped {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var st spb.Status
		if resp.StatusCode != http.StatusOK {
			require.NoError(t, proto.Unmarshal(b, &st), "OTLP clients expect a Status message")
		}
		return resp.StatusCode, st.GetMessage()
	}

	code, msg := post(bytes.NewReader(logsOfSize(100)), false)
	assert.Equal(t, http.StatusOK, code, msg)
	assert.Equal(t, 1, sink.LogRecordCount())

	tests := []struct {
		name    string
		body    func() io.Reader
		gzipped bool
		want    string
	}{
		{"content-length over own limit", func() io.Reader { return bytes.NewReader(logsOfSize(ownLimit)) }, false,
			"limit of 8192 bytes (8 KiB), set by `max_request_body_size` of the tracesift_limits"},
		{"content-length over receiver limit", func() io.Reader { return bytes.NewReader(logsOfSize(receiverLimit)) }, false,
			"limit of 4096 bytes (4 KiB), set by the receiver's"},
		{"chunked over receiver limit", func() io.Reader { return chunked{bytes.NewReader(logsOfSize(receiverLimit))} }, false,
			"limit of 4096 bytes"},
		{"gzip bomb", func() io.Reader { return bytes.NewReader(gz(logsOfSize(64 << 10))) }, true,
			"limit of 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := post(tt.body(), tt.gzipped)
			assert.Equal(t, http.StatusRequestEntityTooLarge, code, msg)
			assert.Contains(t, msg, tt.want)
		})
	}
	assert.Equal(t, 1, sink.LogRecordCount(), "nothing oversized gets through")
	assert.Equal(t, int64(3), testutil.MetricSum(t, tel, "otelcol_tracesift_http_requests_too_large",
		attribute.String("reason", "receiver")))
	assert.Equal(t, int64(1), testutil.MetricSum(t, tel, "otelcol_tracesift_http_requests_too_large",
		attribute.String("reason", "content_length")))
}

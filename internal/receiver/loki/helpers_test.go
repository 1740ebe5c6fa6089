package loki

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/testutil"

	"github.com/golang/snappy"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tracesift/tracesift/internal/receiver/loki/internal/metadata"
)

// testNow is the receive time of every request in the tests.
var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

var testNowTS = pcommon.NewTimestampFromTime(testNow)

// testConfig listens on a free port of the loopback interface.
func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.ServerConfig.NetAddr.Endpoint = "127.0.0.1:0"
	return cfg
}

func testSettings() receiver.Settings { return receivertest.NewNopSettings(metadata.Type) }

// testEnv is a started receiver and a client for it.
type testEnv struct {
	r      *lokiReceiver
	logs   *consumertest.LogsSink
	tel    *componenttest.Telemetry
	logged *observer.ObservedLogs
	http   *http.Client
}

type envOptions struct {
	config func(*Config)
	// next replaces the LogsSink as the next consumer.
	next consumer.Logs
	// clock replaces the fixed testNow as the receive time.
	clock func() time.Time
}

func newEnv(t testing.TB, opts envOptions) *testEnv {
	t.Helper()
	cfg := testConfig()
	if opts.config != nil {
		opts.config(cfg)
	}
	require.NoError(t, cfg.Validate())
	e := &testEnv{logs: new(consumertest.LogsSink), tel: componenttest.NewTelemetry()}
	core, logged := observer.New(zapcore.InfoLevel)
	e.logged = logged
	set := testSettings()
	set.TelemetrySettings = e.tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	next := opts.next
	if next == nil {
		next = e.logs
	}
	lr, err := NewFactory().CreateLogs(context.Background(), set, cfg, next)
	require.NoError(t, err)
	e.r = lr.(*lokiReceiver)
	e.r.clock = func() time.Time { return testNow }
	if opts.clock != nil {
		e.r.clock = opts.clock
	}
	require.NoError(t, e.r.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, e.r.Shutdown(context.Background()))
		require.NoError(t, e.tel.Shutdown(context.Background()))
	})
	transport := &http.Transport{}
	e.http = &http.Client{Transport: transport, Timeout: time.Minute}
	t.Cleanup(transport.CloseIdleConnections)
	return e
}

func (e *testEnv) url(path string) string {
	return "http://" + e.r.addr.String() + path
}

// post sends body with the given Content-Type (none when empty) and
// Content-Encoding (when not empty) and returns the response with its body
// read.
func (e *testEnv) post(t testing.TB, path, contentType, contentEncoding string, body []byte) (*http.Response, []byte) {
	t.Helper()
	return testutil.Post(t, e.http, e.url(path), contentType, contentEncoding, body)
}

func (e *testEnv) do(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	return testutil.Do(t, e.http, req)
}

// counter is the value of an int64 counter's data point with exactly
// attrs; 0 when there is none.
func (e *testEnv) counter(t testing.TB, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	return testutil.Counter(t, e.tel, name, attrs...)
}

func (e *testEnv) requests(t testing.TB, ep, outcome string) int64 {
	t.Helper()
	return e.counter(t, "otelcol_tracesift_loki_requests", attribute.String("endpoint", ep), attribute.String("outcome", outcome))
}

func (e *testEnv) invalid(t testing.TB, reason string) int64 {
	t.Helper()
	return e.counter(t, "otelcol_tracesift_loki_records_invalid", attribute.String("reason", reason))
}

// lastLogs is what the last successful request delivered.
func (e *testEnv) lastLogs(t testing.TB) plog.Logs {
	t.Helper()
	all := e.logs.AllLogs()
	require.NotEmpty(t, all)
	return all[len(all)-1]
}

func requireSameLogs(t testing.TB, want, got plog.Logs) {
	t.Helper()
	m := &plog.JSONMarshaler{}
	wj, err := m.MarshalLogs(want)
	require.NoError(t, err)
	gj, err := m.MarshalLogs(got)
	require.NoError(t, err)
	require.JSONEq(t, string(wj), string(gj))
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// ---- building protobuf push requests by hand, as Promtail sends them

type pbEntry struct {
	secs  int64
	nanos int32
	noTS  bool
	line  string
	meta  [][2]string
}

type pbStream struct {
	labels  string
	entries []pbEntry
}

func appendPBEntry(b []byte, e pbEntry) []byte {
	var m []byte
	if !e.noTS {
		var ts []byte
		if e.secs != 0 {
			ts = protowire.AppendTag(ts, 1, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(e.secs))
		}
		if e.nanos != 0 {
			ts = protowire.AppendTag(ts, 2, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(int64(e.nanos)))
		}
		m = protowire.AppendTag(m, 1, protowire.BytesType)
		m = protowire.AppendBytes(m, ts)
	}
	m = protowire.AppendTag(m, 2, protowire.BytesType)
	m = protowire.AppendString(m, e.line)
	for _, kv := range e.meta {
		var p []byte
		p = protowire.AppendTag(p, 1, protowire.BytesType)
		p = protowire.AppendString(p, kv[0])
		p = protowire.AppendTag(p, 2, protowire.BytesType)
		p = protowire.AppendString(p, kv[1])
		m = protowire.AppendTag(m, 3, protowire.BytesType)
		m = protowire.AppendBytes(m, p)
	}
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

// pbPush encodes a logproto.PushRequest (uncompressed).
func pbPush(streams ...pbStream) []byte {
	var req []byte
	for _, s := range streams {
		var sb []byte
		sb = protowire.AppendTag(sb, 1, protowire.BytesType)
		sb = protowire.AppendString(sb, s.labels)
		for _, e := range s.entries {
			sb = appendPBEntry(sb, e)
		}
		sb = protowire.AppendTag(sb, 3, protowire.VarintType) // hash, ignored
		sb = protowire.AppendVarint(sb, 0xfeedface)
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, sb)
	}
	return req
}

func snappyPush(streams ...pbStream) []byte {
	return snappy.Encode(nil, pbPush(streams...))
}

const zapWarn = zapcore.WarnLevel

func attrEndpoint(ep string) attribute.KeyValue { return attribute.String("endpoint", ep) }

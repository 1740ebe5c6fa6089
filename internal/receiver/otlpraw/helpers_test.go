package otlpraw

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/testutil"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tracesift/tracesift/internal/otlpwire"
	"github.com/tracesift/tracesift/internal/receiver/otlpraw/internal/metadata"
	"github.com/tracesift/tracesift/internal/tailsampler"
)

// fakeSampler records the requests it gets (copies: the receiver reuses its
// buffers), scans them as the real sampler does, and checks that it is only
// called between its Start and its Shutdown.
type fakeSampler struct {
	mu       sync.Mutex
	started  int
	stopped  int
	inflight int
	reqs     [][]byte
	err      error // returned by ConsumeRawTraces after a successful scan
	problems []string
	cfg      *tailsampler.Config

	// onStart and onShutdown, when set, run first thing in Start and
	// Shutdown.
	onStart, onShutdown func()
	// entered and release, when set, hold ConsumeRawTraces after the scan:
	// it sends on entered, then waits for release to be closed.
	entered chan struct{}
	release chan struct{}
	// heldCtxErrs are the context errors of held calls once released.
	heldCtxErrs []error
}

// hold makes the next calls of ConsumeRawTraces wait for release after
// announcing themselves on entered.
func (f *fakeSampler) hold(entered, release chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entered, f.release = entered, release
}

var _ TraceSampler = (*fakeSampler)(nil)

func (f *fakeSampler) Start(context.Context, component.Host) error {
	if f.onStart != nil {
		f.onStart()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started++
	return nil
}

func (f *fakeSampler) Shutdown(context.Context) error {
	if f.onShutdown != nil {
		f.onShutdown()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inflight != 0 {
		f.problems = append(f.problems, fmt.Sprintf("Shutdown with %d ConsumeRawTraces calls in flight", f.inflight))
	}
	f.stopped++
	return nil
}

func (f *fakeSampler) ConsumeRawTraces(ctx context.Context, req []byte) error {
	f.mu.Lock()
	if f.started == 0 || f.stopped != 0 {
		f.problems = append(f.problems, fmt.Sprintf("ConsumeRawTraces with started=%d stopped=%d", f.started, f.stopped))
	}
	f.inflight++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()

	var r otlpwire.Request
	if err := otlpwire.Scan(req, &r); err != nil {
		// The real sampler wraps it in a permanent error, too.
		return consumererror.NewPermanent(fmt.Errorf("fake sampler: %w", err))
	}
	f.mu.Lock()
	entered, release := f.entered, f.release
	f.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
		<-release
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if entered != nil {
		f.heldCtxErrs = append(f.heldCtxErrs, ctx.Err())
	}
	f.reqs = append(f.reqs, bytes.Clone(req))
	return f.err
}

func (f *fakeSampler) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeSampler) requests() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.reqs...)
}

func (f *fakeSampler) state() (started, stopped int, problems []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started, f.stopped, append([]string(nil), f.problems...)
}

// samplerFactoryOf returns a SamplerFactory handing out s, recording the
// config it was given.
func samplerFactoryOf(s *fakeSampler) SamplerFactory {
	return func(_ context.Context, _ receiver.Settings, cfg *tailsampler.Config, _ consumer.Traces) (TraceSampler, error) {
		s.cfg = cfg
		return s, nil
	}
}

// testConfig enables both servers on free ports of the loopback interface.
func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = "127.0.0.1:0"
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = "127.0.0.1:0"
	return cfg
}

// testEnv is a started receiver with both signals, and clients for it.
type testEnv struct {
	r       *otlpRaw
	sampler *fakeSampler
	logs    *consumertest.LogsSink
	tel     *componenttest.Telemetry
	logged  *observer.ObservedLogs
	http    *http.Client
	conn    *grpc.ClientConn
}

type envOptions struct {
	config  func(*Config)
	sampler *fakeSampler
	// receiver, when set, adjusts the receiver before it starts.
	receiver func(*otlpRaw)
}

func newEnv(t testing.TB, opts envOptions) *testEnv {
	t.Helper()
	cfg := testConfig()
	if opts.config != nil {
		opts.config(cfg)
	}
	require.NoError(t, cfg.Validate())
	s := opts.sampler
	if s == nil {
		s = &fakeSampler{}
	}
	e := &testEnv{sampler: s, logs: new(consumertest.LogsSink), tel: componenttest.NewTelemetry()}
	core, logged := observer.New(zapcore.InfoLevel)
	e.logged = logged
	set := receivertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = e.tel.NewTelemetrySettings()
	set.Logger = zap.New(core)

	f := newFactory(samplerFactoryOf(s))
	tr, err := f.CreateTraces(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	lr, err := f.CreateLogs(context.Background(), set, cfg, e.logs)
	require.NoError(t, err)
	require.Same(t, tr, lr, "traces and logs must share one receiver")
	e.r = tr.(*otlpRaw)
	if opts.receiver != nil {
		opts.receiver(e.r)
	}

	require.NoError(t, e.r.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, e.r.Shutdown(context.Background()))
		require.NoError(t, e.tel.Shutdown(context.Background()))
		_, _, problems := s.state()
		require.Empty(t, problems)
	})

	transport := &http.Transport{}
	e.http = &http.Client{Transport: transport, Timeout: time.Minute}
	t.Cleanup(transport.CloseIdleConnections)
	if e.r.grpcAddr != nil {
		conn, err := grpc.NewClient(e.r.grpcAddr.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		e.conn = conn
		t.Cleanup(func() { require.NoError(t, conn.Close()) })
	}
	return e
}

func (e *testEnv) url(path string) string {
	return "http://" + e.r.httpAddr.String() + path
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

// testTraces builds a request of n spans over two services, with the
// fields and attributes the sampler and the store read.
func testTraces(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for res := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", res))
		rs.Resource().Attributes().PutStr("host.name", "node-1")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("io.opentelemetry.test")
		ss.Scope().SetVersion("1.0.0")
		for i := res; i < n; i += 2 {
			sp := ss.Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{0x4b, 0xf9, byte(i >> 8), byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
			sp.SetSpanID(pcommon.SpanID{0xee, byte(i >> 8), byte(i), 1, 2, 3, 4, 5})
			if i%3 != 0 {
				sp.SetParentSpanID(pcommon.SpanID{0xee, byte(i >> 8), byte(i), 1, 2, 3, 4, 6})
			}
			sp.SetName("GET /api/v1/cart/{id}")
			sp.SetKind(ptrace.SpanKindServer)
			start := base.Add(time.Duration(i) * time.Millisecond)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(25 * time.Millisecond)))
			a := sp.Attributes()
			a.PutStr("http.request.method", "GET")
			a.PutStr("http.route", "/api/v1/cart/{id}")
			a.PutInt("http.response.status_code", 200)
			a.PutStr("url.path", fmt.Sprintf("/api/v1/cart/%d", i))
			a.PutStr("server.address", "cart.internal")
			a.PutInt("server.port", 8080)
			a.PutStr("network.protocol.version", "1.1")
			a.PutStr("user_agent.original", "Mozilla/5.0 (X11; Linux x86_64)")
			a.PutStr("client.address", "10.0.0.17")
			a.PutBool("cache.hit", i%2 == 0)
			if i%7 == 0 {
				sp.Status().SetCode(ptrace.StatusCodeError)
				sp.Status().SetMessage("checkout failed")
				ev := sp.Events().AppendEmpty()
				ev.SetName("exception")
				ev.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Millisecond)))
				ev.Attributes().PutStr("exception.type", "java.lang.IllegalStateException")
			}
		}
	}
	return td
}

func testLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "payments")
	sl := rl.ScopeLogs().AppendEmpty()
	for i := range n {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + uint64(i)))
		lr.SetSeverityText("ERROR")
		lr.SetSeverityNumber(plog.SeverityNumberError)
		lr.Body().SetStr(fmt.Sprintf("payment declined %d", i))
		lr.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, byte(i)})
		lr.Attributes().PutStr("mdc.traceId", "0102030405060708090a0b0c0d0e0f10")
	}
	return ld
}

func mustProto(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return b
}

func mustJSON(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return b
}

// requireSameTraces checks that got, the bytes the sampler received, is a
// request otlpwire accepts and that it holds exactly want.
func requireSameTraces(t testing.TB, want ptrace.Traces, got []byte) {
	t.Helper()
	var req otlpwire.Request
	require.NoError(t, otlpwire.Scan(got, &req))
	require.Len(t, req.Spans, want.SpanCount())
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(got)
	require.NoError(t, err)
	require.JSONEq(t, string(mustJSON(t, want)), string(mustJSON(t, td)))
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

func testSettings() receiver.Settings { return receivertest.NewNopSettings(metadata.Type) }

func nopTraces() consumer.Traces { return consumertest.NewNop() }

func nopHost() component.Host { return componenttest.NewNopHost() }

// counterValue is the value of an int64 counter's data point with exactly
// attrs; 0 when there is none.
func counterValue(t testing.TB, e *testEnv, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	return testutil.Counter(t, e.tel, name, attrs...)
}

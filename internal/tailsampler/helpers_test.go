package tailsampler

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/tailsampler/internal/metadata"
)

// fakeClock is the tests' time source: it moves only when told to.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// harness is a started sampler with a fake clock, no ticker, a sink and a
// metric reader.
type harness struct {
	t     *testing.T
	p     *sampler
	sink  *consumertest.TracesSink
	tel   *componenttest.Telemetry
	clock *fakeClock
	cfg   *Config
	// offset is the last offset consumeWithReceipt handed over.
	offset atomic.Int64
}

type harnessOption func(*harnessSettings)

type harnessSettings struct {
	next   consumer.Traces
	logger *zap.Logger
	host   component.Host
}

func withNext(next consumer.Traces) harnessOption {
	return func(s *harnessSettings) { s.next = next }
}

func withLogger(l *zap.Logger) harnessOption {
	return func(s *harnessSettings) { s.logger = l }
}

func withHost(h component.Host) harnessOption {
	return func(s *harnessSettings) { s.host = h }
}

func newHarness(t *testing.T, cfg *Config, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, sink: new(consumertest.TracesSink), tel: componenttest.NewTelemetry(), clock: newFakeClock(), cfg: cfg}
	hs := harnessSettings{next: h.sink, host: componenttest.NewNopHost()}
	for _, o := range opts {
		o(&hs)
	}
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	if hs.logger != nil {
		set.TelemetrySettings.Logger = hs.logger
	}
	proc, err := NewFactory().CreateTraces(context.Background(), set, cfg, hs.next)
	require.NoError(t, err)
	h.p = proc.(*sampler)
	h.p.now = h.clock.Now
	h.p.tick = 0
	require.NoError(t, h.p.Start(context.Background(), hs.host))
	t.Cleanup(func() {
		require.NoError(t, h.p.Shutdown(context.Background()))
		require.NoError(t, h.tel.Shutdown(context.Background()))
		assert.Zero(t, h.p.mem.inUse.Load(), "every frame buffer was freed by the end of Shutdown")
	})
	return h
}

// testConfig: one shard, 1 s slow threshold, 10 s wait, no baseline, no
// adaptive slow rule, so only the rule under test keeps a trace.
func testConfig() *Config {
	cfg := createDefaultConfig()
	cfg.NumShards = 1
	cfg.BaselineRatio = 0
	cfg.DecisionCacheSize = 1000
	cfg.ShardQueueSize = 8
	// Stateful rules off unless a test is about them.
	cfg.BaselineMaxPerSecond = 0
	cfg.AdaptiveSlow.Enabled = false
	cfg.KeepRetryAmplification = 0
	cfg.KeepClockSkew = false
	// Process-wide: tiny test bounds would make the GC thrash.
	cfg.GoMemoryLimit = -1
	return cfg
}

func (h *harness) consume(td ptrace.Traces) {
	h.t.Helper()
	require.NoError(h.t, h.p.ConsumeTraces(context.Background(), td))
}

// decideAfterWait runs a decision pass decision_wait after the clock's now.
func (h *harness) decideAfterWait() {
	h.t.Helper()
	require.NoError(h.t, h.p.decideAll(h.clock.Now().Add(h.cfg.DecisionWait)))
}

// barrier returns once every batch sent so far has been ingested, without
// deciding anything.
func (h *harness) barrier() {
	h.t.Helper()
	require.NoError(h.t, h.p.decideAll(h.clock.Now()))
}

// counter sums the data points of an int64 sum metric whose attributes
// include all of attrs; a metric never recorded reads 0.
func (h *harness) counter(name string, attrs ...attribute.KeyValue) int64 {
	h.t.Helper()
	m, err := h.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(h.t, ok, "%s is a %T", name, m.Data)
	var total int64
	for _, dp := range sum.DataPoints {
		match := true
		for _, kv := range attrs {
			v, ok := dp.Attributes.Value(kv.Key)
			if !ok || v != kv.Value {
				match = false
				break
			}
		}
		if match {
			total += dp.Value
		}
	}
	return total
}

func tid(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], n*0x9e3779b97f4a7c15+1)
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

func sid(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n+1)
	return id
}

// spanSpec describes one test span; start and dur are relative to a fixed
// epoch.
type spanSpec struct {
	trace, span uint64
	parent      uint64 // span number of the parent; 0 makes a root span
	start, dur  time.Duration
	err         bool
	attrs       map[string]any
}

var specEpoch = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

// request puts the spans in one ResourceSpans/ScopeSpans per service.
func request(t testing.TB, service string, specs ...spanSpec) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	appendResource(t, td, service, specs...)
	return td
}

func appendResource(t testing.TB, td ptrace.Traces, service string, specs ...spanSpec) {
	t.Helper()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("test-scope")
	ss.Scope().SetVersion("1.0")
	for _, s := range specs {
		span := ss.Spans().AppendEmpty()
		span.SetTraceID(tid(s.trace))
		span.SetSpanID(sid(s.span))
		span.SetName("op")
		if s.parent != 0 {
			span.SetParentSpanID(sid(s.parent))
		}
		span.SetStartTimestamp(pcommon.NewTimestampFromTime(specEpoch.Add(s.start)))
		span.SetEndTimestamp(pcommon.NewTimestampFromTime(specEpoch.Add(s.start + s.dur)))
		if s.err {
			span.Status().SetCode(ptrace.StatusCodeError)
		}
		if s.attrs != nil {
			require.NoError(t, span.Attributes().FromRaw(s.attrs))
		}
	}
}

// keptSpans indexes what the sink received: trace id → span ids, and trace
// id → the sink calls it appeared in.
func keptSpans(sink *consumertest.TracesSink) (spans map[pcommon.TraceID][]pcommon.SpanID, calls map[pcommon.TraceID]map[int]bool) {
	spans = make(map[pcommon.TraceID][]pcommon.SpanID)
	calls = make(map[pcommon.TraceID]map[int]bool)
	for i, td := range sink.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					id := sp.TraceID()
					spans[id] = append(spans[id], sp.SpanID())
					if calls[id] == nil {
						calls[id] = make(map[int]bool)
					}
					calls[id][i] = true
				}
			}
		}
	}
	return spans, calls
}

// decideAll runs one decision pass on every shard as if the clock read now,
// and returns once the kept traces have been handed to the next consumer.
// Passes travel through the shard queues, so every batch accepted before the
// call is ingested first. It is the tests' ticker.
func (p *sampler) decideAll(now time.Time) error {
	passes := make([]decisionPass, len(p.shards))
	p.mu.RLock()
	if p.stopped {
		p.mu.RUnlock()
		return errStopped
	}
	if !p.started {
		p.mu.RUnlock()
		return errNotStarted
	}
	for i, s := range p.shards {
		passes[i] = decisionPass{now: now, done: make(chan struct{})}
		s.in <- shardMsg{pass: &passes[i]}
	}
	p.mu.RUnlock()
	for i := range passes {
		<-passes[i].done
	}
	return nil
}

package tailsampler

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/tracesift/tracesift/internal/tailsampler/internal/metadata"
)

func decisionAttrs(decision string, reason Reason) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("decision", decision), attribute.String("reason", reason.metricValue())}
}

func TestCapabilities(t *testing.T) {
	h := newHarness(t, testConfig())
	assert.False(t, h.p.Capabilities().MutatesData)
}

func TestErrorTraceInSeveralRequestsIsKeptWhole(t *testing.T) {
	h := newHarness(t, testConfig())

	// Trace 1 arrives from three services in three requests; its error is in
	// the middle one. Trace 2 is healthy, fast and interleaved with it.
	reqs := []ptrace.Traces{
		request(t, "frontend", spanSpec{trace: 1, span: 1, dur: 50 * time.Millisecond}, spanSpec{trace: 2, span: 10, dur: time.Millisecond}),
		request(t, "orders", spanSpec{trace: 1, span: 2, start: time.Millisecond, dur: 10 * time.Millisecond, err: true}),
		request(t, "db", spanSpec{trace: 2, span: 11, dur: time.Millisecond}, spanSpec{trace: 1, span: 3, start: 2 * time.Millisecond, dur: time.Millisecond}),
	}
	for i, td := range reqs {
		if i > 0 {
			h.clock.Advance(time.Second)
		}
		before := ptrace.NewTraces()
		td.CopyTo(before)
		h.consume(td)
		assert.Equal(t, before, td, "the request must not be modified")
	}

	// One nanosecond short of decision_wait after the last span: still waiting.
	require.NoError(t, h.p.decideAll(h.clock.Now().Add(h.cfg.DecisionWait-time.Nanosecond)))
	assert.Zero(t, h.sink.SpanCount())
	assert.Equal(t, int64(2), h.counter("otelcol_tracesift_sampler_traces_buffered"))

	h.decideAfterWait()
	require.Len(t, h.sink.AllTraces(), 1, "kept traces of one pass go in one call")
	spans, _ := keptSpans(h.sink)
	assert.ElementsMatch(t, []pcommon.SpanID{sid(1), sid(2), sid(3)}, spans[tid(1)])
	assert.NotContains(t, spans, tid(2))

	// Resource and scope travel with the spans.
	got := h.sink.AllTraces()[0]
	services := map[string]bool{}
	for _, rs := range got.ResourceSpans().All() {
		name, _ := rs.Resource().Attributes().Get("service.name")
		services[name.Str()] = true
		assert.Equal(t, "https://opentelemetry.io/schemas/1.26.0", rs.SchemaUrl())
		require.Equal(t, 1, rs.ScopeSpans().Len())
		assert.Equal(t, "test-scope", rs.ScopeSpans().At(0).Scope().Name())
	}
	assert.Equal(t, map[string]bool{"frontend": true, "orders": true, "db": true}, services)

	assert.Equal(t, int64(5), h.counter("otelcol_tracesift_sampler_spans_received"))
	assert.Equal(t, int64(1), h.counter("otelcol_tracesift_sampler_traces_decided", decisionAttrs(decisionKept, ReasonError)...))
	assert.Equal(t, int64(1), h.counter("otelcol_tracesift_sampler_traces_decided", decisionAttrs(decisionDropped, ReasonNone)...))
	assert.Equal(t, int64(2), h.counter("otelcol_tracesift_sampler_spans_dropped"))
	assert.Equal(t, int64(0), h.counter("otelcol_tracesift_sampler_traces_buffered"))
}

func TestKeepReasons(t *testing.T) {
	tests := []struct {
		name  string
		spans []spanSpec
		ratio float64
		want  Reason
	}{
		{"healthy fast trace dropped with baseline 0", []spanSpec{{dur: 10 * time.Millisecond}, {span: 1, dur: 5 * time.Millisecond}}, 0, ReasonNone},
		{"healthy fast trace kept with baseline 1", []spanSpec{{dur: 10 * time.Millisecond}}, 1, ReasonBaseline},
		{"slow exactly at threshold", []spanSpec{{dur: 400 * time.Millisecond}, {span: 1, start: 900 * time.Millisecond, dur: 100 * time.Millisecond}}, 0, ReasonSlow},
		{"just under the threshold", []spanSpec{{dur: 999 * time.Millisecond}}, 0, ReasonNone},
		{"timeout", []spanSpec{{dur: time.Millisecond, attrs: map[string]any{"rpc.grpc.status_code": 4}}}, 0, ReasonTimeout},
		{"error", []spanSpec{{dur: time.Millisecond, err: true}}, 0, ReasonError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.BaselineRatio = tt.ratio
			h := newHarness(t, cfg)
			for i := range tt.spans {
				tt.spans[i].trace = 7
			}
			h.consume(request(t, "svc", tt.spans...))
			h.decideAfterWait()

			decision := decisionKept
			if tt.want == ReasonNone {
				decision = decisionDropped
				assert.Zero(t, h.sink.SpanCount())
				assert.Equal(t, int64(len(tt.spans)), h.counter("otelcol_tracesift_sampler_spans_dropped"))
			} else {
				assert.Equal(t, len(tt.spans), h.sink.SpanCount())
			}
			assert.Equal(t, int64(1), h.counter("otelcol_tracesift_sampler_traces_decided", decisionAttrs(decision, tt.want)...))
		})
	}
}

func TestLateSpansFollowDecision(t *testing.T) {
	h := newHarness(t, testConfig())
	h.consume(request(t, "svc",
		spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true},
		spanSpec{trace: 2, span: 2, dur: time.Millisecond},
	))
	h.decideAfterWait()
	require.Equal(t, 1, h.sink.SpanCount())

	// Late spans of both traces in one request: the kept one is forwarded at
	// once (in its own call), the dropped one is not.
	h.clock.Advance(time.Minute)
	h.consume(request(t, "late",
		spanSpec{trace: 1, span: 3, dur: time.Millisecond},
		spanSpec{trace: 2, span: 4, dur: time.Millisecond},
		spanSpec{trace: 1, span: 5, dur: time.Millisecond},
	))
	h.barrier()

	require.Len(t, h.sink.AllTraces(), 2)
	late := h.sink.AllTraces()[1]
	assert.Equal(t, 2, late.SpanCount())
	spans, _ := keptSpans(h.sink)
	assert.ElementsMatch(t, []pcommon.SpanID{sid(1), sid(3), sid(5)}, spans[tid(1)])
	assert.NotContains(t, spans, tid(2))

	assert.Equal(t, int64(2), h.counter("otelcol_tracesift_sampler_spans_late", attribute.String("decision", decisionKept)))
	assert.Equal(t, int64(1), h.counter("otelcol_tracesift_sampler_spans_late", attribute.String("decision", decisionDropped)))
	assert.Equal(t, int64(2), h.counter("otelcol_tracesift_sampler_spans_dropped"), "the dropped trace's first span and its late one")
	assert.Equal(t, int64(0), h.counter("otelcol_tracesift_sampler_traces_buffered"), "late spans are not buffered")
}

func TestVeryLateSpanAfterEvictionStartsNewTrace(t *testing.T) {
	cfg := testConfig()
	cfg.DecisionCacheSize = 1
	h := newHarness(t, cfg)
	h.consume(request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true}))
	h.decideAfterWait()
	h.consume(request(t, "svc", spanSpec{trace: 2, span: 2, dur: time.Millisecond}))
	h.decideAfterWait() // evicts trace 1's decision

	h.consume(request(t, "svc", spanSpec{trace: 1, span: 3, dur: time.Millisecond}))
	h.barrier()
	assert.Equal(t, int64(1), h.counter("otelcol_tracesift_sampler_traces_buffered"), "decided on its own")
	assert.Equal(t, int64(0), h.counter("otelcol_tracesift_sampler_spans_late"))
	h.decideAfterWait()
	assert.Equal(t, 1, h.sink.SpanCount(), "the healthy fragment is dropped")
}

func TestShutdownFlushesBufferedTraces(t *testing.T) {
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	sink := new(consumertest.TracesSink)
	cfg := testConfig()
	cfg.NumShards = 3
	proc, err := NewFactory().CreateTraces(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	require.NoError(t, proc.Start(context.Background(), componenttest.NewNopHost()))

	require.NoError(t, proc.ConsumeTraces(context.Background(), request(t, "svc",
		spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true},
		spanSpec{trace: 2, span: 2, dur: time.Millisecond},
		// Slow is judged on what has arrived by then.
		spanSpec{trace: 3, span: 3, dur: 2 * time.Second},
	)))
	require.NoError(t, proc.ConsumeTraces(context.Background(), request(t, "svc",
		spanSpec{trace: 1, span: 4, dur: time.Millisecond},
	)))

	require.NoError(t, proc.Shutdown(context.Background()))
	spans, _ := keptSpans(sink)
	assert.ElementsMatch(t, []pcommon.SpanID{sid(1), sid(4)}, spans[tid(1)])
	assert.ElementsMatch(t, []pcommon.SpanID{sid(3)}, spans[tid(3)])
	assert.NotContains(t, spans, tid(2))

	err = proc.ConsumeTraces(context.Background(), request(t, "svc", spanSpec{trace: 9, span: 9}))
	require.ErrorIs(t, err, errStopped)
	require.NoError(t, proc.Shutdown(context.Background()), "second shutdown is a no-op")
}

func TestShutdownWithoutStart(t *testing.T) {
	proc, err := NewFactory().CreateTraces(context.Background(),
		processortest.NewNopSettings(metadata.Type), testConfig(), consumertest.NewNop())
	require.NoError(t, err)
	err = proc.ConsumeTraces(context.Background(), request(t, "svc", spanSpec{trace: 1, span: 1}))
	require.ErrorIs(t, err, errNotStarted)
	require.NoError(t, proc.Shutdown(context.Background()))
	require.NoError(t, proc.Shutdown(context.Background()))
	require.Error(t, proc.Start(context.Background(), componenttest.NewNopHost()), "no restart after shutdown")
}

func TestInvalidIDsAreSkippedAndCounted(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	h := newHarness(t, testConfig(), withLogger(zap.New(core)))

	td := request(t, "svc",
		spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true},
		spanSpec{trace: 1, span: 2, dur: time.Millisecond},
		spanSpec{trace: 1, span: 3, dur: time.Millisecond},
	)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	spans.At(1).SetTraceID(pcommon.NewTraceIDEmpty())
	spans.At(2).SetSpanID(pcommon.NewSpanIDEmpty())
	h.consume(td)
	second := request(t, "svc", spanSpec{trace: 2, span: 7})
	second.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetTraceID(pcommon.NewTraceIDEmpty())
	h.consume(second)
	h.decideAfterWait()

	assert.Equal(t, int64(4), h.counter("otelcol_tracesift_sampler_spans_received"))
	assert.Equal(t, int64(3), h.counter("otelcol_tracesift_sampler_spans_invalid"))
	spansKept, _ := keptSpans(h.sink)
	assert.Equal(t, []pcommon.SpanID{sid(1)}, spansKept[tid(1)])

	warns := logs.FilterMessageSnippet("empty trace id or span id").All()
	require.Len(t, warns, 1, "explained once, not per request")
	assert.Equal(t, zapcore.WarnLevel, warns[0].Level)
}

func TestNextConsumerErrorIsLoggedAndCounted(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	h := newHarness(t, testConfig(), withNext(consumertest.NewErr(errors.New("store unavailable"))), withLogger(zap.New(core)))
	h.consume(request(t, "svc",
		spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true},
		spanSpec{trace: 1, span: 2, dur: time.Millisecond},
	))
	h.decideAfterWait()

	assert.Equal(t, int64(1), h.counter("otelcol_tracesift_sampler_export_errors"))
	entries := logs.All()
	require.Len(t, entries, 1)
	fields := entries[0].ContextMap()
	assert.Equal(t, int64(2), fields["spans"])
	assert.Equal(t, "store unavailable", fields["error"])
}

// blockingConsumer holds the shard inside ConsumeTraces until released, to
// fill the shard's queue deterministically.
type blockingConsumer struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingConsumer) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (b *blockingConsumer) ConsumeTraces(context.Context, ptrace.Traces) error {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return nil
}

func TestConsumeReturnsContextErrorWhenQueueFull(t *testing.T) {
	cfg := testConfig()
	cfg.ShardQueueSize = 1
	next := &blockingConsumer{entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, cfg, withNext(next))

	h.consume(request(t, "svc", spanSpec{trace: 1, span: 1, err: true}))
	passDone := make(chan error, 1)
	go func() { passDone <- h.p.decideAll(h.clock.Now().Add(cfg.DecisionWait)) }()
	<-next.entered // the shard is now stuck forwarding trace 1

	h.consume(request(t, "svc", spanSpec{trace: 2, span: 2})) // fills the queue of 1
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := h.p.ConsumeTraces(ctx, request(t, "svc", spanSpec{trace: 3, span: 3}))
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "`shard_queue_size`")

	close(next.release)
	require.NoError(t, <-passDone)
}

// signalConsumer reports every call on a channel, so a test can wait for
// the ticker's work without sleeping.
type signalConsumer struct {
	consumertest.TracesSink
	calls chan int
}

func (s *signalConsumer) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	n := td.SpanCount()
	err := s.TracesSink.ConsumeTraces(ctx, td)
	s.calls <- n
	return err
}

func TestTickerDecidesQuietTraces(t *testing.T) {
	cfg := testConfig()
	cfg.DecisionWait = 50 * time.Millisecond
	next := &signalConsumer{calls: make(chan int, 10)}

	// Not the harness: this test keeps the real ticker, driven by the fake clock.
	proc, err := NewFactory().CreateTraces(context.Background(),
		processortest.NewNopSettings(metadata.Type), cfg, next)
	require.NoError(t, err)
	p := proc.(*sampler)
	clock := newFakeClock()
	p.now = clock.Now
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, p.Shutdown(context.Background())) }()

	require.NoError(t, p.ConsumeTraces(context.Background(), request(t, "svc", spanSpec{trace: 1, span: 1, err: true})))
	require.NoError(t, p.decideAll(clock.Now())) // ingested, nothing quiet yet
	clock.Advance(cfg.DecisionWait)

	select {
	case n := <-next.calls:
		assert.Equal(t, 1, n)
	case <-time.After(10 * time.Second):
		t.Fatal("the ticker did not decide the quiet trace")
	}
}

func TestManyTracesOverFourShardsEachKeptWholeOnce(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 4
	cfg.BaselineRatio = 1 // keep everything, so every trace must come out
	h := newHarness(t, cfg)

	const traces, spansPerTrace = 400, 6
	var all []spanSpec
	for tr := range uint64(traces) {
		for s := range uint64(spansPerTrace) {
			all = append(all, spanSpec{trace: tr + 1, span: tr*100 + s, dur: time.Millisecond, err: s == 3 && tr%5 == 0})
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	// Requests of 37 spans (so traces straddle requests), each in two
	// ResourceSpans, sent from four goroutines at once.
	var reqs []ptrace.Traces
	for i := 0; i < len(all); i += 37 {
		chunk := all[i:min(i+37, len(all))]
		half := len(chunk) / 2
		td := request(t, "a", chunk[:half]...)
		appendResource(t, td, "b", chunk[half:]...)
		reqs = append(reqs, td)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(reqs))
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(reqs); i += 4 {
				errs <- h.p.ConsumeTraces(context.Background(), reqs[i])
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	h.decideAfterWait()

	assert.LessOrEqual(t, len(h.sink.AllTraces()), 4, "one call per shard per pass")
	spans, calls := keptSpans(h.sink)
	require.Len(t, spans, traces)
	shardsUsed := map[int]bool{}
	for tr := range uint64(traces) {
		id := tid(tr + 1)
		want := make([]pcommon.SpanID, spansPerTrace)
		for s := range uint64(spansPerTrace) {
			want[s] = sid(tr*100 + s)
		}
		assert.ElementsMatch(t, want, spans[id], "trace %d whole, no span twice", tr+1)
		assert.Len(t, calls[id], 1, "trace %d forwarded in exactly one call", tr+1)
		shardsUsed[shardOf(id, 4)] = true
	}
	assert.Len(t, shardsUsed, 4)
	assert.Equal(t, int64(traces/5), h.counter("otelcol_tracesift_sampler_traces_decided", decisionAttrs(decisionKept, ReasonError)...))
	assert.Equal(t, int64(traces-traces/5), h.counter("otelcol_tracesift_sampler_traces_decided", decisionAttrs(decisionKept, ReasonBaseline)...))
}

// The collector's own shutdown check: with every trace kept, everything
// accepted before Shutdown must have reached the next consumer.
func TestCollectorShutdownVerifier(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 2
	cfg.BaselineRatio = 1
	processortest.VerifyShutdown(t, NewFactory(), cfg)
}

// ctxConsumer blocks until its context ends, like an exporter whose backend
// hangs.
type ctxConsumer struct{}

func (ctxConsumer) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (ctxConsumer) ConsumeTraces(ctx context.Context, _ ptrace.Traces) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestShutdownGivesUpWhenContextEnds(t *testing.T) {
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	proc, err := NewFactory().CreateTraces(context.Background(), set, testConfig(), ctxConsumer{})
	require.NoError(t, err)
	require.NoError(t, proc.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, proc.ConsumeTraces(context.Background(), request(t, "svc", spanSpec{trace: 1, span: 1, err: true})))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = proc.Shutdown(ctx)
	require.ErrorIs(t, err, context.Canceled)

	m, err := tel.GetMetric("otelcol_tracesift_sampler_export_errors")
	require.NoError(t, err, "the abandoned flush is counted")
	assert.NotEmpty(t, m.Data)
}

// Each shard gets its batches back once ingested, emptied: they hold no
// frames or strings of the traces that went through them.
func TestShardsRecycleBatchesEmptied(t *testing.T) {
	h := newHarness(t, testConfig())
	var specs []spanSpec
	for tr := uint64(1); tr <= 20; tr++ {
		specs = append(specs, spanSpec{trace: tr, span: 1, dur: time.Millisecond}, spanSpec{trace: tr, span: 2, parent: 1, dur: time.Millisecond})
	}
	h.consume(request(t, "svc", specs...))
	h.barrier()
	recycled := 0
	for _, sh := range h.p.shards {
		select {
		case b := <-sh.spare:
			recycled++
			assert.Empty(t, b)
			for i, c := range b[:cap(b)] {
				assert.True(t, reflect.ValueOf(c).IsZero(), "chunk %d of a recycled batch is cleared", i)
			}
			sh.spare <- b
		default:
		}
	}
	assert.Positive(t, recycled, "shards that ingested a batch keep it")

	// The next request fills recycled batches; its traces are whole.
	h.consume(request(t, "svc", spanSpec{trace: 99, span: 1, dur: time.Millisecond, err: true}))
	h.decideAfterWait()
	require.NoError(t, h.p.Shutdown(context.Background()))
	spans, _ := keptSpans(h.sink)
	assert.Len(t, spans[tid(99)], 1)

	// A batch of a huge request is not kept.
	sh := h.p.shards[0]
	for len(sh.spare) > 0 {
		<-sh.spare
	}
	sh.recycle(make([]traceChunk, 1, maxSpareChunks+1))
	assert.Empty(t, sh.spare)
}

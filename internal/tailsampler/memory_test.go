package tailsampler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestRootlessTraceWaitsForRootUntilMaxWait(t *testing.T) {
	cfg := testConfig()
	cfg.MaxWait = 30 * time.Second
	h := newHarness(t, cfg)

	// Trace 1: children only, the root never comes.
	h.consume(request(t, "svc", spanSpec{trace: 1, span: 2, parent: 1, dur: time.Millisecond, err: true}))
	// Trace 2: children first, the root after decision_wait (it ends last).
	h.consume(request(t, "svc", spanSpec{trace: 2, span: 2, parent: 1, dur: time.Millisecond, err: true}))
	h.clock.Advance(cfg.DecisionWait)
	require.NoError(t, h.p.decideAll(h.clock.Now()))
	assert.Zero(t, h.sink.SpanCount(), "quiet but rootless traces wait for their root")

	h.consume(request(t, "svc", spanSpec{trace: 2, span: 1, dur: 2 * time.Millisecond}))
	h.decideAfterWait()
	spans, _ := keptSpans(h.sink)
	assert.Len(t, spans[tid(2)], 2, "complete once the root arrived")
	assert.NotContains(t, spans, tid(1))

	h.clock.Advance(cfg.MaxWait)
	require.NoError(t, h.p.decideAll(h.clock.Now()))
	spans, _ = keptSpans(h.sink)
	assert.Len(t, spans[tid(1)], 1, "decided at max_wait")
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_early_decisions", attribute.String("why", "max_wait")))
}

func TestTraceThatNeverGoesQuietIsDecidedAtMaxWait(t *testing.T) {
	cfg := testConfig()
	cfg.MaxWait = 30 * time.Second
	h := newHarness(t, cfg)
	for i := range uint64(8) {
		h.consume(request(t, "svc", spanSpec{trace: 1, span: i + 1, dur: time.Millisecond, err: i == 0}))
		h.clock.Advance(5 * time.Second)
		require.NoError(t, h.p.decideAll(h.clock.Now()))
	}
	spans, _ := keptSpans(h.sink)
	assert.Len(t, spans[tid(1)], 8, "kept at max_wait; the spans after it follow as late spans")
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_early_decisions", attribute.String("why", "max_wait")))
	assert.EqualValues(t, 2, h.counter("otelcol_tracesift_sampler_spans_late"))
}

func TestTraceOverItsCapIsDecidedAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSpansPerTrace = 5
	h := newHarness(t, cfg)
	specs := func(from uint64) []spanSpec {
		var out []spanSpec
		for i := from; i < from+3; i++ {
			out = append(out, spanSpec{trace: 7, span: i, dur: time.Millisecond, err: i == 1})
		}
		return out
	}
	h.consume(request(t, "svc", specs(1)...))
	h.consume(request(t, "svc", specs(4)...))
	h.barrier()
	assert.Equal(t, 6, h.sink.SpanCount(), "kept when it reached max_spans_per_trace, without waiting")
	h.consume(request(t, "svc", specs(7)...))
	h.barrier()
	assert.Equal(t, 9, h.sink.SpanCount(), "later spans follow the decision")
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_early_decisions", attribute.String("why", "trace_limit")))

	// A healthy trace over its byte cap is dropped at once, not buffered.
	cfg2 := testConfig()
	cfg2.MaxTraceBytes = 1024 // 20 small spans account for ~2 KiB uncompressed
	cfg2.BufferCompression = false
	h2 := newHarness(t, cfg2)
	var big []spanSpec
	for i := range uint64(20) {
		big = append(big, spanSpec{trace: 8, span: i + 1, dur: time.Millisecond})
	}
	h2.consume(request(t, "svc", big...))
	h2.barrier()
	assert.Zero(t, h2.sink.SpanCount())
	assert.EqualValues(t, 20, h2.counter("otelcol_tracesift_sampler_spans_dropped"))
	assert.Zero(t, h2.p.shards[0].used.Load(), "decided traces release their memory")
}

// A flood of healthy traces with a few error traces mixed in, into a buffer
// far smaller than the flood: the bound holds at every step, the shard
// decides early instead of growing, and every error trace is kept whole.
func TestMemoryBoundUnderFlood(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("buffer_compression=%v", compress), func(t *testing.T) {
			testMemoryBoundUnderFlood(t, compress)
		})
	}
}

func testMemoryBoundUnderFlood(t *testing.T, compress bool) {
	cfg := testConfig()
	cfg.NumShards = 2
	cfg.MaxBufferedBytes = 2 << 20
	cfg.BufferCompression = compress
	h := newHarness(t, cfg)
	rng := rand.New(rand.NewPCG(1, 2))

	const traces = 3000
	errorTraces := map[pcommon.TraceID]bool{}
	pushbacks := 0
	for n := uint64(1); n <= traces; n += 10 {
		td := ptrace.NewTraces()
		for tr := n; tr < n+10; tr++ {
			isErr := tr%97 == 0
			if isErr {
				errorTraces[tid(tr)] = true
			}
			var specs []spanSpec
			for s := uint64(1); s <= 10; s++ {
				// A random payload per span, which no compression shrinks
				// much, so the flood outgrows the buffer either way.
				specs = append(specs, spanSpec{trace: tr, span: s, parent: s - 1, dur: time.Millisecond, err: isErr && s == 10,
					attrs: map[string]any{"http.route": "/api/orders/{id}", "peer.service": "payments",
						"payload": fmt.Sprintf("%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64())}})
			}
			appendResource(t, td, "svc", specs...)
		}
		for {
			err := h.p.ConsumeTraces(context.Background(), td)
			if err == nil {
				break
			}
			// A client retries after the delay it was given; here, after the
			// shards caught up.
			require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
			pushbacks++
			h.barrier()
		}
		for _, sh := range h.p.shards {
			require.LessOrEqual(t, sh.used.Load(), sh.budget, "shard %d over its share of max_buffered_bytes", sh.id)
		}
	}
	h.barrier()
	for _, sh := range h.p.shards {
		assert.LessOrEqual(t, sh.used.Load(), sh.high)
	}
	assert.Positive(t, h.counter("otelcol_tracesift_sampler_early_decisions", attribute.String("why", "memory")))
	require.NoError(t, h.p.Shutdown(context.Background()))

	spans, _ := keptSpans(h.sink)
	for id := range errorTraces {
		assert.Len(t, spans[id], 10, "error trace %s kept whole", id)
	}
	t.Logf("pushbacks: %d, early decisions: %d", pushbacks, h.counter("otelcol_tracesift_sampler_early_decisions"))
}

func TestPushbackWhenBufferFull(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBufferedBytes = 1 << 20
	h := newHarness(t, cfg)
	sh := h.p.shards[0]
	sh.addUsed(sh.budget - 100) // as if the shard were full of undecided traces

	err := h.p.ConsumeTraces(context.Background(), request(t, "svc", spanSpec{trace: 1, span: 1, err: true}))
	st, ok := status.FromError(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	assert.Contains(t, st.Message(), "`max_buffered_bytes`")
	require.Len(t, st.Details(), 1)
	ri, ok := st.Details()[0].(*errdetails.RetryInfo)
	require.True(t, ok)
	assert.Equal(t, pushbackRetryDelay, ri.GetRetryDelay().AsDuration())
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_pushbacks"))
	h.barrier()
	assert.Empty(t, h.p.shards[0].traces, "a refused request leaves nothing behind")

	sh.addUsed(-(sh.budget - 100))
	h.consume(request(t, "svc", spanSpec{trace: 1, span: 1, err: true}))
	h.decideAfterWait()
	assert.Equal(t, 1, h.sink.SpanCount(), "the retry goes through")
	assert.Zero(t, sh.used.Load())
}

func TestLatenessAndDecisionLatencyAreMeasured(t *testing.T) {
	cfg := testConfig()
	h := newHarness(t, cfg)
	h.consume(request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true}))
	h.clock.Advance(cfg.DecisionWait)
	require.NoError(t, h.p.decideAll(h.clock.Now()))
	h.clock.Advance(3 * time.Second)
	h.consume(request(t, "svc", spanSpec{trace: 1, span: 2, dur: time.Millisecond}))
	h.barrier()

	histogram := func(name string) metricdata.HistogramDataPoint[float64] {
		m, err := h.tel.GetMetric(name)
		require.NoError(t, err)
		hist, ok := m.Data.(metricdata.Histogram[float64])
		require.True(t, ok, "%s is a %T", name, m.Data)
		require.Len(t, hist.DataPoints, 1)
		return hist.DataPoints[0]
	}
	late := histogram("otelcol_tracesift_sampler_span_lateness_seconds")
	assert.EqualValues(t, 1, late.Count)
	assert.InDelta(t, 3, late.Sum, 1e-9, "3 s after the decision")
	decided := histogram("otelcol_tracesift_sampler_decision_latency_seconds")
	assert.EqualValues(t, 1, decided.Count)
	assert.InDelta(t, cfg.DecisionWait.Seconds(), decided.Sum, 1e-9)
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_spans_kept", attribute.String("reason", "error")))
}

// earlyDropConfig buffers little (1 MiB, uncompressed, so sizes are plain)
// for dropEarly.
func earlyDropConfig() *Config {
	cfg := testConfig()
	cfg.MaxBufferedBytes = 1 << 20
	cfg.BufferCompression = false
	return cfg
}

// dropEarly buffers healthy trace n, then floods the shard with healthy
// traces, sent by send, until memory pressure drops n before decision_wait:
// relief takes complete traces oldest first.
func dropEarly(t *testing.T, h *harness, n uint64, send func(ptrace.Traces)) {
	t.Helper()
	send(request(t, "svc", spanSpec{trace: n, span: 1, dur: time.Millisecond}))
	sh := h.p.shards[0]
	payload := map[string]any{"payload": strings.Repeat("x", 200)}
	for next := n + 1; ; next += 10 {
		h.barrier()
		if _, buffered := sh.traces[tid(n)]; !buffered {
			break
		}
		require.Less(t, next, n+100_000, "the flood never filled the buffer")
		td := ptrace.NewTraces()
		for tr := next; tr < next+10; tr++ {
			var specs []spanSpec
			for s := uint64(1); s <= 5; s++ {
				specs = append(specs, spanSpec{trace: tr, span: s, parent: s - 1, dur: time.Millisecond, attrs: payload})
			}
			appendResource(t, td, "svc", specs...)
		}
		send(td)
	}
	d, ok := sh.cache.get(tid(n))
	require.True(t, ok)
	require.False(t, d.kept)
	require.EqualValues(t, whyMemory, d.why)
	require.Zero(t, h.sink.SpanCount(), "the flood is healthy: nothing kept")
}

// A healthy trace dropped early under memory pressure that then fails: the
// ERROR span and every later span of it are kept, and the loss is counted
// and explained once.
func TestLateErrorKeepsTraceDroppedEarly(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	h := newHarness(t, earlyDropConfig(), withLogger(zap.New(core)))
	dropEarly(t, h, 1, h.consume)

	h.clock.Advance(time.Second)
	h.consume(request(t, "svc", spanSpec{trace: 1, span: 2, parent: 1, dur: time.Millisecond, err: true}))
	h.barrier()
	spans, _ := keptSpans(h.sink)
	assert.Equal(t, []pcommon.SpanID{sid(2)}, spans[tid(1)], "the late ERROR span is kept")
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_errors_lost", attribute.String("why", "memory")))

	h.consume(request(t, "svc", spanSpec{trace: 1, span: 3, parent: 1, dur: time.Millisecond}))
	h.barrier()
	spans, _ = keptSpans(h.sink)
	assert.Equal(t, []pcommon.SpanID{sid(2), sid(3)}, spans[tid(1)], "and so is what follows it")
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_errors_lost"), "counted once per trace")
	assert.EqualValues(t, 2, h.counter("otelcol_tracesift_sampler_spans_late", attribute.String("decision", "kept")))

	warns := logs.FilterMessageSnippet("Late error in a trace dropped early").All()
	require.Len(t, warns, 1)
	assert.Equal(t, "memory", warns[0].ContextMap()["why"])
}

// Only drops that cut decision_wait short give way to a late error (see
// revisable): at a trace limit, the trace was cut off while still arriving;
// at max_wait or on time it had all the wait configured, and a normal
// decision is final — the trace was judged whole, a span after it is late.
func TestLateErrorRevisesOnlyEarlyDrops(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop func(t *testing.T, h *harness) // drops healthy trace 1
		kept bool
	}{
		{"trace_limit", func(t *testing.T, h *harness) {
			h.consume(request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond},
				spanSpec{trace: 1, span: 3, parent: 1, dur: time.Millisecond}))
			h.barrier()
		}, true},
		{"max_wait", func(t *testing.T, h *harness) {
			// Rootless: it waits for its root until max_wait.
			h.consume(request(t, "svc", spanSpec{trace: 1, span: 3, parent: 1, dur: time.Millisecond}))
			h.clock.Advance(h.cfg.MaxWait)
			require.NoError(t, h.p.decideAll(h.clock.Now()))
		}, false},
		{"on_time", func(t *testing.T, h *harness) {
			h.consume(request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond}))
			h.clock.Advance(h.cfg.DecisionWait)
			require.NoError(t, h.p.decideAll(h.clock.Now()))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxSpansPerTrace = 2
			h := newHarness(t, cfg)
			tc.drop(t, h)
			require.Zero(t, h.sink.SpanCount(), "dropped")
			require.Empty(t, h.p.shards[0].traces)

			h.clock.Advance(time.Second)
			h.consume(request(t, "svc", spanSpec{trace: 1, span: 2, parent: 1, dur: time.Millisecond, err: true}))
			h.barrier()
			if tc.kept {
				assert.Equal(t, 1, h.sink.SpanCount())
				assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_errors_lost", attribute.String("why", tc.name)))
			} else {
				assert.Zero(t, h.sink.SpanCount(), "a normal decision is final")
				assert.Zero(t, h.counter("otelcol_tracesift_sampler_errors_lost"))
				assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_spans_late", attribute.String("decision", "dropped")))
			}
		})
	}
}

// In distributed mode the revised decision is recorded, so that a sampler
// taking the partition over keeps the trace's later spans too.
func TestLateErrorRecordsKeptDecision(t *testing.T) {
	h := newHarness(t, earlyDropConfig())
	log := &decisionRecorder{}
	h.p.decisions = log
	dropEarly(t, h, 1, func(td ptrace.Traces) { h.consumeWithReceipt(td) })
	require.Contains(t, log.got, Decision{TraceID: tid(1), Kept: false, Through: 1})

	failed := h.consumeWithReceipt(request(t, "svc", spanSpec{trace: 1, span: 2, parent: 1, dur: time.Millisecond, err: true}))
	h.barrier()
	assert.Equal(t, int32(1), failed.Load(), "forwarded, its receipt done")
	assert.Equal(t, Decision{TraceID: tid(1), Kept: true, Through: h.offset.Load()}, log.got[len(log.got)-1])
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_errors_lost"))

	later := h.consumeWithReceipt(request(t, "svc", spanSpec{trace: 1, span: 3, parent: 1, dur: time.Millisecond}))
	h.barrier()
	assert.Equal(t, int32(1), later.Load())
	assert.Equal(t, Decision{TraceID: tid(1), Kept: true, Through: h.offset.Load()}, log.got[len(log.got)-1])
	spans, _ := keptSpans(h.sink)
	assert.Equal(t, []pcommon.SpanID{sid(2), sid(3)}, spans[tid(1)])
}

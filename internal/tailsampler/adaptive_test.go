package tailsampler

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/attribute"
)

func TestRouteSketchQuantileWithinRelativeError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, scale := range []time.Duration{time.Microsecond * 50, time.Millisecond, 20 * time.Millisecond, time.Minute} {
		var r routeSketch
		for range 20000 {
			r.add(time.Duration(rng.Int64N(int64(100*scale))) + 1)
		}
		got := r.quantile(0.99)
		want := 99 * scale
		assert.InEpsilon(t, float64(want), float64(got), 0.06, "p99 of uniform(0, %s)", 100*scale)
	}
	var r routeSketch
	r.add(0)
	r.add(-time.Second)
	r.add(100 * time.Hour)
	assert.Equal(t, 3, r.count(), "out-of-range values land in the end buckets")
}

func TestRouteTableWindowsAndLimits(t *testing.T) {
	cfg := AdaptiveSlowConfig{Enabled: true, Quantile: 0.9, MinSamples: 10, MinDuration: 5 * time.Millisecond, Window: time.Minute, MaxRoutes: 1}
	rt := newRouteTable(cfg)
	now := time.Unix(1_700_000_000, 0)
	k := routeKey{service: "svc", operation: "GET /a"}
	for range 9 {
		slow, ok := rt.observe(k, 10*time.Millisecond, now)
		assert.True(t, ok)
		assert.False(t, slow, "not judged before min_samples")
	}
	rt.observe(k, 10*time.Millisecond, now)
	slow, _ := rt.observe(k, 30*time.Millisecond, now)
	assert.True(t, slow, "30ms on a 10ms route")
	slow, _ = rt.observe(k, 4*time.Millisecond, now)
	assert.False(t, slow, "under min_duration")

	_, ok := rt.observe(routeKey{service: "svc", operation: "GET /b"}, time.Second, now)
	assert.False(t, ok, "max_routes reached")

	// One window later the previous window still counts; two later, nothing does.
	slow, _ = rt.observe(k, 30*time.Millisecond, now.Add(time.Minute))
	assert.True(t, slow)
	slow, _ = rt.observe(k, 30*time.Millisecond, now.Add(3*time.Minute))
	assert.False(t, slow, "history expired")
}

func TestAdaptiveSlowKeepsOutliersOfTheirRoute(t *testing.T) {
	cfg := testConfig()
	cfg.AdaptiveSlow = AdaptiveSlowConfig{Enabled: true, Quantile: 0.99, MinSamples: 50, MinDuration: 10 * time.Millisecond,
		Window: 5 * time.Minute, MaxRoutes: 100}
	h := newHarness(t, cfg)
	n := uint64(0)
	send := func(service string, d time.Duration) uint64 {
		n++
		h.consume(request(t, service, spanSpec{trace: n, span: 1, dur: d}))
		return n
	}
	for i := range 200 {
		send("fast-api", 20*time.Millisecond+time.Duration(i%5)*time.Millisecond)
		send("batch-export", 500*time.Millisecond+time.Duration(i%7)*10*time.Millisecond)
	}
	h.decideAfterWait()
	assert.Zero(t, h.sink.SpanCount(), "nothing unusual yet")

	fastOutlier := send("fast-api", 300*time.Millisecond)
	batchNormal := send("batch-export", 300*time.Millisecond)
	h.clock.Advance(time.Second)
	h.decideAfterWait()
	spans, _ := keptSpans(h.sink)
	assert.Contains(t, spans, tid(fastOutlier), "300ms on a 20ms endpoint")
	assert.NotContains(t, spans, tid(batchNormal), "300ms on a 500ms job")
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_traces_decided", attribute.String("reason", "slow_route")))
}

func TestServiceOverrides(t *testing.T) {
	cfg := testConfig()
	off := false
	long := time.Hour
	cfg.Services = map[string]ServiceRules{"batch": {KeepErrors: &off, SlowThreshold: &long}}
	h := newHarness(t, cfg)
	h.consume(request(t, "batch", spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true}))
	h.consume(request(t, "batch", spanSpec{trace: 2, span: 1, dur: 2 * time.Second}))
	h.consume(request(t, "web", spanSpec{trace: 3, span: 1, dur: time.Millisecond, err: true}))
	h.consume(request(t, "web", spanSpec{trace: 4, span: 1, dur: 2 * time.Second}))
	h.decideAfterWait()
	spans, _ := keptSpans(h.sink)
	assert.NotContains(t, spans, tid(1), "errors not kept for batch")
	assert.NotContains(t, spans, tid(2), "2s is not slow for batch")
	assert.Contains(t, spans, tid(3))
	assert.Contains(t, spans, tid(4))
}

func TestBaselineCappedPerService(t *testing.T) {
	cfg := testConfig()
	cfg.BaselineRatio = 1
	cfg.BaselineMaxPerSecond = 2
	h := newHarness(t, cfg)
	for n := uint64(1); n <= 10; n++ {
		h.consume(request(t, "chatty", spanSpec{trace: n, span: 1, dur: time.Millisecond}))
	}
	h.consume(request(t, "quiet", spanSpec{trace: 11, span: 1, dur: time.Millisecond}))
	h.decideAfterWait()
	spans, _ := keptSpans(h.sink)
	assert.Len(t, spans, 3, "two of chatty's ten, and quiet's one")
	assert.Contains(t, spans, tid(11))
	assert.EqualValues(t, 8, h.counter("otelcol_tracesift_sampler_baseline_capped"))

	h.clock.Advance(time.Second)
	for n := uint64(12); n <= 15; n++ {
		h.consume(request(t, "chatty", spanSpec{trace: n, span: 1, dur: time.Millisecond}))
	}
	h.decideAfterWait()
	spans, _ = keptSpans(h.sink)
	assert.Len(t, spans, 5, "the bucket refills at the configured rate")
}

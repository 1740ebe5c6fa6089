package clockskew

import (
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// benchTrace is 10 spans on 4 hosts with 3 cross-host calls: web-1 → api-1
// (api-1 120 ms ahead), api-1 → db-1 (in sync), web-1 → cache-1 (cache-1
// 300 ms behind).
func benchTrace() *model.Trace {
	const api, cache = 120, -300
	return mkTrace(
		spec{"0000000000000001", "", srv, "web", "web-1", 0, ms(500)},
		spec{"0000000000000002", "0000000000000001", cli, "web", "web-1", ms(10), ms(210)},
		spec{"0000000000000003", "0000000000000002", srv, "api", "api-1", ms(15 + api), ms(205 + api)},
		spec{"0000000000000004", "0000000000000003", cli, "api", "api-1", ms(20 + api), ms(120 + api)},
		spec{"0000000000000005", "0000000000000004", srv, "db", "db-1", ms(25 + api), ms(115 + api)},
		spec{"0000000000000006", "0000000000000003", itl, "api", "api-1", ms(130 + api), ms(200 + api)},
		spec{"0000000000000007", "0000000000000001", cli, "web", "web-1", ms(220), ms(320)},
		spec{"0000000000000008", "0000000000000007", srv, "cache", "cache-1", ms(225 + cache), ms(315 + cache)},
		spec{"0000000000000009", "0000000000000001", itl, "web", "web-1", ms(330), ms(490)},
		spec{"000000000000000a", "0000000000000008", itl, "cache", "cache-1", ms(230 + cache), ms(310 + cache)},
	)
}

func TestBenchTrace(t *testing.T) {
	obs := PairOffsets(benchTrace())
	if len(obs) != 3 || obs[0].Offset != ms(120) || obs[1].Offset != 0 || obs[2].Offset != ms(-300) {
		t.Fatalf("PairOffsets: %+v", obs)
	}
	e := newEstimator(t, nil)
	observeN(e, t0, 5, benchTrace())
	f := e.Findings(benchTrace(), obs)
	if len(f) != 2 || f[0].Value != 120 || f[1].Value != -300 {
		t.Fatalf("Findings: %+v", f)
	}
}

func BenchmarkPairOffsets(b *testing.B) {
	tr := benchTrace()
	b.ReportAllocs()
	for b.Loop() {
		PairOffsets(tr)
	}
}

// BenchmarkObserve is the steady state: every pair's ring is full.
func BenchmarkObserve(b *testing.B) {
	e := newEstimator(b, nil)
	obs := PairOffsets(benchTrace())
	now := t0
	for range 300 {
		now = now.Add(time.Millisecond)
		e.Observe(now, obs)
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		e.Observe(now, obs)
	}
}

// BenchmarkObserveParallel is several sampler shards observing the same
// pairs at once.
func BenchmarkObserveParallel(b *testing.B) {
	e := newEstimator(b, nil)
	obs := PairOffsets(benchTrace())
	observeN(e, t0, 300, benchTrace())
	now := t0.Add(time.Hour)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e.Observe(now, obs)
		}
	})
}

// BenchmarkEstimate reads a full window after a new sample (no cached median).
func BenchmarkEstimate(b *testing.B) {
	e := newEstimator(b, nil)
	obs := []Observation{obsOf("web-1", "api-1", ms(120))}
	now := t0
	for range 300 {
		now = now.Add(time.Millisecond)
		e.Observe(now, obs)
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		e.Observe(now, obs)
		e.Estimate("web-1", "api-1")
	}
}

// BenchmarkFindings is Observe then Findings for each trace, as the sampler
// would call them: 3 pairs, 2 findings (medians recomputed every time).
func BenchmarkFindings(b *testing.B) {
	e := newEstimator(b, nil)
	tr := benchTrace()
	obs := PairOffsets(tr)
	now := t0
	for range 300 {
		now = now.Add(time.Millisecond)
		e.Observe(now, obs)
	}
	b.Run("observe+findings", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			now = now.Add(time.Millisecond)
			e.Observe(now, obs)
			if len(e.Findings(tr, obs)) != 2 {
				b.Fatal("want 2 findings")
			}
		}
	})
	b.Run("findings-cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			e.Findings(tr, obs)
		}
	})
}

func BenchmarkAdjust(b *testing.B) {
	e := newEstimator(b, nil)
	tr := benchTrace()
	observeN(e, t0, 300, tr)
	b.ReportAllocs()
	for b.Loop() {
		e.Adjust(tr)
	}
}

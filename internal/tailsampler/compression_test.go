package tailsampler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestCompressionGovernor(t *testing.T) {
	start := time.Unix(1000, 0)
	grace := 20 * time.Second
	g := newCompressionGovernor(grace, start)
	assert.True(t, g.compressing(start))
	assert.False(t, g.overloaded(start.Add(grace-time.Second)), "the buffer may still hold uncompressed traces")

	at := start.Add(grace)
	assert.True(t, g.overloaded(at), "relief with a compressed buffer: overloaded")
	assert.False(t, g.compressing(at))
	assert.False(t, g.overloaded(at.Add(time.Second)), "already paused")
	assert.False(t, g.compressing(at.Add(minCompressionPause-time.Second)))

	resumed := at.Add(minCompressionPause)
	assert.True(t, g.compressing(resumed), "tried again after the pause")
	assert.False(t, g.overloaded(resumed.Add(time.Second)), "relief right after resuming does not count")
	again := resumed.Add(grace)
	assert.True(t, g.overloaded(again))
	assert.Equal(t, again.Add(2*minCompressionPause).UnixNano(), g.pausedUntil.Load(), "the pause doubles while the overload lasts")

	for range 5 {
		next := time.Unix(0, g.pausedUntil.Load())
		g.compressing(next)
		g.overloaded(next.Add(grace))
	}
	assert.Equal(t, maxCompressionPause, g.pause, "capped")

	later := time.Unix(0, g.pausedUntil.Load()).Add(time.Hour)
	assert.True(t, g.compressing(later))
	assert.True(t, g.overloaded(later.Add(grace)))
	assert.Equal(t, minCompressionPause, g.pause, "an overload long after the last one starts over")
	assert.EqualValues(t, 8, g.pauses)
}

// Under a flood that no buffer holds, compression is paused, and frames are
// stored uncompressed until the pause ends.
func TestOverloadPausesCompression(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBufferedBytes = 2 << 20
	h := newHarness(t, cfg)
	// The governor's clock is the harness's: compression has run long enough.
	h.p.dicts.gov = newCompressionGovernor(2*cfg.DecisionWait, h.clock.Now().Add(-time.Hour))
	for n := uint64(1); h.counter("otelcol_tracesift_sampler_compression_pauses") == 0 && n < 20000; n += 50 {
		td := ptraceFlood(t, n, 50)
		h.consume(td)
		h.barrier()
	}
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_compression_pauses"))
	assert.Nil(t, h.p.dicts.codecFor([]byte("x"), 0, h.clock.Now()), "uncompressed while paused")
	h.clock.Advance(minCompressionPause)
	assert.NotNil(t, h.p.dicts.codecFor([]byte("x"), 0, h.clock.Now()), "compressing again after the pause")
}

// ptraceFlood is count healthy 10-span traces from number first on, with a
// random payload per span so that compression cannot make them small.
func ptraceFlood(t *testing.T, first uint64, count int) ptrace.Traces {
	td := ptrace.NewTraces()
	for tr := first; tr < first+uint64(count); tr++ {
		var specs []spanSpec
		for s := uint64(1); s <= 10; s++ {
			specs = append(specs, spanSpec{trace: tr, span: s, parent: s - 1, dur: time.Millisecond,
				attrs: map[string]any{"payload": fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())}})
		}
		appendResource(t, td, "svc", specs...)
	}
	return td
}

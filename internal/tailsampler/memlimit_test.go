package tailsampler

import (
	"context"
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The samplers of a process hold the Go memory limit together and give the
// limit before back when the last one stops.
func TestMemoryLimitIsHeldAndGivenBack(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "") // the runtime read it at start; the holder must not see it
	orig := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	h := &memoryLimitHolder{held: map[*sampler]int64{}}
	a, b := &sampler{}, &sampler{}

	assert.Equal(t, int64(100<<20), h.hold(a, 100<<20))
	assert.Equal(t, int64(150<<20), h.hold(b, 50<<20), "the samplers' limits add up")
	assert.Equal(t, int64(150<<20), debug.SetMemoryLimit(-1))
	h.release(a)
	assert.Equal(t, int64(50<<20), debug.SetMemoryLimit(-1))
	h.release(a) // twice: nothing more
	assert.Equal(t, int64(50<<20), debug.SetMemoryLimit(-1))
	h.release(b)
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "no limit again, as before")

	// A higher limit set before stays, and comes back.
	debug.SetMemoryLimit(1 << 30)
	assert.Equal(t, int64(1<<30), h.hold(a, 100<<20))
	h.release(a)
	assert.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1))

	assert.Zero(t, h.hold(a, 0), "0: nothing to hold")
	t.Setenv("GOMEMLIMIT", "2GiB")
	assert.Zero(t, h.hold(a, 100<<20), "GOMEMLIMIT wins")
	assert.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1))
}

// A sampler that starts and stops leaves the process's limit as it found it.
func TestSamplerGivesTheMemoryLimitBack(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	orig := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(orig) })
	cfg := testConfig()
	cfg.GoMemoryLimit = 1 << 40 // far above what the test uses
	h := newHarness(t, cfg)
	assert.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1))
	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}

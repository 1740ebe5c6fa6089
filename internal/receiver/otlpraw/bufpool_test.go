package otlpraw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequestPoolSizes(t *testing.T) {
	var p requestPool
	for _, tc := range []struct{ n, wantCap int }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {150_000, 262_144},
		{1 << 24, 1 << 24}, {1<<24 + 1, 1<<24 + 1},
	} {
		b := p.Get(tc.n)
		require.Len(t, *b, tc.n)
		assert.Equal(t, tc.wantCap, cap(*b), "buffer for %d bytes", tc.n)
		p.Put(b)
	}
}

func TestRequestPoolTakesBackItsOwnShapes(t *testing.T) {
	var p requestPool
	p.Put(p.Get(10_000))
	// From the pool or, after a GC emptied it, a fresh one: the same shape.
	again := p.Get(9_000)
	require.Len(t, *again, 9_000)
	assert.Equal(t, 16_384, cap(*again))
	// A buffer of the wrong shape is not taken back.
	odd := make([]byte, 10, 5000)
	p.Put(&odd)
	assert.Equal(t, 4096, cap(*p.Get(100)))
}

package tailsampler

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlabClasses(t *testing.T) {
	for _, tc := range []struct{ n, class, size int }{
		{1, 0, 64}, {64, 0, 64}, {65, 1, 72}, {72, 1, 72}, {73, 2, 80}, {128, 8, 128},
		{129, 9, 144}, {1000, 32, 1024}, {1025, 33, 1152}, {maxSlabBlock, numSlabClasses - 1, maxSlabBlock},
	} {
		class, size := slabClassOf(tc.n)
		assert.Equal(t, tc.class, class, "class of %d", tc.n)
		assert.Equal(t, tc.size, size, "size of %d", tc.n)
	}
	// Every size maps to the smallest class that holds it, at most 12.5 %
	// larger, and classes grow with sizes.
	prevClass, prevSize := -1, 0
	for n := 1; n <= maxSlabBlock; n++ {
		class, size := slabClassOf(n)
		require.GreaterOrEqual(t, size, n)
		require.LessOrEqual(t, size, max(minSlabBlock, n+n/8+1), "size %d", n)
		require.GreaterOrEqual(t, class, prevClass)
		if class == prevClass {
			require.Equal(t, prevSize, size)
		}
		prevClass, prevSize = class, size
	}
}

func TestFrameMemoryReusesFreedBlocks(t *testing.T) {
	var m frameMemory
	defer m.close()
	a := m.alloc(100)
	require.NotZero(t, a.ref, "small buffers come from a slab")
	assert.Len(t, a.b, 100)
	assert.Equal(t, 104, cap(a.b))
	for i := range a.b {
		a.b[i] = byte(i)
	}
	b := m.alloc(100)
	assert.NotEqual(t, a.ref, b.ref)
	assert.EqualValues(t, 208, m.inUse.Load())
	assert.EqualValues(t, slabSize, m.mapped.Load())

	m.free(a)
	c := m.alloc(97) // same class
	assert.Equal(t, a.ref, c.ref, "a freed block is reused first")
	m.free(b, c, frameBuf{})
	assert.Zero(t, m.inUse.Load())
	assert.EqualValues(t, slabSize, m.mapped.Load(), "an empty slab is kept warm")
	assert.Len(t, m.warm, 1)

	big := m.alloc(maxSlabBlock + 1)
	assert.Zero(t, big.ref, "large frames live on the Go heap")
	assert.Len(t, big.b, maxSlabBlock+1)
	m.free(big)
	assert.Zero(t, m.inUse.Load())
	assert.Zero(t, m.alloc(0).ref)
}

// A released slab serves another class, and the refs the first class kept
// to it are stale: never handed out again.
func TestFrameMemoryReleasedSlabServesAnotherClass(t *testing.T) {
	var m frameMemory
	defer m.close()
	small := []frameBuf{m.alloc(100), m.alloc(100), m.alloc(100)}
	m.free(small...)
	require.Len(t, m.warm, 1)
	require.Len(t, m.slabs, 1)
	cls, _ := slabClassOf(100)
	assert.Empty(t, m.classes[cls].free, "refs into the released slab were dropped from the free stack")
	assert.Zero(t, m.classes[cls].stale)

	big := m.alloc(5000)
	require.NotZero(t, big.ref)
	assert.Len(t, m.slabs, 1, "the released slab was reused")
	assert.EqualValues(t, slabSize, m.mapped.Load())
	for i := range big.b {
		big.b[i] = 0xee
	}
	again := m.alloc(100)
	require.NotZero(t, again.ref)
	assert.Len(t, m.slabs, 2, "a stale ref was not handed out: a new slab was carved")
	for i := range again.b {
		again.b[i] = 0x11
	}
	for _, x := range big.b {
		require.Equal(t, byte(0xee), x, "blocks of the two classes do not overlap")
	}
	m.free(big, again)
	assert.Zero(t, m.inUse.Load())
	assert.Len(t, m.warm, 2)

	// Beyond warmSlabs, empty slabs give their pages back.
	var bufs []frameBuf
	for range warmSlabs + 4 {
		bufs = append(bufs, m.alloc(maxSlabBlock)) // 16 blocks a slab
		for range 15 {
			bufs = append(bufs, m.alloc(maxSlabBlock))
		}
	}
	assert.EqualValues(t, (warmSlabs+4)*slabSize, m.mapped.Load())
	m.free(bufs...)
	assert.EqualValues(t, warmSlabs*slabSize, m.mapped.Load())
	assert.Len(t, m.empty, 4)
}

func TestFrameMemoryAfterClose(t *testing.T) {
	var m frameMemory
	a := m.alloc(100)
	m.close()
	assert.Zero(t, m.mapped.Load())
	m.free(a) // ignored: the slab is gone
	b := m.alloc(100)
	assert.Zero(t, b.ref, "served from the heap once closed")
	b.b[99] = 1
}

func TestFrameMemoryConcurrent(t *testing.T) {
	var m frameMemory
	defer m.close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var held []frameBuf
			for i := range 2000 {
				n := 1 + (i*7919+g*104729)%5000
				f := m.alloc(n)
				for j := range f.b {
					f.b[j] = byte(g)
				}
				held = append(held, f)
				if len(held) > 50 {
					for _, h := range held[:25] {
						for _, x := range h.b {
							if x != byte(g) {
								t.Errorf("goroutine %d: block %x overwritten", g, h.ref)
								return
							}
						}
					}
					m.free(held[:25]...)
					held = append(held[:0], held[25:]...)
				}
			}
			m.free(held...)
		})
	}
	wg.Wait()
	assert.Zero(t, m.inUse.Load())
}

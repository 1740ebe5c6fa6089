package tailsampler

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// frameMemory holds the buffered frames outside the Go heap, in slabs of
// anonymous memory carved into blocks of size classes, each freed explicitly
// when its trace is decided. The buffer is the process's largest consumer of
// memory and its lifetimes are known exactly, so keeping it off the heap
// spares it the garbage collector's headroom (with GOGC 100 the heap grows to
// twice what is live before a collection): the process's resident memory is
// the frames, plus a Go heap sized by the much smaller per-trace bookkeeping.
//
// Blocks are never returned to the operating system while the sampler runs;
// a freed block goes on its class's free list for the next frame of about
// its size. Classes step by an eighth of a power of two, so rounding wastes
// at most 12.5 % (about 6 % on average). Frames larger than maxSlabBlock
// (traces of hundreds of spans in one request) live on the Go heap.
//
// All methods are safe for concurrent use: receivers allocate, shards free.
type frameMemory struct {
	mu      sync.Mutex
	slabs   [][]byte
	classes [numSlabClasses]slabClass
	closed  bool

	mapped atomic.Int64 // bytes of slabs mapped
	inUse  atomic.Int64 // bytes of blocks handed out
}

// frameBuf is one frame buffer: b's capacity is its block's size.
type frameBuf struct {
	b []byte
	// ref locates a slab block: slab index+1 in the upper 32 bits, offset in
	// the lower ones. 0 means b is on the Go heap (or nil): nothing to free.
	ref uint64
}

type slabClass struct {
	// free holds the refs of the class's free blocks, most recently freed
	// last: a stack of its own rather than links inside the blocks, so that
	// allocating never reads memory that has gone cold.
	free       []uint64
	slab       uint32 // index+1 of the slab being carved, 0 for none
	next, size uint32 // next uncarved offset in it; the slab's size
}

const (
	minSlabBlock   = 64
	maxSlabBlock   = 64 << 10
	numSlabClasses = 1 + 8*(16-6) // 64, then 8 classes per doubling up to 64 KiB
	smallSlabSize  = 256 << 10
)

// slabClassOf returns the class of an n-byte block (0 < n <= maxSlabBlock)
// and the class's block size.
func slabClassOf(n int) (class, size int) {
	if n <= minSlabBlock {
		return 0, minSlabBlock
	}
	b := bits.Len(uint(n - 1)) // 2^(b-1) < n <= 2^b, b >= 7
	step := 1 << (b - 4)
	size = (n + step - 1) &^ (step - 1)
	j := size>>(b-4) - 8 // 1..8
	return 1 + (b-7)*8 + j - 1, size
}

func slabSizeFor(block int) int {
	return max(smallSlabSize, 16*block)
}

// alloc returns a buffer of length n.
func (m *frameMemory) alloc(n int) frameBuf {
	if n == 0 {
		return frameBuf{}
	}
	if n > maxSlabBlock {
		return frameBuf{b: make([]byte, n)}
	}
	class, size := slabClassOf(n)
	m.mu.Lock()
	ref, ok := m.take(class, size)
	var slab []byte
	if ok {
		slab = m.slabs[ref>>32-1]
	}
	m.mu.Unlock()
	if !ok {
		return frameBuf{b: make([]byte, n)}
	}
	m.inUse.Add(int64(size))
	off := int(uint32(ref))
	return frameBuf{b: slab[off : off+n : off+size], ref: ref}
}

// take pops a free block of the class or carves a new one; m.mu is held.
func (m *frameMemory) take(class, size int) (uint64, bool) {
	if m.closed {
		return 0, false
	}
	c := &m.classes[class]
	if n := len(c.free); n > 0 {
		ref := c.free[n-1]
		c.free = c.free[:n-1]
		return ref, true
	}
	if c.slab == 0 || int(c.next)+size > int(c.size) {
		n := slabSizeFor(size)
		slab, err := mapSlab(n)
		if err != nil {
			return 0, false // the heap serves instead
		}
		m.slabs = append(m.slabs, slab)
		m.mapped.Add(int64(n))
		c.slab, c.next, c.size = uint32(len(m.slabs)), 0, uint32(n)
	}
	ref := uint64(c.slab)<<32 | uint64(c.next)
	c.next += uint32(size)
	return ref, true
}

// free returns the buffers' blocks to their classes. Their bytes must not be
// used afterwards.
func (m *frameMemory) free(bufs ...frameBuf) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var released int64
	for _, f := range bufs {
		if f.ref == 0 || m.closed {
			continue
		}
		class, size := slabClassOf(cap(f.b))
		c := &m.classes[class]
		c.free = append(c.free, f.ref)
		released += int64(size)
	}
	m.inUse.Add(-released)
}

// close unmaps every slab. Buffers still held become invalid, so it runs
// only once nothing can use them; allocations afterwards come from the heap
// and frees are ignored.
func (m *frameMemory) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	for _, s := range m.slabs {
		unmapSlab(s)
	}
	m.slabs = nil
	for i := range m.classes {
		m.classes[i] = slabClass{}
	}
	m.mapped.Store(0)
	// inUse is left as it is: anything but 0 here is a leak (tests check).
}

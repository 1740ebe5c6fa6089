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
// A freed block goes on its class's free stack for the next frame of about
// its size. A slab whose blocks are all free is released: its pages go back
// to the operating system and the slab can serve any class later, so a
// change in the mix of frame sizes (compression paused or resumed, a new
// kind of traffic) does not leave memory stranded in classes nobody uses.
// Classes step by an eighth of a power of two, so rounding wastes at most
// 12.5 % (about 6 % on average). Frames larger than maxSlabBlock (traces of
// hundreds of spans in one request) live on the Go heap.
//
// All methods are safe for concurrent use: receivers allocate, shards free.
type frameMemory struct {
	mu    sync.Mutex
	slabs []slab
	// Empty slabs, ready for any class: warm ones keep their pages (up to
	// warmSlabs, so that a slab emptying and refilling at a steady load does
	// not fault its pages in again), released ones gave them back.
	warm, empty []uint32
	classes     [numSlabClasses]slabClass
	closed      bool

	mapped atomic.Int64 // bytes of slabs held (carved, not released)
	inUse  atomic.Int64 // bytes of blocks handed out
}

type slab struct {
	mem   []byte
	class int16  // the class it is carved for; -1 when released
	gen   uint32 // incremented on every release: refs of an earlier life are stale
	live  int32  // blocks handed out
}

// frameBuf is one frame buffer: b's capacity is its block's size.
type frameBuf struct {
	b []byte
	// ref locates a slab block (see makeRef); 0 means b is on the Go heap (or
	// nil): nothing to free.
	ref uint64
}

type slabClass struct {
	// free holds the refs of the class's free blocks, most recently freed
	// last: a stack of its own rather than links inside the blocks, so that
	// allocating never reads memory that has gone cold. Refs into slabs
	// released since are stale and skipped.
	free  []uint64
	stale int    // stale refs in free, to know when to compact it
	slab  uint32 // index+1 of the slab being carved, 0 for none
	next  uint32 // next uncarved offset in it
}

const (
	minSlabBlock   = 64
	maxSlabBlock   = 64 << 10
	numSlabClasses = 1 + 8*(16-6) // 64, then 8 classes per doubling up to 64 KiB
	slabSize       = 1 << 20
	warmSlabs      = 16
)

// A ref is slab index+1 (20 bits), the slab's generation (24 bits) and the
// block's offset in it (20 bits).
func makeRef(slabIndex int, gen uint32, off uint32) uint64 {
	return uint64(slabIndex+1)<<44 | uint64(gen&(1<<24-1))<<20 | uint64(off)
}

func splitRef(ref uint64) (slabIndex int, gen uint32, off uint32) {
	return int(ref>>44) - 1, uint32(ref>>20) & (1<<24 - 1), uint32(ref) & (1<<20 - 1)
}

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
	ref, mem, ok := m.take(class, size)
	m.mu.Unlock()
	if !ok {
		return frameBuf{b: make([]byte, n)}
	}
	m.inUse.Add(int64(size))
	_, _, off := splitRef(ref)
	return frameBuf{b: mem[off : int(off)+n : int(off)+size], ref: ref}
}

// take pops a free block of the class or carves a new one; m.mu is held.
func (m *frameMemory) take(class, size int) (uint64, []byte, bool) {
	if m.closed {
		return 0, nil, false
	}
	c := &m.classes[class]
	for n := len(c.free); n > 0; n = len(c.free) {
		ref := c.free[n-1]
		c.free = c.free[:n-1]
		i, gen, _ := splitRef(ref)
		if s := &m.slabs[i]; s.gen&(1<<24-1) == gen && int(s.class) == class {
			s.live++
			return ref, s.mem, true
		}
		c.stale--
	}
	if c.slab == 0 || int(c.next)+size > slabSize {
		i, ok := m.newSlab(class)
		if !ok {
			return 0, nil, false // the heap serves instead
		}
		c.slab, c.next = uint32(i+1), 0
	}
	i := int(c.slab - 1)
	s := &m.slabs[i]
	ref := makeRef(i, s.gen, c.next)
	c.next += uint32(size)
	s.live++
	return ref, s.mem, true
}

// newSlab returns a released slab or maps a new one, carved for class.
func (m *frameMemory) newSlab(class int) (int, bool) {
	var i int
	if n := len(m.warm); n > 0 {
		i = int(m.warm[n-1])
		m.warm = m.warm[:n-1]
		m.slabs[i].class = int16(class)
		return i, true
	}
	if n := len(m.empty); n > 0 {
		i = int(m.empty[n-1])
		m.empty = m.empty[:n-1]
	} else {
		mem, err := mapSlab(slabSize)
		if err != nil {
			return 0, false
		}
		m.slabs = append(m.slabs, slab{mem: mem})
		i = len(m.slabs) - 1
	}
	m.slabs[i].class = int16(class)
	m.mapped.Add(slabSize)
	return i, true
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
		i, _, _ := splitRef(f.ref)
		s := &m.slabs[i]
		s.live--
		if s.live == 0 {
			m.release(i, c, size)
		}
	}
	m.inUse.Add(-released)
}

// release makes an empty slab available to any class, giving its pages back
// unless it is kept warm; the refs to it on c's free stack become stale.
// m.mu is held.
func (m *frameMemory) release(i int, c *slabClass, size int) {
	s := &m.slabs[i]
	// Every block carved from the slab is on the stack now (none is live).
	carved := slabSize / size
	if c.slab == uint32(i+1) {
		carved = int(c.next) / size
		c.slab, c.next = 0, 0
	}
	c.stale += carved
	s.gen++
	s.class = -1
	if len(m.warm) < warmSlabs {
		m.warm = append(m.warm, uint32(i))
	} else {
		releaseSlab(s.mem)
		m.empty = append(m.empty, uint32(i))
		m.mapped.Add(-slabSize)
	}
	if c.stale > len(c.free)/2 {
		m.compact(c)
	}
}

// compact drops the stale refs of c's free stack.
func (m *frameMemory) compact(c *slabClass) {
	kept := c.free[:0]
	for _, ref := range c.free {
		i, gen, _ := splitRef(ref)
		if s := &m.slabs[i]; s.class >= 0 && s.gen&(1<<24-1) == gen {
			kept = append(kept, ref)
		}
	}
	clear(c.free[len(kept):])
	c.free, c.stale = kept, 0
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
		unmapSlab(s.mem)
	}
	m.slabs, m.warm, m.empty = nil, nil, nil
	for i := range m.classes {
		m.classes[i] = slabClass{}
	}
	m.mapped.Store(0)
	// inUse is left as it is: anything but 0 here is a leak (tests check).
}

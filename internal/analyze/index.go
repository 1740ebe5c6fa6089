package analyze

import (
	"slices"
	"sync"

	"github.com/tracesift/tracesift/internal/model"
)

// Span flags of the index.
const (
	flagDropped  uint8 = 1 << iota // a later duplicate of a span id: ignored
	flagOrphan                     // parent span id set but not in the trace
	flagLoop                       // parent chain looped back: link cut here
	flagTrueRoot                   // no parent span id
	flagPaired                     // one of a Zipkin shared CLIENT/SERVER pair
)

// index is a trace indexed once and shared by all analyzers: positions are
// indexes into Trace.Spans, stored as int32 to halve the slices.
type index struct {
	t *model.Trace
	n int

	start, end []uint64 // end >= start (end < start counts as zero-length)
	parent     []int32  // resolved parent, -1 for none
	flags      []uint8

	childOff []int32 // children of i: child[childOff[i]:childOff[i+1]]
	child    []int32 // sorted by start, end, position

	tops   []int32 // kept spans without a resolved parent, by start
	root   int32   // the trace root (see doc.go), -1 when empty
	pre    []int32 // pre-order walk of all kept spans, tops by start
	prePos []int32 // position of a span in pre (-1 when dropped)
	depth  []int32

	minStart, maxEnd uint64 // extent of the kept spans

	ids    idTable
	shared []int32 // Zipkin shared span: the CLIENT of a SERVER span with the same id

	// Lazily computed, shared by analyzers.
	selfDone bool
	self     []uint64
	// failure holds failed() of each span once asked: 0 not yet, 1 no, 2 yes;
	// anyFailure whether some span failed (0 not yet, 1 no, 2 yes).
	failure    []uint8
	anyFailure uint8

	// The call structure (retry_fanout), built on demand.
	calls retryAnalysis

	// Critical path buffers.
	cpSpans []int32
	cpArena []int32
	cpSecs  []section
	cpStack []cpFrame

	// Scratch, reused.
	scratch  []int32
	scratch2 []int32
	marks    []uint8
	effS     []uint64
	effE     []uint64
	counts   []int32
}

var indexPool = sync.Pool{New: func() any { return new(index) }}

// newIndex indexes t with pooled buffers; release it with free.
func newIndex(t *model.Trace) *index {
	ix := indexPool.Get().(*index)
	ix.build(t)
	return ix
}

// free returns ix to the pool; nothing of it may be used afterwards. What
// refers to the trace's strings is dropped, so a pooled index does not keep
// the trace's memory alive.
func (ix *index) free() {
	ix.t = nil
	ix.calls.release()
	indexPool.Put(ix)
}

// sized returns s resized to n zeroed elements, reusing its array.
func sized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	s = s[:n]
	clear(s)
	return s
}

func (ix *index) build(t *model.Trace) {
	ix.t = t
	ix.selfDone = false
	ix.anyFailure = 0
	var spans []model.Span
	if t != nil {
		spans = t.Spans
	}
	n := len(spans)
	ix.n = n
	ix.start = sized(ix.start, n)
	ix.end = sized(ix.end, n)
	ix.parent = sized(ix.parent, n)
	ix.flags = sized(ix.flags, n)
	ix.failure = sized(ix.failure, n)
	ix.childOff = sized(ix.childOff, n+1)
	ix.child = sized(ix.child, n)
	ix.tops = ix.tops[:0]
	ix.pre = ix.pre[:0]
	ix.prePos = sized(ix.prePos, n)
	ix.depth = sized(ix.depth, n)
	ix.shared = sized(ix.shared, n)
	ix.root = -1
	ix.minStart, ix.maxEnd = 0, 0
	ix.ids.reset(n)
	if n == 0 {
		return
	}

	// Times, ids, duplicates.
	for i := range spans {
		s := &spans[i]
		ix.start[i], ix.end[i] = s.StartUnixNano, s.EndUnixNano
		if ix.end[i] < ix.start[i] {
			ix.end[i] = ix.start[i]
		}
		ix.shared[i] = -1
		ix.parent[i] = -1
		if s.SpanID == "" {
			continue // cannot be named as a parent; still analyzed
		}
		slot := ix.ids.find(spans, s.SpanID)
		j := ix.ids.slots[slot]
		if j < 0 {
			ix.ids.slots[slot] = int32(i)
			continue
		}
		// A CLIENT and a SERVER span sharing an id (Zipkin B3 shared
		// spans): the SERVER becomes the CLIENT's child and owns the id.
		first := &spans[j]
		switch {
		case ix.flags[j]&flagPaired == 0 && first.Kind == model.KindClient && s.Kind == model.KindServer:
			ix.shared[i] = j
			ix.ids.slots[slot] = int32(i)
			ix.flags[i] |= flagPaired
			ix.flags[j] |= flagPaired
		case ix.flags[j]&flagPaired == 0 && first.Kind == model.KindServer && s.Kind == model.KindClient:
			ix.shared[j] = int32(i)
			ix.flags[i] |= flagPaired
			ix.flags[j] |= flagPaired
		default:
			ix.flags[i] |= flagDropped
		}
	}

	// Parents.
	for i := range spans {
		if ix.flags[i]&flagDropped != 0 {
			continue
		}
		if c := ix.shared[i]; c >= 0 {
			ix.parent[i] = c
			continue
		}
		pid := spans[i].ParentSpanID
		if pid == "" {
			ix.flags[i] |= flagTrueRoot
			continue
		}
		p := ix.ids.slots[ix.ids.find(spans, pid)]
		switch {
		case p < 0:
			ix.flags[i] |= flagOrphan
		case p == int32(i):
			ix.flags[i] |= flagLoop
		default:
			ix.parent[i] = p
		}
	}
	ix.cutLoops()

	// Children, as compressed rows sorted by start.
	for i := 0; i < n; i++ {
		if p := ix.parent[i]; p >= 0 {
			ix.childOff[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		ix.childOff[i] += ix.childOff[i-1]
	}
	fill := sized(ix.scratch, n)
	copy(fill, ix.childOff[:n])
	for i := 0; i < n; i++ {
		if p := ix.parent[i]; p >= 0 {
			ix.child[fill[p]] = int32(i)
			fill[p]++
		}
	}
	ix.scratch = fill
	ix.child = ix.child[:ix.childOff[n]]
	for i := 0; i < n; i++ {
		ix.sortByStart(ix.children(int32(i)))
	}

	// Tops and the root.
	for i := 0; i < n; i++ {
		if ix.parent[i] < 0 && ix.flags[i]&flagDropped == 0 {
			ix.tops = append(ix.tops, int32(i))
		}
	}
	ix.sortByStart(ix.tops)
	best := int32(-1)
	for pass := 0; pass < 2 && best < 0; pass++ {
		for _, i := range ix.tops {
			if pass == 0 && ix.flags[i]&flagTrueRoot == 0 {
				continue
			}
			// tops are by start: the first longest one wins ties.
			if best < 0 || ix.dur(i) > ix.dur(best) {
				best = i
			}
		}
	}
	ix.root = best

	// Pre-order walk, depths, extent.
	for i := range ix.prePos {
		ix.prePos[i] = -1
	}
	stack := ix.scratch[:0]
	for k := len(ix.tops) - 1; k >= 0; k-- {
		stack = append(stack, ix.tops[k])
	}
	first := true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ix.prePos[i] = int32(len(ix.pre))
		ix.pre = append(ix.pre, i)
		if p := ix.parent[i]; p >= 0 {
			ix.depth[i] = ix.depth[p] + 1
		}
		if first || ix.start[i] < ix.minStart {
			ix.minStart = ix.start[i]
		}
		if first || ix.end[i] > ix.maxEnd {
			ix.maxEnd = ix.end[i]
		}
		first = false
		ch := ix.children(i)
		for k := len(ch) - 1; k >= 0; k-- {
			stack = append(stack, ch[k])
		}
	}
	ix.scratch = stack
}

// cutLoops cuts parent chains that loop back, making the span where the loop
// closed a top-level span.
func (ix *index) cutLoops() {
	const (
		unseen  = 0
		onPath  = 1
		settled = 2
	)
	state := sized(ix.marks, ix.n)
	path := ix.scratch[:0]
	for i := 0; i < ix.n; i++ {
		if state[i] != unseen || ix.flags[i]&flagDropped != 0 {
			continue
		}
		path = path[:0]
		cur := int32(i)
		for cur >= 0 && state[cur] == unseen {
			state[cur] = onPath
			path = append(path, cur)
			cur = ix.parent[cur]
		}
		if cur >= 0 && state[cur] == onPath {
			ix.parent[cur] = -1
			ix.flags[cur] |= flagLoop
		}
		for _, p := range path {
			state[p] = settled
		}
	}
	ix.marks = state
	ix.scratch = path
}

// sortByStart sorts span positions by start, end, then position.
func (ix *index) sortByStart(s []int32) {
	less := func(a, b int32) bool {
		if ix.start[a] != ix.start[b] {
			return ix.start[a] < ix.start[b]
		}
		if ix.end[a] != ix.end[b] {
			return ix.end[a] < ix.end[b]
		}
		return a < b
	}
	if len(s) <= 12 {
		for i := 1; i < len(s); i++ {
			for j := i; j > 0 && less(s[j], s[j-1]); j-- {
				s[j], s[j-1] = s[j-1], s[j]
			}
		}
		return
	}
	slices.SortFunc(s, func(a, b int32) int {
		if less(a, b) {
			return -1
		}
		if less(b, a) {
			return 1
		}
		return 0
	})
}

// children are the children of span i, sorted by start.
func (ix *index) children(i int32) []int32 {
	return ix.child[ix.childOff[i]:ix.childOff[i+1]]
}

// dur is span i's duration in nanoseconds (never negative).
func (ix *index) dur(i int32) uint64 { return ix.end[i] - ix.start[i] }

// span is span i of the trace.
func (ix *index) span(i int32) *model.Span { return &ix.t.Spans[i] }

// kept reports whether span i takes part in analysis (not a dropped
// duplicate).
func (ix *index) kept(i int32) bool { return ix.flags[i]&flagDropped == 0 }

// extent is the time from the first kept span's start to the last one's end.
func (ix *index) extent() uint64 { return ix.maxEnd - ix.minStart }

// idTable maps span ids to positions: open addressing over a power-of-two
// slice of positions, hashing with FNV-1a and comparing the ids themselves.
// It does not allocate once grown, and keeps no strings of its own.
type idTable struct {
	slots []int32 // positions, -1 for empty
	mask  uint64
}

// reset empties the table, sized for n ids.
func (t *idTable) reset(n int) {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	if cap(t.slots) < size {
		t.slots = make([]int32, size)
	}
	t.slots = t.slots[:size]
	for i := range t.slots {
		t.slots[i] = -1
	}
	t.mask = uint64(size - 1)
}

// find returns the slot holding id (a position of spans), or the empty slot
// where it would go.
func (t *idTable) find(spans []model.Span, id string) int {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	h ^= h >> 29
	for k := h & t.mask; ; k = (k + 1) & t.mask {
		j := t.slots[k]
		if j < 0 || spans[j].SpanID == id {
			return int(k)
		}
	}
}

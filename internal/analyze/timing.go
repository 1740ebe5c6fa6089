package analyze

import (
	"slices"
	"strings"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// Timing is the time structure of a trace: how long each span spent in
// itself and which spans determined the end-to-end latency.
type Timing struct {
	// Self is each span's self time, indexed like Trace.Spans: its duration
	// minus the length of the union of its children's intervals, each
	// clipped to the span's own interval (parallel children are not counted
	// twice; a child that outlives its parent counts only up to the
	// parent's end). Never negative; 0 for ignored duplicate spans.
	Self []time.Duration

	// Root is the index in Trace.Spans of the span the critical path starts
	// at (see the package documentation), -1 for an empty trace.
	Root int

	// PathSpans are the spans on the critical path, as indexes into
	// Trace.Spans, root first, then in the order of a depth-first walk with
	// children by start time. A span on the path may contribute no section
	// of its own (its children cover it).
	PathSpans []int

	// Path is the critical path as time-ordered sections, each a stretch of
	// time during which one span, not waiting on any child, held up the
	// root's end. The sections tile the root's interval exactly: their
	// lengths add up to the root's duration.
	Path []PathSection
}

// PathSection is one stretch of the critical path.
type PathSection struct {
	Span          int    // index in model.Trace.Spans
	SpanID        string // that span's id
	StartUnixNano uint64
	EndUnixNano   uint64
}

// Timings returns the self time of every span of t and its critical path.
//
// The critical path follows Jaeger's algorithm: every span's interval is
// first clipped to its parent's (clipped) interval — a child starting after
// its parent ended is left out — then, starting at the root with the point
// at its end, the walk picks the child that ended last no later than the
// point, gives the time between that child's end and the point to the
// parent, recurses into the child, and goes on from the child's start; what
// is left before the first picked child belongs to the parent.
func Timings(t *model.Trace) Timing {
	ix := newIndex(t)
	defer ix.free()
	self := ix.selfTimes()
	tm := Timing{Self: make([]time.Duration, ix.n), Root: int(ix.root)}
	for i, v := range self {
		tm.Self[i] = duration(v)
	}
	spans, secs := ix.criticalPath()
	tm.PathSpans = make([]int, len(spans))
	for k, i := range spans {
		tm.PathSpans[k] = int(i)
	}
	tm.Path = make([]PathSection, len(secs))
	for k, s := range secs {
		tm.Path[k] = PathSection{Span: int(s.span), SpanID: ix.span(s.span).SpanID, StartUnixNano: s.start, EndUnixNano: s.end}
	}
	return tm
}

// selfTimes computes (once) every span's self time in nanoseconds.
func (ix *index) selfTimes() []uint64 {
	if ix.selfDone {
		return ix.self
	}
	ix.self = sized(ix.self, ix.n)
	for i := int32(0); i < int32(ix.n); i++ {
		if !ix.kept(i) {
			continue
		}
		s, e := ix.start[i], ix.end[i]
		var covered, runS, runE uint64
		open := false
		for _, c := range ix.children(i) { // by start: clipped starts keep the order
			a, b := max(ix.start[c], s), min(ix.end[c], e)
			if b <= a {
				continue
			}
			switch {
			case !open:
				runS, runE, open = a, b, true
			case a <= runE:
				runE = max(runE, b)
			default:
				covered += runE - runS
				runS, runE = a, b
			}
		}
		if open {
			covered += runE - runS
		}
		ix.self[i] = (e - s) - min(covered, e-s)
	}
	ix.selfDone = true
	return ix.self
}

// section is a stretch of the critical path.
type section struct {
	span       int32
	start, end uint64
}

// criticalPath walks the critical path from the root: the spans on it (root
// first, in pre-order) and its sections in time order. Both are buffers of
// the index, valid until the next walk.
func (ix *index) criticalPath() (spans []int32, secs []section) {
	r := ix.root
	if r < 0 {
		return nil, nil
	}
	// Effective intervals: each span clipped to its parent's effective
	// interval, over the root's subtree (contiguous in pre-order).
	ix.effS = sized(ix.effS, ix.n)
	ix.effE = sized(ix.effE, ix.n)
	live := sized(ix.marks, ix.n) // 1: on the walk with a non-empty effective interval
	ix.marks = live
	ix.effS[r], ix.effE[r] = ix.start[r], ix.end[r]
	live[r] = 1
	for k := int(ix.prePos[r]) + 1; k < len(ix.pre); k++ {
		i := ix.pre[k]
		if ix.depth[i] == 0 {
			break
		}
		p := ix.parent[i]
		if live[p] == 0 {
			continue
		}
		a, b := max(ix.start[i], ix.effS[p]), min(ix.end[i], ix.effE[p])
		if b <= a {
			continue // starts after the parent's end, or zero-length
		}
		ix.effS[i], ix.effE[i], live[i] = a, b, 1
	}

	ix.cpArena = ix.cpArena[:0]
	ix.cpStack = ix.cpStack[:0]
	spans, secs = ix.cpSpans[:0], ix.cpSecs[:0]
	spans = append(spans, r)
	ix.cpPush(r, ix.effE[r])
	for len(ix.cpStack) > 0 {
		f := &ix.cpStack[len(ix.cpStack)-1]
		picked := int32(-1)
		for f.next < int32(len(ix.cpArena)) {
			c := ix.cpArena[f.next]
			f.next++
			if ix.effE[c] <= f.point {
				picked = c
				break
			}
		}
		if picked >= 0 {
			if f.point > ix.effE[picked] {
				secs = append(secs, section{f.span, ix.effE[picked], f.point})
			}
			f.point = ix.effS[picked]
			spans = append(spans, picked)
			ix.cpPush(picked, ix.effE[picked]) // f is stale from here
			continue
		}
		if f.point > ix.effS[f.span] {
			secs = append(secs, section{f.span, ix.effS[f.span], f.point})
		}
		ix.cpArena = ix.cpArena[:f.lo]
		ix.cpStack = ix.cpStack[:len(ix.cpStack)-1]
	}
	ix.cpSpans, ix.cpSecs = spans, secs
	slices.Reverse(secs)
	slices.SortFunc(spans, func(a, b int32) int { return int(ix.prePos[a] - ix.prePos[b]) })
	return spans, secs
}

// cpFrame is a span being walked on the critical path.
type cpFrame struct {
	span     int32
	point    uint64 // the walk's point in time, going backwards
	lo, next int32  // the span's candidate children: cpArena[lo:], next to try
}

// cpPush starts walking span i of the critical path back from point: its
// children with an effective interval, latest end first (ties: longest,
// then first in the trace), go on the arena.
func (ix *index) cpPush(i int32, point uint64) {
	lo := int32(len(ix.cpArena))
	for _, c := range ix.children(i) {
		if ix.marks[c] != 0 {
			ix.cpArena = append(ix.cpArena, c)
		}
	}
	cand := ix.cpArena[lo:]
	if len(cand) > 1 {
		slices.SortFunc(cand, func(a, b int32) int {
			switch {
			case ix.effE[a] != ix.effE[b]:
				if ix.effE[a] > ix.effE[b] {
					return -1
				}
				return 1
			case ix.effS[a] != ix.effS[b]:
				if ix.effS[a] < ix.effS[b] {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
	}
	ix.cpStack = append(ix.cpStack, cpFrame{span: i, point: point, lo: lo, next: lo})
}

// slowestHop appends to out the span with the largest self time (ties: earliest
// start, then first in the trace): value is its self time in milliseconds.
// Nothing is reported when every span has zero self time.
func (ix *index) slowestHop(out []model.Finding, _ Options) []model.Finding {
	self := ix.selfTimes()
	best := int32(-1)
	for _, i := range ix.pre { // pre-order: roots by start; ties keep the first seen
		if best < 0 || self[i] > self[best] ||
			self[i] == self[best] && (ix.start[i] < ix.start[best] || ix.start[i] == ix.start[best] && i < best) {
			best = i
		}
	}
	if best < 0 || self[best] == 0 {
		return out
	}
	s := ix.span(best)
	summary := spanLabel(s) + " spent " + fmtDur(self[best]) + " in itself (" +
		percent(self[best], ix.extent()) + " of the trace)"
	if nc := len(ix.children(best)); nc > 0 {
		summary += ", not waiting on its " + plural(nc, "child span", "child spans")
	}
	return append(out, model.Finding{
		Kind:    KindSlowestHop,
		SpanIDs: []string{s.SpanID},
		Service: s.Service,
		Value:   ms(self[best]),
		Summary: summary,
	})
}

// criticalPathFinding appends to out the critical path (see Timings): spanIds are the spans
// on it, root first; value is the root's duration in milliseconds, which is
// also the sum of the path's sections; service is the service of the span
// that contributes most to the path. Nothing is reported for an empty trace
// or a zero-length root.
func (ix *index) criticalPathFinding(out []model.Finding, opts Options) []model.Finding {
	r := ix.root
	if r < 0 || ix.dur(r) == 0 {
		return out
	}
	spans, secs := ix.criticalPath()
	// The span contributing most (ties: first on the path).
	contrib := sized(ix.effS, ix.n) // effS is free again
	ix.effS = contrib
	for _, s := range secs {
		contrib[s.span] += s.end - s.start
	}
	top := spans[0]
	for _, i := range spans {
		if contrib[i] > contrib[top] {
			top = i
		}
	}
	ids, cut := spanIDs(ix, spans, opts.MaxSpanIDs)
	var b strings.Builder
	b.WriteString("critical path of ")
	b.WriteString(fmtDur(ix.dur(r)))
	b.WriteString(" through ")
	b.WriteString(plural(len(spans), "span", "spans"))
	b.WriteString(": ")
	const head, tail = 2, 2
	for k, i := range spans {
		elided := len(spans) > head+tail+1 && k >= head && k < len(spans)-tail
		if elided && k > head {
			continue
		}
		if k > 0 {
			b.WriteString(" → ")
		}
		if elided {
			b.WriteString("…")
			continue
		}
		b.WriteString(spanLabel(ix.span(i)))
	}
	b.WriteString("; most of it in ")
	b.WriteString(spanLabel(ix.span(top)))
	b.WriteString(" (")
	b.WriteString(fmtDur(contrib[top]))
	b.WriteString(", ")
	b.WriteString(percent(contrib[top], ix.dur(r)))
	b.WriteString(")")
	b.WriteString(cut)
	return append(out, model.Finding{
		Kind:    KindCriticalPath,
		SpanIDs: ids,
		Service: ix.span(top).Service,
		Value:   ms(ix.dur(r)),
		Summary: b.String(),
	})
}

// spanIDs are the distinct ids of spans (a Zipkin shared pair has one), at
// most max of them, and the summary suffix saying they were cut ("" when
// not).
func spanIDs(ix *index, spans []int32, max int) ([]string, string) {
	ids := make([]string, 0, min(len(spans), max))
	for k, i := range spans {
		id := ix.span(i).SpanID
		if slices.Contains(ids, id) {
			continue
		}
		if len(ids) == max {
			return ids, " (first " + itoa(max) + " of " + itoa(len(spans)-k+max) + " spans listed)"
		}
		ids = append(ids, id)
	}
	return ids, ""
}

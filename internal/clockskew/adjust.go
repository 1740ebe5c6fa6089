package clockskew

import (
	"math"
	"strconv"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// Source says where a host's offset in Adjustments comes from.
type Source uint8

const (
	// SourceNone: no evidence links the host to the reference host; its
	// times are not shifted.
	SourceNone Source = iota
	// SourceReference: the reference host itself (offset 0).
	SourceReference
	// SourceEstimate: the estimator's trusted estimate of the pair
	// (reference, host), whether or not this trace calls between them.
	SourceEstimate
	// SourcePropagated: the sum of trusted estimates along a chain of host
	// pairs called across in this trace (reference → h1 → … → host).
	SourcePropagated
	// SourceTrace: like SourcePropagated, but at least one link of the chain
	// had too few samples in the estimator and is the median of this trace's
	// own calls between the two hosts (the per-trace fallback).
	SourceTrace
)

var sourceNames = [...]string{"none", "reference", "estimate", "propagated", "trace"}

func (s Source) String() string {
	if int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return "Source(" + strconv.Itoa(int(s)) + ")"
}

// HostOffset is the clock offset of one host of a trace relative to the
// trace's reference host.
type HostOffset struct {
	Host string
	// Offset is clock(Host) − clock(reference host); adjusting a time of
	// Host subtracts it.
	Offset time.Duration
	Source Source
}

// SpanTimes is a span's adjusted time range.
type SpanTimes struct {
	// Start and End are the adjusted times, Unix nanoseconds.
	Start, End uint64
	// Shift is the amount added to the raw times (−Offset of the span's
	// host; 0 when not shifted).
	Shift time.Duration
}

// Adjustments are a trace's times on one clock, the reference host's. The
// trace itself is never modified.
type Adjustments struct {
	// Reference is the host whose clock the others are mapped onto: the root
	// span's host, or when there is no root span (or it names no host) the
	// host of the earliest-starting span that names one. Empty when no span
	// names a host; nothing is shifted then.
	Reference string
	// Hosts has every host of the trace, in order of first appearance.
	Hosts []HostOffset
	// Spans has the adjusted times of t.Spans[i] at index i.
	Spans []SpanTimes
}

// Offset returns clock(host) − clock(Reference) and its source; 0 and
// SourceNone for a host not in the trace or not linked to the reference.
func (a Adjustments) Offset(host string) (time.Duration, Source) {
	for i := range a.Hosts {
		if a.Hosts[i].Host == host {
			return a.Hosts[i].Offset, a.Hosts[i].Source
		}
	}
	return 0, SourceNone
}

// Time maps a time read on host's clock (a log record's host and timestamp,
// Unix nanoseconds) onto the reference clock, as the trace's spans are; a
// host without an offset keeps its time. The result saturates at 0 and at the
// largest uint64.
func (a Adjustments) Time(host string, t uint64) uint64 {
	off, _ := a.Offset(host)
	return shiftTime(t, -off)
}

func shiftTime(t uint64, shift time.Duration) uint64 {
	switch {
	case shift >= 0:
		if t > math.MaxUint64-uint64(shift) {
			return math.MaxUint64
		}
		return t + uint64(shift)
	case shift == math.MinInt64:
		return 0
	default:
		if t < uint64(-shift) {
			return 0
		}
		return t - uint64(-shift)
	}
}

// Adjust maps t's span times onto the reference host's clock (see
// Adjustments.Reference). The offset of another host is, in order of
// preference:
//
//  1. the estimator's trusted estimate for (reference, host);
//  2. otherwise the sum along the shortest chain (breadth-first, from the
//     reference and the hosts resolved by 1) of host pairs this trace calls
//     across, each link being the estimator's trusted estimate, or when it
//     has fewer than MinSamples, the median of this trace's calls between
//     the two hosts (calls whose child outlasted the parent only when the
//     pair has no other);
//  3. otherwise none: the host's times are not shifted.
//
// The per-trace fallback (2) is only ever used here, never for findings.
// Spans naming no host are not shifted.
func (e *Estimator) Adjust(t *model.Trace) Adjustments {
	return adjust(t, e)
}

// AdjustTrace is Adjust with this trace's own calls as the only evidence
// (no estimator): every link is the per-trace fallback.
func AdjustTrace(t *model.Trace) Adjustments {
	return adjust(t, nil)
}

// link is one host pair called across in the trace, with its offset
// clock(B) − clock(A).
type link struct {
	pair      Pair
	off       int64
	estimated bool // from the estimator (else this trace's calls)
}

func adjust(t *model.Trace, e *Estimator) Adjustments {
	var a Adjustments
	if t == nil || len(t.Spans) == 0 {
		return a
	}
	spans := t.Spans
	a.Spans = make([]SpanTimes, len(spans))
	for i := range spans {
		a.Spans[i] = SpanTimes{Start: spans[i].StartUnixNano, End: spans[i].EndUnixNano}
	}
	a.Reference = referenceHost(spans)
	if a.Reference == "" {
		return a
	}
	for i := range spans {
		if h := spans[i].Host; h != "" && !hasHost(a.Hosts, h) {
			a.Hosts = append(a.Hosts, HostOffset{Host: h})
		}
	}
	if len(a.Hosts) < 2 {
		a.Hosts[0].Source = SourceReference
		return a
	}
	links := traceLinks(PairOffsets(t), e)

	// Resolve hosts: the reference, then direct estimates, then breadth-first
	// along the trace's links from everything resolved so far.
	byHost := make(map[string]int, len(a.Hosts))
	for i := range a.Hosts {
		byHost[a.Hosts[i].Host] = i
	}
	queue := make([]int, 0, len(a.Hosts))
	ri := byHost[a.Reference]
	a.Hosts[ri].Source = SourceReference
	queue = append(queue, ri)
	if e != nil {
		for i := range a.Hosts {
			if i == ri {
				continue
			}
			if off, _, ok := e.Estimate(a.Reference, a.Hosts[i].Host); ok {
				a.Hosts[i].Offset, a.Hosts[i].Source = off, SourceEstimate
				queue = append(queue, i)
			}
		}
	}
	for q := 0; q < len(queue); q++ {
		u := &a.Hosts[queue[q]]
		for _, l := range links {
			var other string
			var w int64 // clock(other) − clock(u)
			switch u.Host {
			case l.pair.A:
				other, w = l.pair.B, l.off
			case l.pair.B:
				other, w = l.pair.A, -l.off
			default:
				continue
			}
			vi := byHost[other]
			v := &a.Hosts[vi]
			if v.Source != SourceNone {
				continue
			}
			v.Offset = u.Offset + time.Duration(w)
			v.Source = SourcePropagated
			if !l.estimated || u.Source == SourceTrace {
				v.Source = SourceTrace
			}
			queue = append(queue, vi)
		}
	}
	for i := range spans {
		h := spans[i].Host
		if h == "" {
			continue
		}
		ho := &a.Hosts[byHost[h]]
		if ho.Source == SourceNone || ho.Offset == 0 {
			continue
		}
		shift := -ho.Offset
		a.Spans[i] = SpanTimes{
			Start: shiftTime(spans[i].StartUnixNano, shift),
			End:   shiftTime(spans[i].EndUnixNano, shift),
			Shift: shift,
		}
	}
	return a
}

func hasHost(hs []HostOffset, h string) bool {
	for i := range hs {
		if hs[i].Host == h {
			return true
		}
	}
	return false
}

// referenceHost is the root span's host (the earliest root naming one), else
// the host of the earliest span naming one.
func referenceHost(spans []model.Span) string {
	best, bestRoot := -1, false
	for i := range spans {
		s := &spans[i]
		if s.Host == "" {
			continue
		}
		root := s.ParentSpanID == ""
		switch {
		case best < 0,
			root && !bestRoot,
			root == bestRoot && s.StartUnixNano < spans[best].StartUnixNano:
			best, bestRoot = i, root
		}
	}
	if best < 0 {
		return ""
	}
	return spans[best].Host
}

// traceLinks returns one link per host pair in obs, in order of first
// appearance: the estimator's trusted estimate when there is one, else the
// median of the trace's observations of the pair (those with ChildLonger
// only when there is no other).
func traceLinks(obs []Observation, e *Estimator) []link {
	type group struct {
		good, longer []int64
	}
	var links []link
	var groups []group
	index := make(map[Pair]int)
	for i := range obs {
		o := &obs[i]
		if !o.usable() {
			continue
		}
		p := o.Pair()
		gi, ok := index[p]
		if !ok {
			gi = len(links)
			index[p] = gi
			links = append(links, link{pair: p})
			groups = append(groups, group{})
			if e != nil {
				if off, _, ok := e.Estimate(p.A, p.B); ok {
					links[gi].off, links[gi].estimated = int64(off), true
				}
			}
		}
		if links[gi].estimated {
			continue
		}
		if o.ChildLonger {
			groups[gi].longer = append(groups[gi].longer, int64(o.PairOffset()))
		} else {
			groups[gi].good = append(groups[gi].good, int64(o.PairOffset()))
		}
	}
	for i := range links {
		if !links[i].estimated {
			g := groups[i]
			if len(g.good) == 0 {
				g.good = g.longer
			}
			links[i].off = median(g.good)
		}
	}
	return links
}

package clockskew

import (
	"math"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// Pair is an unordered pair of hosts in canonical (lexical) order, A < B. An
// offset "of the pair" is always clock(B) − clock(A), so that the calls
// A→B and B→A feed the same estimate with opposite signs.
type Pair struct {
	A, B string
}

// PairOf returns the canonical pair of hosts x and y, and the sign that turns
// an offset clock(y) − clock(x) into the pair's clock(B) − clock(A): +1 when
// x is A, −1 when x is B.
func PairOf(x, y string) (Pair, int64) {
	if x <= y {
		return Pair{A: x, B: y}, 1
	}
	return Pair{A: y, B: x}, -1
}

// Observation is the clock offset implied by one synchronous cross-host
// call: a parent span on host From whose child SERVER span ran on host To.
type Observation struct {
	// From is the parent's (caller's) host, To the child's (callee's).
	From, To string
	// FromService and ToService are the parent's and the child's services.
	FromService, ToService string
	// Offset is clock(To) − clock(From): positive when the child's host clock
	// is ahead of the parent's. It assumes the network time of the call splits
	// evenly between request and response, which is the same as aligning the
	// midpoints of the two spans: child.start − parent.start −
	// (dur(parent) − dur(child)) / 2.
	Offset time.Duration
	// ParentSpanID and ChildSpanID name the two spans.
	ParentSpanID, ChildSpanID string
	// Violation is set when the child, on raw times, does not fit inside its
	// parent (starts before it or ends after it): direct evidence of skew.
	Violation bool
	// ChildLonger is set when the child lasted longer than its parent, which
	// a synchronous call cannot do on correct clocks (typically the client
	// gave up on a timeout and the server went on). Offset is still the
	// midpoint alignment, but it is biased by up to half the excess, so these
	// observations are lower quality: Estimator.Observe ignores them and the
	// per-trace fallback of Adjust uses them only when a pair has nothing
	// better. Violation is always set with it.
	ChildLonger bool
	// Outside is how far the child lies outside its parent where correct
	// clocks cannot put it: starting before the parent, or ending after it
	// unless the child is longer (a client that gave up first); 0 when it
	// fits. Beyond the skew threshold it is evidence of skew on its own.
	Outside time.Duration
}

// Pair returns the observation's canonical host pair.
func (o *Observation) Pair() Pair {
	p, _ := PairOf(o.From, o.To)
	return p
}

// PairOffset is Offset in the pair's convention, clock(B) − clock(A).
func (o *Observation) PairOffset() time.Duration {
	_, sign := PairOf(o.From, o.To)
	return time.Duration(sign) * o.Offset
}

// usable reports whether o names two different, non-empty hosts; PairOffsets
// only returns such observations, Observe and Findings also accept
// hand-made ones and skip the others.
func (o *Observation) usable() bool {
	return o.From != "" && o.To != "" && o.From != o.To
}

// linearLookupMax is the trace size up to which parents are found by a linear
// scan rather than an index (no allocation for the common small trace).
const linearLookupMax = 32

// PairOffsets returns one Observation per usable parent/child pair of t, in
// the order of the children in t.Spans. A pair is usable when:
//
//   - the child is a SERVER span and its parent is in t (the first span with
//     that id);
//   - the parent is not a messaging span (PRODUCER or CONSUMER): a message
//     may be handled long after it was sent, so such a pair says nothing
//     about clocks. Any other parent kind is accepted: CLIENT is the usual
//     caller, but an INTERNAL or SERVER parent with a remote SERVER child is
//     an uninstrumented client call, still synchronous;
//   - both spans name a host and the hosts differ;
//   - both spans have sane times (start > 0, end >= start, both below 2^63).
func PairOffsets(t *model.Trace) []Observation {
	if t == nil || len(t.Spans) < 2 {
		return nil
	}
	spans := t.Spans
	// Candidates bound the result: one allocation.
	n := 0
	for i := range spans {
		if candidate(&spans[i]) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	var index map[string]int
	if len(spans) > linearLookupMax {
		index = make(map[string]int, len(spans))
		for i := range spans {
			if _, dup := index[spans[i].SpanID]; !dup {
				index[spans[i].SpanID] = i
			}
		}
	}
	var out []Observation
	for i := range spans {
		c := &spans[i]
		if !candidate(c) {
			continue
		}
		pi := -1
		if index != nil {
			if j, ok := index[c.ParentSpanID]; ok {
				pi = j
			}
		} else {
			for j := range spans {
				if spans[j].SpanID == c.ParentSpanID {
					pi = j
					break
				}
			}
		}
		if pi < 0 {
			continue
		}
		p := &spans[pi]
		if p.Host == "" || p.Host == c.Host || p.Kind == model.KindProducer || p.Kind == model.KindConsumer || !saneTimes(p) {
			continue
		}
		ps, pe := int64(p.StartUnixNano), int64(p.EndUnixNano)
		cs, ce := int64(c.StartUnixNano), int64(c.EndUnixNano)
		// Midpoint alignment; for a child shorter than its parent this is the
		// even split of the network time, (dur(p) − dur(c)) / 2 each way.
		off := (cs - ps) - ((pe-ps)-(ce-cs))/2
		if out == nil {
			out = make([]Observation, 0, n)
		}
		out = append(out, Observation{
			From:         p.Host,
			To:           c.Host,
			FromService:  p.Service,
			ToService:    c.Service,
			Offset:       time.Duration(off),
			ParentSpanID: p.SpanID,
			ChildSpanID:  c.SpanID,
			Violation:    cs < ps || ce > pe,
			ChildLonger:  ce-cs > pe-ps,
			Outside:      time.Duration(outside(ps, pe, cs, ce)),
		})
	}
	return out
}

// outside is how far a child [cs, ce] lies outside its parent [ps, pe] where
// correct clocks cannot put it (see Observation.Outside).
func outside(ps, pe, cs, ce int64) int64 {
	d := max(ps-cs, 0)
	if ce-cs <= pe-ps {
		d = max(d, ce-pe)
	}
	return d
}

// candidate reports whether s can be the child of a usable pair.
func candidate(s *model.Span) bool {
	return s.Kind == model.KindServer && s.ParentSpanID != "" && s.Host != "" && saneTimes(s)
}

func saneTimes(s *model.Span) bool {
	return s.StartUnixNano > 0 && s.EndUnixNano >= s.StartUnixNano && s.EndUnixNano <= math.MaxInt64
}

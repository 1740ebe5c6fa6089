package clockskew

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Estimator keeps, per host pair, the offsets observed over a sliding window
// and estimates each pair's clock offset as their median. It is safe for
// concurrent use: the pair table is behind a read-write mutex taken for
// reading on every call (for writing only when a new pair appears), and each
// pair has its own mutex, so sampler shards observing different pairs do not
// wait on each other.
//
// The estimator's clock is the latest time given to Observe: the window
// slides when Observe is called with a later time (Observe(now, nil) only
// advances it), which keeps everything testable without sleeping.
type Estimator struct {
	cfg Config
	// clock is the latest Observe time, in Unix nanoseconds.
	clock atomic.Int64

	mu    sync.RWMutex
	pairs map[Pair]*pairState
}

// sample is one trace's offset for a pair, clock(B) − clock(A) in
// nanoseconds, observed at Unix nanosecond at.
type sample struct {
	at, off int64
}

type pairState struct {
	// lastSeen is the latest Observe time of the pair (Unix ns), for eviction.
	lastSeen atomic.Int64

	mu sync.Mutex
	// ring holds the newest samples; once it has MaxSamples of them, next is
	// the oldest, overwritten by the next sample.
	ring []sample
	next int
	// seq counts the samples ever added; it keys the cached median.
	seq   uint64
	cache medianCache
}

// medianCache is the last median computed for a pair. It stays valid while
// no sample was added (seq) and none of the samples it used has left the
// window (the cutoff only moves forward).
type medianCache struct {
	valid  bool
	seq    uint64
	oldest int64 // the oldest sample time it used; MaxInt64 for none
	n      int
	med    int64
}

// PairEstimate is the estimate of one host pair, as Snapshot returns it.
type PairEstimate struct {
	Pair
	// Offset is clock(B) − clock(A), the median of the samples in the window.
	Offset time.Duration
	// Samples is the number of samples in the window.
	Samples int
	// OK is Samples >= MinSamples.
	OK bool
}

// NewEstimator returns an empty estimator, or the configuration's error.
func NewEstimator(cfg Config) (*Estimator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Estimator{cfg: cfg, pairs: make(map[Pair]*pairState)}, nil
}

// Config returns the estimator's configuration.
func (e *Estimator) Config() Config { return e.cfg }

// Observe adds the observations of ONE trace (PairOffsets' result), observed
// at now. Each host pair gets one sample per call: the median of the trace's
// observations of that pair, so that a trace calling the same remote host a
// hundred times does not outvote a hundred other traces. Observations with
// ChildLonger set are ignored (see Observation), as are those not naming two
// different hosts. now also advances the estimator's clock (never back).
func (e *Estimator) Observe(now time.Time, obs []Observation) {
	ts := now.UnixNano()
	for {
		c := e.clock.Load()
		if ts <= c || e.clock.CompareAndSwap(c, ts) {
			break
		}
	}
	var buf [16]sampleEntry
	ents := buf[:0]
	for i := range obs {
		o := &obs[i]
		if o.ChildLonger || !o.usable() {
			continue
		}
		p, sign := PairOf(o.From, o.To)
		ents = append(ents, sampleEntry{pair: p, off: sign * int64(o.Offset)})
	}
	if len(ents) > 1 {
		slices.SortFunc(ents, func(x, y sampleEntry) int {
			if c := strings.Compare(x.pair.A, y.pair.A); c != 0 {
				return c
			}
			if c := strings.Compare(x.pair.B, y.pair.B); c != 0 {
				return c
			}
			return cmp.Compare(x.off, y.off)
		})
	}
	for i := 0; i < len(ents); {
		j := i + 1
		for j < len(ents) && ents[j].pair == ents[i].pair {
			j++
		}
		// ents[i:j] is one pair, sorted by offset.
		n := j - i
		off := ents[i+n/2].off
		if n%2 == 0 {
			off = mid(ents[i+n/2-1].off, off)
		}
		e.state(ents[i].pair, ts).add(ts, off, e.cfg.MaxSamples)
		i = j
	}
}

type sampleEntry struct {
	pair Pair
	off  int64
}

// Estimate returns clock(b) − clock(a) (positive when b's clock is ahead of
// a's): the median of the pair's samples in the window, with their number;
// ok when there are at least MinSamples of them. The median is returned even
// when ok is false (0 without samples), for diagnostics; nothing in this
// package acts on it then. A median needs half the samples to be off before
// it moves, so one odd trace never decides.
func (e *Estimator) Estimate(a, b string) (offset time.Duration, samples int, ok bool) {
	if a == "" || b == "" || a == b {
		return 0, 0, false
	}
	p, sign := PairOf(a, b)
	e.mu.RLock()
	st := e.pairs[p]
	e.mu.RUnlock()
	if st == nil {
		return 0, 0, false
	}
	med, n := st.median(e.cutoff(), e.cfg.MaxSamples)
	return time.Duration(sign * med), n, n >= e.cfg.MinSamples
}

// Snapshot returns the estimate of every tracked pair, ordered by pair.
func (e *Estimator) Snapshot() []PairEstimate {
	e.mu.RLock()
	out := make([]PairEstimate, 0, len(e.pairs))
	states := make([]*pairState, 0, len(e.pairs))
	for p, st := range e.pairs {
		out = append(out, PairEstimate{Pair: p})
		states = append(states, st)
	}
	e.mu.RUnlock()
	cutoff := e.cutoff()
	for i, st := range states {
		med, n := st.median(cutoff, e.cfg.MaxSamples)
		out[i].Offset, out[i].Samples, out[i].OK = time.Duration(med), n, n >= e.cfg.MinSamples
	}
	slices.SortFunc(out, func(x, y PairEstimate) int {
		if c := strings.Compare(x.A, y.A); c != 0 {
			return c
		}
		return strings.Compare(x.B, y.B)
	})
	return out
}

// cutoff is the oldest sample time still in the window.
func (e *Estimator) cutoff() int64 {
	c := e.clock.Load()
	w := int64(e.cfg.Window)
	if c < math.MinInt64+w {
		return math.MinInt64
	}
	return c - w
}

// state returns the pair's state, creating it (and evicting the least
// recently observed pairs when the table is full) if needed, and marks it
// observed at ts.
func (e *Estimator) state(p Pair, ts int64) *pairState {
	e.mu.RLock()
	st := e.pairs[p]
	e.mu.RUnlock()
	if st == nil {
		e.mu.Lock()
		if st = e.pairs[p]; st == nil {
			if len(e.pairs) >= e.cfg.MaxPairs {
				e.evictLocked()
			}
			st = &pairState{}
			st.lastSeen.Store(math.MinInt64)
			// The hosts usually point into a decoded request; do not pin it.
			e.pairs[Pair{A: strings.Clone(p.A), B: strings.Clone(p.B)}] = st
		}
		e.mu.Unlock()
	}
	for {
		l := st.lastSeen.Load()
		if ts <= l || st.lastSeen.CompareAndSwap(l, ts) {
			break
		}
	}
	return st
}

// evictLocked forgets the least recently observed 1/64 of MaxPairs pairs (at
// least one, and enough to make room); ties go by pair order, so it is
// deterministic. e.mu must be held for writing.
func (e *Estimator) evictLocked() {
	n := max(1, e.cfg.MaxPairs/64, len(e.pairs)-e.cfg.MaxPairs+1)
	type aged struct {
		p  Pair
		at int64
	}
	all := make([]aged, 0, len(e.pairs))
	for p, st := range e.pairs {
		all = append(all, aged{p, st.lastSeen.Load()})
	}
	slices.SortFunc(all, func(x, y aged) int {
		if c := cmp.Compare(x.at, y.at); c != 0 {
			return c
		}
		if c := strings.Compare(x.p.A, y.p.A); c != 0 {
			return c
		}
		return strings.Compare(x.p.B, y.p.B)
	})
	for _, a := range all[:min(n, len(all))] {
		delete(e.pairs, a.p)
	}
}

// add appends a sample, overwriting the oldest once there are max of them.
func (st *pairState) add(at, off int64, maxSamples int) {
	st.mu.Lock()
	if len(st.ring) < maxSamples {
		if len(st.ring) == cap(st.ring) {
			grown := make([]sample, len(st.ring), min(maxSamples, max(8, 2*cap(st.ring))))
			copy(grown, st.ring)
			st.ring = grown
		}
		st.ring = append(st.ring, sample{at: at, off: off})
	} else {
		st.ring[st.next] = sample{at: at, off: off}
		st.next = (st.next + 1) % maxSamples
	}
	st.seq++
	st.mu.Unlock()
}

// median returns the median offset of the samples observed at or after
// cutoff, and their number.
func (st *pairState) median(cutoff int64, maxSamples int) (int64, int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if c := &st.cache; c.valid && c.seq == st.seq && cutoff <= c.oldest {
		return c.med, c.n
	}
	var buf [defaultMaxSamples]int64
	xs := buf[:0]
	if maxSamples > len(buf) {
		xs = make([]int64, 0, maxSamples)
	}
	oldest := int64(math.MaxInt64)
	for _, s := range st.ring {
		if s.at >= cutoff {
			xs = append(xs, s.off)
			oldest = min(oldest, s.at)
		}
	}
	med := median(xs)
	st.cache = medianCache{valid: true, seq: st.seq, oldest: oldest, n: len(xs), med: med}
	return med, len(xs)
}

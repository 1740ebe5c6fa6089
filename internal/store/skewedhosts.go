package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	json "github.com/goccy/go-json"

	"github.com/tracesift/tracesift/internal/model"
)

// pairsFresh is how long the reader trusts what it read of a tenant's
// clock_pairs: an estimate stored since shows in the traces read at most
// this much later. The sampler stores its estimates once a minute.
const pairsFresh = 5 * time.Second

// maxKnownPairs bounds the pairs kept a tenant; a tenant with more has every
// trace's window read.
const maxKnownPairs = 10000

// maxKnownEstimates bounds the estimates kept a tenant (a pair estimated once
// a minute for a week is 10 080); past it, only each pair's first and last are
// kept, and a trace through a pair estimated in its window reads that window.
const maxKnownEstimates = 10000

// maxTenantsKept bounds the tenants whose pairs (and times of their reads)
// the reader keeps; past it, it starts again with none.
const maxTenantsKept = 256

type hostPair struct{ a, b string }

// knownPairs is what the reader read of a tenant's clock_pairs.
type knownPairs struct {
	at        time.Time // when the read began
	pairs     map[hostPair]*pairEstimates
	all       bool // more than maxKnownPairs: any pair may be stored
	estimates bool // each pair holds every estimate, not only its first and last
}

// pairEstimates is what the reader keeps of a skewed host pair.
type pairEstimates struct {
	first, last int64      // the time of the first and last estimate, in seconds
	estimates   []estimate // by time, when kept
}

type estimate struct {
	at      int64 // seconds
	offset  int64 // clock(b) − clock(a), in nanoseconds
	samples int
}

// knownSkewedPairs returns the skewed pairs of two of hosts in the window
// fromNs–toNs, each pair's latest estimate in it, as trace_window.sql reads
// them, from k, the tenant's pairs (freshPairs); ok is false when k cannot
// tell (nil, or without every estimate of a pair in the window), and the
// window's statement must.
func knownSkewedPairs(k *knownPairs, hosts map[string]bool, fromNs, toNs int64) (pairs []model.ClockPair, ok bool) {
	if k == nil || k.all {
		return nil, false
	}
	// As the statement's bounds, in whole seconds.
	from, to := fromNs/1e9, toNs/1e9
	for p, e := range k.pairs {
		if !hosts[p.a] || !hosts[p.b] || e.last < from || e.first > to {
			continue
		}
		if !k.estimates {
			return nil, false
		}
		// The latest estimate at or before to, if it is not before from.
		i := sort.Search(len(e.estimates), func(i int) bool { return e.estimates[i].at > to }) - 1
		if i >= 0 && e.estimates[i].at >= from {
			pairs = append(pairs, model.ClockPair{A: p.a, B: p.b, OffsetNanos: e.estimates[i].offset,
				Samples: e.estimates[i].samples})
		}
	}
	return pairs, true
}

// freshPairs returns the tenant's pairs as read less than pairsFresh before
// now, waiting for running (a read of them under way, or nil) when what the
// reader has is older; nil when it has none that fresh.
func (r *Reader) freshPairs(ctx context.Context, tn string, now time.Time, running <-chan struct{}) *knownPairs {
	if k := r.pairsAt(tn, now); k != nil || running == nil || !await(ctx, running) {
		return k
	}
	return r.pairsAt(tn, now)
}

// pairsAt returns the tenant's pairs as read less than pairsFresh before
// now, or nil.
func (r *Reader) pairsAt(tn string, now time.Time) *knownPairs {
	r.pairsMu.Lock()
	defer r.pairsMu.Unlock()
	if k := r.pairsKnown[tn]; k != nil && now.Sub(k.at) < pairsFresh {
		return k
	}
	return nil
}

// renewPairs starts a read of the tenant's pairs in the background once
// what the reader has is half of pairsFresh old (pairsRefresh), so that
// while lookups keep coming none waits for it; it returns the read under
// way, if any.
func (r *Reader) renewPairs(ctx context.Context, tn string, now time.Time) <-chan struct{} {
	return r.pairsRefresh.start(ctx, now, tn, func(ctx context.Context) error {
		k, err := r.readPairs(ctx, tn)
		if err != nil {
			return err // the window's statement answers, or says what failed
		}
		k.at = now
		r.pairsMu.Lock()
		defer r.pairsMu.Unlock()
		if r.pairsKnown == nil || len(r.pairsKnown) >= maxTenantsKept {
			r.pairsKnown = map[string]*knownPairs{}
		}
		r.pairsKnown[tn] = k
		return nil
	})
}

// readPairs reads the tenant's skewed host pairs, the time of each one's
// first and last estimate and, while there are at most maxKnownEstimates,
// every estimate (queries/clock_pair_estimates.sql).
func (r *Reader) readPairs(ctx context.Context, tn string) (*knownPairs, error) {
	k := &knownPairs{pairs: map[hostPair]*pairEstimates{}, estimates: true}
	p := Params{"tenant": tn, "max_pairs": uint64(maxKnownPairs) + 1, "max_estimates": uint64(maxKnownEstimates)}
	err := r.conn.Query(ctx, r.pairEstimates, p, func(b []byte) error {
		var row struct {
			A       string  `json:"host_a"`
			B       string  `json:"host_b"`
			First   int64   `json:"first_s"`
			Last    int64   `json:"last_s"`
			At      []int64 `json:"at_s"`
			Offsets []int64 `json:"offsets_ns"`
			Samples []int   `json:"samples"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		if len(row.Offsets) != len(row.At) || len(row.Samples) != len(row.At) {
			return fmt.Errorf("pair %s–%s: %d times, %d offsets and %d samples", row.A, row.B,
				len(row.At), len(row.Offsets), len(row.Samples))
		}
		// A pair has one estimate at least: none means the tenant had too many.
		k.estimates = k.estimates && len(row.At) > 0
		e := &pairEstimates{first: row.First, last: row.Last, estimates: make([]estimate, len(row.At))}
		for i, at := range row.At {
			e.estimates[i] = estimate{at: at, offset: row.Offsets[i], samples: row.Samples[i]}
		}
		slices.SortStableFunc(e.estimates, func(a, b estimate) int { return cmp.Compare(a.at, b.at) })
		k.pairs[hostPair{row.A, row.B}] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the skewed host pairs: %w", err)
	}
	k.all = len(k.pairs) > maxKnownPairs
	return k, nil
}

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

// maxPairsTenants bounds the tenants whose pairs are kept; past it, the
// reader starts again with none.
const maxPairsTenants = 256

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
// them, from the tenant's pairs read at most pairsFresh ago; ok is false
// when those cannot tell, and the window's statement must. It reads the
// tenant's pairs when what it has is older, unless another read of them is
// under way: a trace's window costs a statement, the tenant's pairs one
// every pairsFresh.
func (r *Reader) knownSkewedPairs(ctx context.Context, tn string, hosts map[string]bool, fromNs, toNs int64) (
	pairs []model.ClockPair, ok bool) {
	k := r.tenantPairs(ctx, tn)
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

// tenantPairs returns the tenant's pairs as read at most pairsFresh ago,
// reading them if need be; nil when they are being read by another trace or
// could not be read.
func (r *Reader) tenantPairs(ctx context.Context, tn string) *knownPairs {
	now := r.now()
	r.pairsMu.Lock()
	k := r.pairsKnown[tn]
	fresh := k != nil && now.Sub(k.at) < pairsFresh
	if fresh || r.pairsReading[tn] {
		r.pairsMu.Unlock()
		if !fresh {
			return nil
		}
		return k
	}
	if r.pairsReading == nil {
		r.pairsReading = map[string]bool{}
	}
	r.pairsReading[tn] = true
	r.pairsMu.Unlock()
	k, err := r.readPairs(ctx, tn)
	r.pairsMu.Lock()
	defer r.pairsMu.Unlock()
	delete(r.pairsReading, tn)
	if err != nil {
		return nil // the window's statement answers, or says what failed
	}
	k.at = now
	if r.pairsKnown == nil || len(r.pairsKnown) >= maxPairsTenants {
		r.pairsKnown = map[string]*knownPairs{}
	}
	r.pairsKnown[tn] = k
	return k
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

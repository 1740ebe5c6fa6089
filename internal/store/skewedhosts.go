package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	json "github.com/goccy/go-json"
)

// pairsFresh is how long the reader trusts what it read of a tenant's
// clock_pairs: an estimate stored since shows in the traces read at most
// this much later. The sampler stores its estimates once a minute.
const pairsFresh = 5 * time.Second

// maxKnownPairs bounds the pairs kept a tenant; a tenant with more has every
// trace's window read.
const maxKnownPairs = 10000

type hostPair struct{ a, b string }

// knownPairs is what the reader read of a tenant's clock_pairs.
type knownPairs struct {
	at     time.Time             // when the read began
	ranges map[hostPair][2]int64 // the first and last estimate, in seconds
	all    bool                  // more than maxKnownPairs: any pair may be stored
}

// mayHaveSkewedPairs reports whether clock_pairs may hold an estimate of two
// of hosts (trace_window.sql's {hosts}) between fromNs and toNs: false only
// when the tenant's pairs, read at most pairsFresh ago, say none. It reads
// them when what it has is older, unless another read of them is under way.
// A trace's window costs a statement, the tenant's pairs one every
// pairsFresh.
func (r *Reader) mayHaveSkewedPairs(ctx context.Context, tn, hosts string, fromNs, toNs int64) bool {
	now := r.now()
	r.pairsMu.Lock()
	k := r.pairsKnown[tn]
	if k == nil || now.Sub(k.at) >= pairsFresh {
		if r.pairsReading[tn] {
			r.pairsMu.Unlock()
			return true
		}
		if r.pairsReading == nil {
			r.pairsReading = map[string]bool{}
		}
		r.pairsReading[tn] = true
		r.pairsMu.Unlock()
		read, err := r.readPairRanges(ctx, tn)
		r.pairsMu.Lock()
		delete(r.pairsReading, tn)
		if err != nil {
			r.pairsMu.Unlock()
			return true // the window's statement answers, or says what failed
		}
		read.at = now
		if r.pairsKnown == nil || len(r.pairsKnown) >= maxCachedResources {
			r.pairsKnown = map[string]*knownPairs{}
		}
		r.pairsKnown[tn], k = read, read
	}
	r.pairsMu.Unlock()
	if k.all {
		return true
	}
	// As the statement's has(splitByChar('\n', {hosts}), …) and its bounds.
	of := map[string]bool{}
	for h := range strings.SplitSeq(hosts, "\n") {
		of[h] = true
	}
	from, to := fromNs/1e9, toNs/1e9
	for p, span := range k.ranges {
		if of[p.a] && of[p.b] && span[1] >= from && span[0] <= to {
			return true
		}
	}
	return false
}

// readPairRanges reads the tenant's skewed host pairs and the time of each
// one's first and last estimate (queries/clock_pair_ranges.sql).
func (r *Reader) readPairRanges(ctx context.Context, tn string) (*knownPairs, error) {
	k := &knownPairs{ranges: map[hostPair][2]int64{}}
	p := Params{"tenant": tn, "max_pairs": uint64(maxKnownPairs) + 1}
	err := r.conn.Query(ctx, r.pairRanges, p, func(b []byte) error {
		var row struct {
			A     string `json:"host_a"`
			B     string `json:"host_b"`
			First int64  `json:"first_s"`
			Last  int64  `json:"last_s"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		k.ranges[hostPair{row.A, row.B}] = [2]int64{row.First, row.Last}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the skewed host pairs: %w", err)
	}
	k.all = len(k.ranges) > maxKnownPairs
	return k, nil
}

package red

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// Span is what the aggregator reads of one entry span, as the wire scan
// found it: the caller keeps the bytes for the length of the call only.
type Span struct {
	// Tenant is whose the span is ("" for the default tenant): tenants'
	// series are apart even when their names are alike.
	Tenant              string
	Service             string
	Operation, Instance []byte
	// Dimensions are the values of the aggregator's dimension keys, in
	// order (nil: not set).
	Dimensions [][]byte
	// Start is the span's start (Unix nanoseconds); the interval it falls in
	// is its series' time.
	Start    uint64
	Duration uint64 // nanoseconds
	Error    bool
	// Prefix caches the hash of Tenant, Service, Instance and Dimensions,
	// which the entry spans of one resource share: 0 until Add computes it;
	// the caller sets it back to 0 whenever one of them changes (a stale one
	// files the span under a wrong key: its series would be split).
	Prefix uint64
}

// OverflowDimension marks the series that counts the entry spans of every
// series past max_series in an interval, so that totals stay exact.
const OverflowDimension = "tracesift.red.overflow"

// Aggregator counts entry spans into series until Flush. It is safe for
// concurrent use: series are spread over stripes, each with its own lock.
type Aggregator struct {
	interval   uint64 // nanoseconds
	maxSeries  int64
	dimensions []string
	seed       maphash.Seed

	stripes [numStripes]stripe
	live    atomic.Int64 // series since the last Flush
	// overflowed counts the spans counted in an overflow series since the
	// last Flush.
	overflowed atomic.Uint64
}

const numStripes = 64

type stripe struct {
	mu     sync.Mutex
	series map[uint64][]*series // by hash of the key; a slice for collisions
}

type series struct {
	at                           uint64
	tenant                       string // "" for the default tenant
	service, operation, instance string
	dimensions                   []string // by Aggregator.dimensions, "" for unset
	overflow                     bool
	requests, errors             uint64
	latency                      buckets
	errorLatency                 buckets // of the errors only
}

// NewAggregator counts in intervals of interval, at most maxSeries series an
// interval (the rest in one overflow series each interval), keyed also by
// the values of dimensions.
func NewAggregator(interval time.Duration, maxSeries int, dimensions []string) *Aggregator {
	a := &Aggregator{interval: uint64(max(interval, time.Second)), maxSeries: int64(max(maxSeries, 1)),
		dimensions: dimensions, seed: maphash.MakeSeed()}
	for i := range a.stripes {
		a.stripes[i].series = map[uint64][]*series{}
	}
	return a
}

// Add counts one entry span.
func (a *Aggregator) Add(s *Span) {
	at := s.Start - s.Start%a.interval
	if s.Prefix == 0 {
		s.Prefix = a.prefix(s)
	}
	key := Mix64(Mix64(s.Prefix^at) ^ maphash.Bytes(a.seed, s.Operation))
	st := &a.stripes[key%numStripes]
	st.mu.Lock()
	sr := st.find(key, at, s)
	if sr == nil {
		if a.live.Add(1) > a.maxSeries {
			a.live.Add(-1)
			a.overflowed.Add(1)
			sr = st.overflow(at, s.Tenant, len(a.dimensions))
		} else {
			sr = a.newSeries(at, s)
			st.series[key] = append(st.series[key], sr)
		}
	}
	b := Bucket(s.Duration)
	sr.requests++
	sr.latency.add(b, 1)
	if s.Error {
		sr.errors++
		sr.errorLatency.add(b, 1)
	}
	st.mu.Unlock()
}

// prefix hashes what the spans of one resource share. Each field is hashed
// on its own and mixed in, in order: cheaper than streaming them through
// one maphash.Hash.
func (a *Aggregator) prefix(s *Span) uint64 {
	h := Mix64(maphash.String(a.seed, s.Service))
	if s.Tenant != "" {
		h = Mix64(h ^ maphash.String(a.seed, s.Tenant))
	}
	h = Mix64(h ^ maphash.Bytes(a.seed, s.Instance))
	for k := range a.dimensions {
		var v []byte
		if k < len(s.Dimensions) {
			v = s.Dimensions[k]
		}
		h = Mix64(h ^ maphash.Bytes(a.seed, v))
	}
	return h | 1 // never 0, which means not computed
}

// Mix64 scrambles x (the finalizer of SplitMix64), so that fields mixed in
// one after the other make a key that depends on their order.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// find is the series of s in interval at, nil when it has none yet.
func (st *stripe) find(key, at uint64, s *Span) *series {
	for _, sr := range st.series[key] {
		if sr.overflow || sr.at != at || sr.service != s.Service || sr.operation != string(s.Operation) ||
			sr.instance != string(s.Instance) || sr.tenant != s.Tenant {
			continue
		}
		same := true
		for k, v := range sr.dimensions {
			var got []byte
			if k < len(s.Dimensions) {
				got = s.Dimensions[k]
			}
			if v != string(got) {
				same = false
				break
			}
		}
		if same {
			return sr
		}
	}
	return nil
}

// overflow is the stripe's overflow series of interval at and tenant, kept
// under key 0 (a hash of 0 is as unlikely as any other; find skips overflow
// series): each tenant's totals stay exact.
func (st *stripe) overflow(at uint64, tenant string, dims int) *series {
	for _, sr := range st.series[0] {
		if sr.overflow && sr.at == at && sr.tenant == tenant {
			return sr
		}
	}
	sr := &series{at: at, tenant: tenant, overflow: true, dimensions: make([]string, dims)}
	st.series[0] = append(st.series[0], sr)
	return sr
}

func (a *Aggregator) newSeries(at uint64, s *Span) *series {
	sr := &series{at: at, tenant: s.Tenant, service: s.Service, operation: string(s.Operation),
		instance: string(s.Instance), dimensions: make([]string, len(a.dimensions))}
	for k := range sr.dimensions {
		if k < len(s.Dimensions) {
			sr.dimensions[k] = string(s.Dimensions[k])
		}
	}
	return sr
}

// Flush returns what was counted since the last Flush, one row a series
// and interval (overflow series of one interval and tenant merged into
// one), and how many spans went to overflow series; the aggregator starts
// again empty.
func (a *Aggregator) Flush() (rows []model.RED, overflowed uint64) {
	type overflowKey struct {
		at     uint64
		tenant string
	}
	overflow := map[overflowKey]*series{}
	for i := range a.stripes {
		st := &a.stripes[i]
		st.mu.Lock()
		taken := st.series
		st.series = make(map[uint64][]*series, len(taken))
		st.mu.Unlock()
		for _, list := range taken {
			for _, sr := range list {
				if !sr.overflow {
					rows = append(rows, a.row(sr))
					continue
				}
				if o := overflow[overflowKey{sr.at, sr.tenant}]; o != nil {
					o.requests += sr.requests
					o.errors += sr.errors
					o.latency.merge(&sr.latency)
					o.errorLatency.merge(&sr.errorLatency)
				} else {
					overflow[overflowKey{sr.at, sr.tenant}] = sr
				}
			}
		}
	}
	for _, sr := range overflow {
		rows = append(rows, a.row(sr))
	}
	a.live.Store(0)
	return rows, a.overflowed.Swap(0)
}

func (a *Aggregator) row(sr *series) model.RED {
	r := model.RED{TimeUnixNano: sr.at, Service: sr.service, Operation: sr.operation, Instance: sr.instance,
		Dimensions: map[string]string{}, Requests: sr.requests, Errors: sr.errors, Latency: sr.latency.sketch(),
		ErrorLatency: sr.errorLatency.sketch(), Tenant: sr.tenant}
	for k, v := range sr.dimensions {
		if v != "" {
			r.Dimensions[a.dimensions[k]] = v
		}
	}
	if sr.overflow {
		r.Dimensions[OverflowDimension] = "true"
	}
	return r
}

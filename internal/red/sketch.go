// Package red counts the requests, errors and durations (RED) of every entry
// span the collector receives — server and consumer spans and roots —
// before the sampler decides, so that rates and percentiles are those of all
// traffic, not of the sampled traces (which keep every error and 1 % of the
// rest). Series are a service's operation on one instance with one set of
// dimension values, over fixed intervals; durations go into a mergeable
// sketch whose quantiles are within RelativeAccuracy.
package red

import (
	"math"
	"slices"
)

// RelativeAccuracy bounds the relative error of a quantile read from a
// Sketch.
const RelativeAccuracy = 0.02

// The sketch's buckets grow by gamma: bucket i holds the durations in
// (gamma^(i-1), gamma^i] nanoseconds, so that its midpoint (BucketValue) is
// within RelativeAccuracy of each of them.
var (
	gamma    = (1 + RelativeAccuracy) / (1 - RelativeAccuracy)
	logGamma = math.Log(gamma)
)

// Bucket is the sketch bucket of a duration of d nanoseconds; 0 for d ≤ 1.
func Bucket(d uint64) int32 {
	if d <= 1 {
		return 0
	}
	return int32(math.Ceil(math.Log(float64(d)) / logGamma))
}

// BucketValue is the duration, in nanoseconds, that bucket i stands for.
func BucketValue(i int32) float64 {
	if i <= 0 {
		return 0
	}
	return 2 * math.Pow(gamma, float64(i)) / (gamma + 1)
}

// Sketch counts durations by Bucket. Sketches merge by adding counts; the
// store keeps them as Map(Int32, UInt64).
type Sketch map[int32]uint64

// Add counts one duration of d nanoseconds.
func (s Sketch) Add(d uint64) { s[Bucket(d)]++ }

// buckets is a Sketch being filled, dense: n[i] counts bucket lo+i. Adding
// to it is an index rather than a map assignment, on every entry span.
type buckets struct {
	lo int32
	n  []uint64
}

// add counts c durations in bucket b.
func (k *buckets) add(b int32, c uint64) {
	switch {
	case len(k.n) == 0:
		k.lo, k.n = b, make([]uint64, 1, 16)
	case b < k.lo:
		// Room below too: durations spread both ways from the first.
		grow := int(k.lo-b) + len(k.n)/2
		n := make([]uint64, grow+len(k.n), 2*(grow+len(k.n)))
		copy(n[grow:], k.n)
		k.lo, k.n = k.lo-int32(grow), n
	case int(b-k.lo) >= len(k.n):
		k.n = append(k.n, make([]uint64, int(b-k.lo)+1-len(k.n))...)
	}
	k.n[b-k.lo] += c
}

// merge adds o's counts to k.
func (k *buckets) merge(o *buckets) {
	for i, c := range o.n {
		if c > 0 {
			k.add(o.lo+int32(i), c)
		}
	}
}

// sketch is k as a Sketch: its non-empty buckets.
func (k *buckets) sketch() Sketch {
	s := Sketch{}
	for i, c := range k.n {
		if c > 0 {
			s[k.lo+int32(i)] = c
		}
	}
	return s
}

// Merge adds o's counts to s.
func (s Sketch) Merge(o Sketch) {
	for i, n := range o {
		s[i] += n
	}
}

// Count is the number of durations counted.
func (s Sketch) Count() uint64 {
	var n uint64
	for _, c := range s {
		n += c
	}
	return n
}

// Quantile is the duration in nanoseconds at q (0 ≤ q ≤ 1) of what s
// counted, within RelativeAccuracy; 0 when s is empty.
func (s Sketch) Quantile(q float64) float64 {
	n := s.Count()
	if n == 0 {
		return 0
	}
	rank := min(max(q, 0), 1) * float64(n-1)
	keys := make([]int32, 0, len(s))
	for i := range s {
		keys = append(keys, i)
	}
	slices.Sort(keys)
	var seen uint64
	for _, i := range keys {
		seen += s[i]
		if float64(seen) > rank {
			return BucketValue(i)
		}
	}
	return BucketValue(keys[len(keys)-1])
}

// CountAbove is how many of the durations counted were longer than d
// nanoseconds, to within a bucket: a bucket counts when its value is above d
// (from BucketAbove(d) on).
func (s Sketch) CountAbove(d uint64) uint64 {
	first := BucketAbove(d)
	var n uint64
	for i, c := range s {
		if i >= first {
			n += c
		}
	}
	return n
}

// BucketAbove is the first bucket whose value is above d nanoseconds.
func BucketAbove(d uint64) int32 {
	i := Bucket(d)
	for i > 0 && BucketValue(i-1) > float64(d) {
		i--
	}
	for BucketValue(i) <= float64(d) {
		i++
	}
	return i
}

package red

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBucketValueIsWithinTheAccuracy(t *testing.T) {
	for _, d := range []uint64{2, 3, 10, 999, 1000, 1001, 123_456, 1e6, 35e6, 930e6, 1e9, 3600e9, math.MaxInt64} {
		v := BucketValue(Bucket(d))
		if rel := math.Abs(v-float64(d)) / float64(d); rel > RelativeAccuracy+1e-9 {
			t.Errorf("duration %d: bucket %d stands for %.1f, %.4f off", d, Bucket(d), v, rel)
		}
	}
	if Bucket(0) != 0 || Bucket(1) != 0 || BucketValue(0) != 0 {
		t.Error("durations of 0 and 1 ns share bucket 0, which stands for 0")
	}
}

// Quantiles of a sketch are within the accuracy of the exact quantile (the
// lower of the two order statistics around the rank), whatever the shape.
func TestQuantilesAgainstExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func() uint64{
		"uniform 1-100 ms":  func() uint64 { return uint64(1e6 + r.Float64()*99e6) },
		"lognormal":         func() uint64 { return uint64(math.Exp(r.NormFloat64()*1.5 + 16)) },
		"bimodal 35/930 ms": func() uint64 { return []uint64{35e6, 930e6}[r.IntN(10)/9] + uint64(r.IntN(1e6)) },
	}
	for name, gen := range shapes {
		s := Sketch{}
		var all []uint64
		for range 20000 {
			d := gen()
			s.Add(d)
			all = append(all, d)
		}
		slices.Sort(all)
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
			exact := float64(all[int(q*float64(len(all)-1))])
			got := s.Quantile(q)
			if math.Abs(got-exact)/exact > RelativeAccuracy+1e-9 {
				t.Errorf("%s: q%.3f = %.0f, exact %.0f", name, q, got, exact)
			}
		}
		if s.Count() != uint64(len(all)) {
			t.Errorf("%s: count %d", name, s.Count())
		}
	}
}

func TestMergeAndCountAbove(t *testing.T) {
	a, b := Sketch{}, Sketch{}
	for range 90 {
		a.Add(35e6)
	}
	for range 10 {
		b.Add(930e6)
	}
	a.Merge(b)
	if a.Count() != 100 || a.CountAbove(500e6) != 10 || a.CountAbove(10e6) != 100 {
		t.Errorf("merged: count %d, above 500 ms %d, above 10 ms %d", a.Count(), a.CountAbove(500e6), a.CountAbove(10e6))
	}
	if p50, p99 := a.Quantile(0.5), a.Quantile(0.99); math.Abs(p50-35e6) > 35e6*RelativeAccuracy || math.Abs(p99-930e6) > 930e6*RelativeAccuracy {
		t.Errorf("p50 %.0f, p99 %.0f", p50, p99)
	}
	if (Sketch{}).Quantile(0.5) != 0 {
		t.Error("an empty sketch has no quantile")
	}
}

// BucketAbove is the first bucket CountAbove counts, for any duration.
func TestBucketAbove(t *testing.T) {
	for _, d := range []uint64{0, 1, 2, 3, 999, 1000, 1001, 35e6, 1e9, 1e9 + 1, 3e12} {
		i := BucketAbove(d)
		if BucketValue(i) <= float64(d) || i > 0 && BucketValue(i-1) > float64(d) {
			t.Errorf("BucketAbove(%d) = %d: values %g, %g", d, i, BucketValue(i-1), BucketValue(i))
		}
	}
}

// buckets, filled in any order (down and up from the first duration) and
// merged, hold what a Sketch would.
func TestBucketsAreASketch(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var k, half buckets
	want := Sketch{}
	for i := range 5000 {
		d := uint64(math.Exp(r.Float64() * 25)) // 1 ns to about 72 s
		want.Add(d)
		if i%2 == 0 {
			k.add(Bucket(d), 1)
		} else {
			half.add(Bucket(d), 1)
		}
	}
	k.merge(&half)
	if got := k.sketch(); !maps.Equal(got, want) {
		t.Fatalf("buckets hold %d buckets, a Sketch %d", len(got), len(want))
	}
	var empty buckets
	if s := empty.sketch(); s == nil || len(s) != 0 {
		t.Fatalf("empty buckets: %v, want an empty Sketch", s)
	}
}

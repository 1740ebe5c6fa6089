package red

import (
	"cmp"
	"maps"
	"slices"

	"github.com/tracesift/tracesift/internal/model"
)

// Comparison sets the failing requests of a window against the healthy ones
// along every dimension: a value that occurs much more often among the
// failing (a canary version, a bad instance, a region) has a high lift.
type Comparison struct {
	Failing, Healthy uint64
	// Values are the dimension values, highest lift first.
	Values []ValueShare
}

// ValueShare is how often one value of a dimension occurs among the failing
// and among the healthy requests.
type ValueShare struct {
	Key, Value       string
	Failing, Healthy uint64
	// FailingShare and HealthyShare are Failing/Comparison.Failing and
	// Healthy/Comparison.Healthy; Lift is their ratio, with half a request
	// added to the healthy side so that a value never seen healthy has a
	// finite lift that still grows with its failing requests.
	FailingShare, HealthyShare, Lift float64
}

// Tally splits the requests of RED rows for Compare: Slow counts those that
// did not fail and took longer than slow nanoseconds (their latency less
// their errors', from BucketAbove(slow) on).
func Tally(rows []model.RED, slow uint64) []model.REDTally {
	out := make([]model.REDTally, len(rows))
	for i := range rows {
		r := &rows[i]
		all, bad := Sketch(r.Latency).CountAbove(slow), Sketch(r.ErrorLatency).CountAbove(slow)
		out[i] = model.REDTally{Operation: r.Operation, Instance: r.Instance, Dimensions: r.Dimensions,
			Requests: r.Requests, Errors: r.Errors, Slow: all - min(bad, all)}
	}
	return out
}

// Compare counts the requests of series as failing (an error, or Slow) or
// healthy, and tallies them by instance, operation and each dimension's
// value. Series come from one window; counts are exact but for the slow
// ones, which are known to a sketch bucket.
func Compare(series []model.REDTally) Comparison {
	type tally struct{ failing, healthy uint64 }
	byValue := map[[2]string]*tally{}
	var c Comparison
	add := func(key, value string, failing, healthy uint64) {
		t := byValue[[2]string{key, value}]
		if t == nil {
			t = &tally{}
			byValue[[2]string{key, value}] = t
		}
		t.failing += failing
		t.healthy += healthy
	}
	for i := range series {
		s := &series[i]
		failing := min(s.Errors+s.Slow, s.Requests)
		healthy := s.Requests - failing
		c.Failing += failing
		c.Healthy += healthy
		add("instance", s.Instance, failing, healthy)
		add("operation", s.Operation, failing, healthy)
		for k, v := range s.Dimensions {
			add(k, v, failing, healthy)
		}
	}
	for _, kv := range slices.SortedFunc(maps.Keys(byValue), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	}) {
		t := byValue[kv]
		v := ValueShare{Key: kv[0], Value: kv[1], Failing: t.failing, Healthy: t.healthy}
		if c.Failing > 0 {
			v.FailingShare = float64(t.failing) / float64(c.Failing)
		}
		if c.Healthy > 0 {
			v.HealthyShare = float64(t.healthy) / float64(c.Healthy)
		}
		v.Lift = v.FailingShare / ((float64(t.healthy) + 0.5) / (float64(c.Healthy) + 0.5))
		c.Values = append(c.Values, v)
	}
	slices.SortStableFunc(c.Values, func(a, b ValueShare) int {
		return cmp.Or(cmp.Compare(b.Lift, a.Lift), cmp.Compare(b.Failing, a.Failing))
	})
	return c
}

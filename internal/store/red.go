package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// redQuery is the named query of queries/ over the RED rows of a window
// (queries/fragments/red_rows.sql).
func redQuery(name, db string) string {
	return strings.ReplaceAll(Query(name, db), "${red_rows}", Query("fragments/red_rows", db))
}

// redTiers are the tiers of red_rollup, their buckets' width in seconds,
// finest first, each a multiple of the one before (schema 014).
var redTiers = [...]int64{60, 300, 3600}

// redWindow is the parameters of queries/fragments/red_rows.sql for f's
// service, operation and window, of tenant tn: the window [Start, End] in
// whole seconds, split into the ranges each table answers. A bucket of a
// rollup is read when it lies wholly in the window and, with points every
// step seconds (0: none), wholly in one point; the rest of the window from
// the 10 s rows.
func redWindow(f REDFilter, step int64, tn string) Params {
	clamp := func(ns int64) int64 { return min(max(ns/1e9, 0), math.MaxUint32) }
	lo, hi := clamp(f.Start), clamp(f.End)+1 // [lo, hi)
	p := Params{"service": f.Service, "operation": f.Operation, "tenant": tn}
	// Tier i reads its whole buckets [a, b) less the next tier's [na, nb),
	// which lies inside; the 10 s rows (t0) read [lo, hi) less tier 1's.
	a, b := lo, hi
	for i := 0; i <= len(redTiers); i++ {
		na, nb := a, a // none
		if i < len(redTiers) {
			r := redTiers[i]
			if x, y := (lo+r-1)/r*r, hi/r*r; step%r == 0 && x < y && x >= a && y <= b {
				na, nb = x, y
			}
		}
		t := "t" + strconv.Itoa(i)
		p[t+"_lo"], p[t+"_hi"], p[t+"_lo2"], p[t+"_hi2"] = a, na, nb, b
		if na == nb {
			na, nb = b, b // the coarser tiers read nothing
		}
		a, b = na, nb
	}
	return p
}

// REDFilter selects the RED that Reader.RED sums. Service is required; an
// empty Operation takes every operation of the service. GroupBy is
// "instance", "operation" or a dimension's key; Start and End are Unix
// nanoseconds; Step, when positive, splits the window into points.
type REDFilter struct {
	Service, Operation, GroupBy string
	Start, End                  int64
	Step                        int64 // nanoseconds; at least a second
	// MaxGroups bounds the groups returned, the busiest first.
	MaxGroups int
}

// RED sums the RED rows of f's service (and operation) in the window by
// group, busiest group first, each with its points when f.Step is set.
func (r *Reader) RED(ctx context.Context, f REDFilter) ([]model.REDGroup, error) {
	step, points := int64(0), max(f.End/1e9-f.Start/1e9+1, 1) // no step: the points are not read; few are made
	if f.Step > 0 {
		step = max(f.Step/1e9, 1)
		points = step
	}
	p := redWindow(f, step, tenant.FromContext(ctx))
	p["group"], p["step_s"] = f.GroupBy, uint64(min(points, math.MaxUint32))
	byValue := map[string]*model.REDGroup{}
	var order []*model.REDGroup
	err := r.conn.Query(ctx, r.redQuery, p, func(b []byte) error {
		var row struct {
			Value     string           `json:"value"`
			T         int64            `json:"t"` // -1: the whole window
			Requests  uint64           `json:"requests"`
			Errors    uint64           `json:"errors"`
			Latency   map[int32]uint64 `json:"latency"`
			P99Bucket int32            `json:"p99_bucket"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		g := byValue[row.Value]
		if g == nil {
			g = &model.REDGroup{Service: f.Service, Operation: f.Operation, GroupBy: f.GroupBy, Value: row.Value,
				Latency: map[int32]uint64{}}
			byValue[row.Value] = g
			order = append(order, g)
		}
		switch {
		case row.T < 0:
			g.Requests, g.Errors, g.Latency = row.Requests, row.Errors, nonNil(row.Latency)
		case f.Step > 0:
			g.Points = append(g.Points, model.REDPoint{TimeUnixNano: uint64(row.T) * 1e9,
				Requests: row.Requests, Errors: row.Errors, P99Bucket: row.P99Bucket})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading RED: %w", err)
	}
	slices.SortStableFunc(order, func(a, b *model.REDGroup) int { return cmp.Compare(b.Requests, a.Requests) })
	if f.MaxGroups > 0 && len(order) > f.MaxGroups {
		order = order[:f.MaxGroups]
	}
	out := make([]model.REDGroup, len(order))
	for i, g := range order {
		out[i] = *g
	}
	return out, nil
}

// REDTallies returns the requests of each series of f's service (and
// operation) over the window (f.GroupBy and f.Step are not used), Slow
// counting those that did not fail and whose latency bucket is slowBucket
// or above.
func (r *Reader) REDTallies(ctx context.Context, f REDFilter, slowBucket int32) ([]model.REDTally, error) {
	p := redWindow(f, 0, tenant.FromContext(ctx))
	p["slow_bucket"] = int64(slowBucket)
	var out []model.REDTally
	err := r.conn.Query(ctx, r.redTallies, p, func(b []byte) error {
		var row struct {
			Instance   string            `json:"instance"`
			Operation  string            `json:"operation"`
			Dimensions map[string]string `json:"dimensions"`
			Requests   uint64            `json:"requests"`
			Errors     uint64            `json:"errors"`
			SlowAll    uint64            `json:"slow_all"`
			SlowErrors uint64            `json:"slow_errors"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		out = append(out, model.REDTally{Operation: row.Operation, Instance: row.Instance,
			Dimensions: nonNil(row.Dimensions), Requests: row.Requests, Errors: row.Errors,
			Slow: row.SlowAll - min(row.SlowErrors, row.SlowAll)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading RED tallies: %w", err)
	}
	return out, nil
}

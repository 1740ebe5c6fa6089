package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/tracesift/tracesift/internal/model"
)

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
	step := f.Step / 1e9
	if f.Step <= 0 {
		step = max(f.End/1e9-f.Start/1e9+1, 1) // one point for the window
	}
	p := Params{"service": f.Service, "operation": f.Operation, "group": f.GroupBy,
		"start_s": f.Start / 1e9, "end_s": f.End / 1e9, "step_s": uint64(min(max(step, 1), math.MaxUint32))}
	byValue := map[string]*model.REDGroup{}
	var order []*model.REDGroup
	err := r.conn.Query(ctx, r.redQuery, p, func(b []byte) error {
		var row struct {
			Value    string           `json:"value"`
			T        int64            `json:"t"`
			Requests uint64           `json:"requests"`
			Errors   uint64           `json:"errors"`
			Latency  map[int32]uint64 `json:"latency"`
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
		g.Requests += row.Requests
		g.Errors += row.Errors
		for k, n := range row.Latency {
			g.Latency[k] += n
		}
		if f.Step > 0 {
			g.Points = append(g.Points, model.REDPoint{TimeUnixNano: uint64(max(row.T, 0)) * 1e9,
				Requests: row.Requests, Errors: row.Errors, Latency: row.Latency})
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

// REDSeries returns the RED of each series of f's service (and operation)
// summed over the window (f.GroupBy and f.Step are not used): the rows'
// TimeUnixNano is f.Start.
func (r *Reader) REDSeries(ctx context.Context, f REDFilter) ([]model.RED, error) {
	p := Params{"service": f.Service, "operation": f.Operation, "start_s": f.Start / 1e9, "end_s": f.End / 1e9}
	var out []model.RED
	err := r.conn.Query(ctx, r.redSeries, p, func(b []byte) error {
		var row struct {
			Instance     string            `json:"instance"`
			Operation    string            `json:"operation"`
			Dimensions   map[string]string `json:"dimensions"`
			Requests     uint64            `json:"requests"`
			Errors       uint64            `json:"errors"`
			Latency      map[int32]uint64  `json:"latency"`
			ErrorLatency map[int32]uint64  `json:"error_latency"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		out = append(out, model.RED{TimeUnixNano: uint64(max(f.Start, 0)), Service: f.Service, Operation: row.Operation,
			Instance: row.Instance, Dimensions: nonNil(row.Dimensions), Requests: row.Requests, Errors: row.Errors,
			Latency: row.Latency, ErrorLatency: row.ErrorLatency})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading RED series: %w", err)
	}
	return out, nil
}

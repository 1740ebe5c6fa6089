package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// TracesFilter selects the traces SearchTraces returns: those that started
// between Start and End (Unix nanoseconds, inclusive). Empty fields match
// all; MaxDuration 0 means no upper bound.
type TracesFilter struct {
	Service, Operation       string
	MinDuration, MaxDuration time.Duration
	ErrorsOnly               bool
	// Attributes must each be on some span of the trace (key = value, on
	// the span's own attributes), at most MaxAttributeFilters of them.
	Attributes []AttributeFilter
	// SpanName, when set, must be the name of some span of the trace, of
	// Service when that is set (Operation names the root span only).
	SpanName   string
	Start, End int64
	// Limit and Offset page through the results, which come in a stable
	// order (newest first, then by trace id).
	Limit, Offset int
}

// AttributeFilter is one attr.KEY=VALUE of a trace search.
type AttributeFilter struct{ Key, Value string }

// MaxAttributeFilters bounds the attribute filters of one search.
const MaxAttributeFilters = 4

// searchCandidates is how many rows of trace_summaries a search takes for a
// page: twice the page's end, since a trace whose spans came in several
// inserts has several rows, and a part of a trace may pass a filter that the
// whole trace does not. When the page comes out short although the window
// held that many candidate rows, the search runs once more with
// wideCandidates: candidates that failed the exact filters may have crowded
// out the ones that pass. With fewer, the short page is all there is (an
// attribute search for one order id, say, is answered by one run). The
// wide run takes at most maxWideCandidates rows: a deep page (offset 10 000)
// would otherwise ask for 700 000.
func searchCandidates(limit, offset int) int64 { return 2*int64(limit+offset) + 16 }

func wideCandidates(limit, offset int) int64 {
	return max(min(64*int64(limit+offset)+1024, maxWideCandidates), searchCandidates(limit, offset))
}

const maxWideCandidates = 65536

// SearchTraces returns the summaries of the traces matching f, newest first,
// from the per-trace tables alone (spans are read for attribute filters).
func (r *Reader) SearchTraces(ctx context.Context, f TracesFilter) ([]model.TraceSummary, error) {
	if len(f.Attributes) > MaxAttributeFilters {
		return nil, fmt.Errorf("at most %d attribute filters, got %d", MaxAttributeFilters, len(f.Attributes))
	}
	asked := searchCandidates(f.Limit, f.Offset)
	p := Params{"start_ns": f.Start, "end_ns": f.End, "candidates": asked, "tenant": tenant.FromContext(ctx),
		// A trace that started in the window ends within the hour, mostly:
		// its spans and rows start no more than that after the window's end
		// (or before its start: a part of the trace without its root).
		"near_start_ns": satAdd(f.Start, -int64(time.Hour)), "near_end_ns": satAdd(f.End, int64(time.Hour))}
	var sf searchFilters
	if f.Service != "" {
		p["service"] = f.Service
		sf.add("has(%[1]sservices, {service:String})")
	}
	if f.Operation != "" {
		p["operation"] = f.Operation
		sf.add("%[1]sroot_name = {operation:String}")
	}
	if f.MinDuration != 0 {
		p["min_duration_ns"] = f.MinDuration.Nanoseconds()
		sf.add("(%[1]sduration_ns >= {min_duration_ns:Int64} OR %[1]sroot_name = '')")
	}
	if f.MaxDuration != 0 {
		p["max_duration_ns"] = f.MaxDuration.Nanoseconds()
		sf.add("%[1]sduration_ns <= {max_duration_ns:Int64}")
	}
	if f.ErrorsOnly {
		sf.add("%[1]serror_count > 0")
	}
	for i, a := range f.Attributes {
		k, v := fmt.Sprintf("ak%d", i), fmt.Sprintf("av%d", i)
		fmt.Fprintf(&sf.candidate, "AND trace_id IN (SELECT trace_id FROM %s WHERE attributes[{%s:String}] = {%s:String} "+
			"AND tenant = {tenant:String} AND timestamp >= fromUnixTimestamp64Nano({start_ns:Int64}) "+
			"AND timestamp <= fromUnixTimestamp64Nano({near_end_ns:Int64})) ", r.spansTable, k, v)
		p[k], p[v] = a.Key, a.Value
	}
	if f.SpanName != "" {
		ofService := ""
		if f.Service != "" {
			ofService = "AND service = {service:String} "
		}
		fmt.Fprintf(&sf.candidate, "AND trace_id IN (SELECT trace_id FROM %s WHERE name = {span_name:String} "+
			"AND tenant = {tenant:String} %sAND timestamp >= fromUnixTimestamp64Nano({start_ns:Int64}) "+
			"AND timestamp <= fromUnixTimestamp64Nano({near_end_ns:Int64})) ", r.spansTable, ofService)
		p["span_name"] = f.SpanName
	}
	query := strings.NewReplacer("${candidate_filters}", sf.candidate.String(), "${row_filters}", sf.row.String()).
		Replace(r.traceSearch)
	out, candidates, err := r.searchTraces(ctx, query, p, f)
	if err == nil && len(out) < f.Limit && candidates >= asked {
		p["candidates"] = wideCandidates(f.Limit, f.Offset)
		out, _, err = r.searchTraces(ctx, query, p, f)
	}
	if err != nil {
		return nil, fmt.Errorf("searching traces: %w", err)
	}
	return out, nil
}

// searchFilters are the row filters of a search that are set, as the slots
// of traces_search.sql take them.
type searchFilters struct{ candidate, row strings.Builder }

// add adds a filter on a row of trace_summaries, its columns after %[1]s
// (the table's name where passing_rows needs it).
func (sf *searchFilters) add(onRow string) {
	fmt.Fprintf(&sf.candidate, "AND "+onRow+" ", "")
	fmt.Fprintf(&sf.row, "AND "+onRow+" ", "trace_summaries.")
}

// satAdd is a + b, held to the range of int64 (b is a duration of either
// sign).
func satAdd(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// candidateTrace is a row of traces_search.sql: a candidate's summary, summed
// up from all its rows.
type candidateTrace struct {
	TraceID     string   `json:"trace_id"`
	RootService string   `json:"root_service"`
	RootName    string   `json:"root_name"`
	StartNs     int64    `json:"start_ns"`
	DurationNs  int64    `json:"duration_ns"`
	SpanCount   uint64   `json:"span_count"`
	ErrorCount  uint64   `json:"error_count"`
	Services    []string `json:"services"`
	PassingRows int64    `json:"passing_rows"`
}

// passes says whether the whole trace passes f: it started in the window and
// passes every filter that is set.
func (t *candidateTrace) passes(f TracesFilter) bool {
	return t.StartNs >= f.Start && t.StartNs <= f.End &&
		(f.Service == "" || slices.Contains(t.Services, f.Service)) &&
		(f.Operation == "" || t.RootName == f.Operation) &&
		(f.MinDuration == 0 || t.DurationNs >= f.MinDuration.Nanoseconds()) &&
		(f.MaxDuration == 0 || t.DurationNs <= f.MaxDuration.Nanoseconds()) &&
		(!f.ErrorsOnly || t.ErrorCount > 0)
}

// searchTraces runs a search and returns f's page of the candidates that pass
// it, newest first, then by trace id, and how many rows the candidates have
// in the window that pass its row filters.
func (r *Reader) searchTraces(ctx context.Context, query string, p Params, f TracesFilter) ([]model.TraceSummary, int64, error) {
	var (
		found      []candidateTrace
		candidates int64
	)
	err := r.conn.Query(ctx, query, p, func(b []byte) error {
		var t candidateTrace
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		candidates += t.PassingRows
		if t.passes(f) {
			found = append(found, t)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(found, func(a, b candidateTrace) int {
		return cmp.Or(cmp.Compare(b.StartNs, a.StartNs), strings.Compare(b.TraceID, a.TraceID))
	})
	found = found[min(max(f.Offset, 0), len(found)):]
	found = found[:min(max(f.Limit, 0), len(found))]
	out := make([]model.TraceSummary, len(found))
	for i, t := range found {
		out[i] = model.TraceSummary{TraceID: t.TraceID, RootService: t.RootService, RootName: t.RootName,
			StartUnixNano: uint64(max(t.StartNs, 0)), DurationNano: uint64(max(t.DurationNs, 0)),
			SpanCount: t.SpanCount, ErrorCount: t.ErrorCount, Services: t.Services}
		if out[i].Services == nil {
			out[i].Services = []string{}
		}
	}
	return out, candidates, nil
}

// Services returns the services of the traces stored between start and end.
func (r *Reader) Services(ctx context.Context, start, end int64) ([]string, error) {
	return r.names(ctx, r.services, Params{"start_ns": start, "end_ns": end, "tenant": tenant.FromContext(ctx)}, "service")
}

// Operations returns the span names of service between start and end.
func (r *Reader) Operations(ctx context.Context, service string, start, end int64) ([]string, error) {
	return r.names(ctx, r.operations, Params{"service": service, "start_ns": start, "end_ns": end,
		"tenant": tenant.FromContext(ctx)}, "name")
}

// Dependencies returns the calls between services in the spans stored
// between start and end, by caller and callee.
func (r *Reader) Dependencies(ctx context.Context, start, end int64) ([]model.Dependency, error) {
	out := []model.Dependency{}
	p := Params{"start_ns": start, "end_ns": end, "tenant": tenant.FromContext(ctx)}
	err := r.conn.Query(ctx, r.dependencies, p, func(b []byte) error {
		var row struct {
			Parent, Child string
			Calls         uint64 `json:"calls"`
			Errors        uint64 `json:"errors"`
			P99           uint64 `json:"p99_ns"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		out = append(out, model.Dependency{Parent: row.Parent, Child: row.Child, Calls: row.Calls, Errors: row.Errors,
			P99Nanos: row.P99})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the dependencies between services: %w", err)
	}
	return out, nil
}

// ClockPairs returns the offsets of the skewed host pairs recorded between
// start and end, by pair and time.
func (r *Reader) ClockPairs(ctx context.Context, start, end int64) ([]model.ClockPair, error) {
	out := []model.ClockPair{}
	p := Params{"start_ns": start, "end_ns": end, "tenant": tenant.FromContext(ctx)}
	err := r.conn.Query(ctx, r.clockPairs, p, func(b []byte) error {
		var row struct {
			TimeNs  int64  `json:"time_ns"`
			A       string `json:"host_a"`
			B       string `json:"host_b"`
			Offset  int64  `json:"offset_ns"`
			Samples int    `json:"samples"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		out = append(out, model.ClockPair{TimeUnixNano: uint64(max(row.TimeNs, 0)), A: row.A, B: row.B,
			OffsetNanos: row.Offset, Samples: row.Samples})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the clock offsets of host pairs: %w", err)
	}
	return out, nil
}

func (r *Reader) names(ctx context.Context, query string, p Params, column string) ([]string, error) {
	out := []string{}
	err := r.conn.Query(ctx, query, p, func(b []byte) error {
		var row map[string]string
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		out = append(out, row[column])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %ss: %w", column, err)
	}
	return out, nil
}

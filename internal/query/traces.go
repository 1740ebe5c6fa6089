package query

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tracesift/tracesift/internal/store"
)

// Defaults and bounds of the trace search and the service lists.
const (
	defaultTracesRange = time.Hour
	defaultTracesLimit = 20
	maxTracesLimit     = 1000
	maxTracesOffset    = 10000
	namesRange         = 24 * time.Hour
)

// searchTraces serves GET /api/v1/traces?service=&operation=&minDuration=
// &maxDuration=&status=error&attr.KEY=VALUE&start=&end=&limit=&offset=:
// summaries of the traces that started in the window (the last hour by
// default), newest first.
func (a *api) searchTraces(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.TracesFilter{Service: q.Get("service"), Operation: q.Get("operation")}
	if len(f.Service) > maxParamLen || len(f.Operation) > maxParamLen {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("`service` and `operation` are at most %d bytes", maxParamLen))
		return
	}
	var msg string
	if f.Attributes, msg = attributeFilters(q); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxTracesOffset {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("`offset`: want a number from 0 to %d", maxTracesOffset))
			return
		}
		f.Offset = n
	}
	var err error
	for _, d := range []struct {
		key  string
		into *time.Duration
	}{{"minDuration", &f.MinDuration}, {"maxDuration", &f.MaxDuration}} {
		if v := q.Get(d.key); v != "" {
			if *d.into, err = time.ParseDuration(v); err != nil || *d.into < 0 {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("`%s`: want a duration such as 1.5s or 200ms, got %q", d.key, v))
				return
			}
		}
	}
	if f.MaxDuration > 0 && f.MinDuration > f.MaxDuration {
		writeError(w, http.StatusBadRequest, "`minDuration` is above `maxDuration`")
		return
	}
	switch q.Get("status") {
	case "":
	case "error":
		f.ErrorsOnly = true
	default:
		writeError(w, http.StatusBadRequest, "`status`: want error (or nothing for every trace)")
		return
	}
	if f.Start, f.End, f.Limit, msg = a.window(q, time.Now(), defaultTracesRange, defaultTracesLimit, maxTracesLimit); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	traces, err := a.reader.SearchTraces(r.Context(), f)
	a.answer(w, r, "searching traces", struct {
		Traces []TraceSummary `json:"traces"`
	}{traceSummaries(traces)}, err)
}

// listServices serves GET /api/v1/services: the services of the traces
// stored in the window (the last 24 hours by default).
func (a *api) listServices(w http.ResponseWriter, r *http.Request) {
	start, end, _, msg := a.window(r.URL.Query(), time.Now(), namesRange, 1, 1)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	names, err := a.reader.Services(r.Context(), start, end)
	a.answer(w, r, "listing services", map[string][]string{"services": names}, err)
}

// listOperations serves GET /api/v1/services/{service}/operations: the span
// names of the service in the window (the last 24 hours by default).
func (a *api) listOperations(w http.ResponseWriter, r *http.Request) {
	service := r.PathValue("service")
	if service == "" || len(service) > maxParamLen {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the service name must be 1 to %d bytes", maxParamLen))
		return
	}
	start, end, _, msg := a.window(r.URL.Query(), time.Now(), namesRange, 1, 1)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	names, err := a.reader.Operations(r.Context(), service, start, end)
	a.answer(w, r, "listing operations", map[string][]string{"operations": names}, err)
}

// scanWindow reads the window of a read that scans the stored spans or
// offsets in it (the last hour by default, at most maxScanWindow), or
// answers 400 and returns false.
func (a *api) scanWindow(w http.ResponseWriter, r *http.Request) (start, end int64, ok bool) {
	start, end, _, msg := windowUpTo(r.URL.Query(), time.Now(), defaultTracesRange, 1, 1, min(maxScanWindow, a.limits.MaxWindow))
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return 0, 0, false
	}
	return start, end, true
}

// getDependencies serves GET /api/v1/dependencies?start=&end=: the calls
// between services in the stored traces of the window (the last hour by
// default, at most 7 days), by caller and callee, with their errors and p99
// — the service graph's edges.
func (a *api) getDependencies(w http.ResponseWriter, r *http.Request) {
	start, end, ok := a.scanWindow(w, r)
	if !ok {
		return
	}
	deps, err := a.reader.Dependencies(r.Context(), start, end)
	out := make([]Dependency, len(deps))
	for i, d := range deps {
		out[i] = Dependency{Parent: d.Parent, Child: d.Child, Calls: d.Calls, Errors: d.Errors,
			P99Ms: float64(d.P99Nanos) / 1e6}
		if d.Calls > 0 {
			out[i].ErrorRate = float64(d.Errors) / float64(d.Calls)
		}
	}
	a.answer(w, r, "reading dependencies", struct {
		Start        int64        `json:"start,string"`
		End          int64        `json:"end,string"`
		Dependencies []Dependency `json:"dependencies"`
	}{start, end, out}, err)
}

// getClockSkew serves GET /api/v1/clock-skew?start=&end=: the host pairs
// whose clocks disagreed by the skew threshold or more in the window (the
// last hour by default, at most 7 days), each with its offsets over time as
// the sampler estimated them (clock(hostB) − clock(hostA)).
func (a *api) getClockSkew(w http.ResponseWriter, r *http.Request) {
	start, end, ok := a.scanWindow(w, r)
	if !ok {
		return
	}
	rows, err := a.reader.ClockPairs(r.Context(), start, end)
	pairs := []ClockPair{}
	for _, p := range rows {
		if n := len(pairs); n == 0 || pairs[n-1].HostA != p.A || pairs[n-1].HostB != p.B {
			pairs = append(pairs, ClockPair{HostA: p.A, HostB: p.B, Points: []ClockPoint{}})
		}
		last := &pairs[len(pairs)-1]
		last.Points = append(last.Points, ClockPoint{TimeUnixNano: p.TimeUnixNano, OffsetMs: float64(p.OffsetNanos) / 1e6,
			Samples: p.Samples})
	}
	a.answer(w, r, "reading clock offsets", struct {
		Start int64       `json:"start,string"`
		End   int64       `json:"end,string"`
		Pairs []ClockPair `json:"pairs"`
	}{start, end, pairs}, err)
}

// attributeFilters reads the attr.KEY=VALUE parameters of q, in a stable
// order (for the same query text every time), or says what is wrong with
// them.
func attributeFilters(q url.Values) ([]store.AttributeFilter, string) {
	var out []store.AttributeFilter
	for key, values := range q {
		name, ok := strings.CutPrefix(key, "attr.")
		if !ok {
			continue
		}
		if name == "" || len(name) > maxParamLen {
			return nil, fmt.Sprintf("`attr.KEY`: the key must be 1 to %d bytes", maxParamLen)
		}
		for _, v := range values {
			if v == "" || len(v) > maxParamLen {
				return nil, fmt.Sprintf("`%s`: the value must be 1 to %d bytes (an empty one would match every span)",
					key, maxParamLen)
			}
			out = append(out, store.AttributeFilter{Key: name, Value: v})
		}
	}
	if len(out) > store.MaxAttributeFilters {
		return nil, fmt.Sprintf("at most %d `attr.KEY=VALUE` filters", store.MaxAttributeFilters)
	}
	slices.SortFunc(out, func(a, b store.AttributeFilter) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Value, b.Value))
	})
	return out, ""
}

package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tracesift/tracesift/internal/store"
)

// Jaeger's query API (jaeger-query's /api, as Grafana's Jaeger data source
// calls it), over the same reader: Grafana works with no plugin. Defaults
// follow jaeger-query's where a client may notice (a search's 48 hours, the
// dependencies' 24), except a search's limit, which is the Jaeger UI's 20:
// each result is a whole trace.
const (
	jaegerSearchRange  = 48 * time.Hour
	jaegerSearchLimit  = 20
	jaegerMaxLimit     = 200
	jaegerDepsLookback = 24 * time.Hour
	maxScanWindow      = 7 * 24 * time.Hour // of a read that scans the spans of its window
)

func (a *api) routeJaeger(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/services", a.jaegerServices)
	mux.HandleFunc("GET /api/services/{service}/operations", a.jaegerOperations)
	mux.HandleFunc("GET /api/traces/{traceId}", a.jaegerTrace)
	mux.HandleFunc("GET /api/traces", a.jaegerSearch)
	mux.HandleFunc("GET /api/dependencies", a.jaegerDependencies)
}

// jaegerAnswer writes data in Jaeger's envelope, or, when the store failed
// (err), logs err and answers 500 saying what failed.
func (a *api) jaegerAnswer(w http.ResponseWriter, r *http.Request, what string, data any, total int, err error) {
	if err != nil {
		a.failed(w, r, func(code int, msg string) { jaegerFail(w, code, msg) }, what, err)
		return
	}
	writeJSON(w, http.StatusOK, jaegerResponse{Data: data, Total: total})
}

func jaegerFail(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, jaegerResponse{Errors: []jaegerError{{Code: code, Msg: msg}}})
}

// jaegerServices serves GET /api/services: the services of the traces
// stored in the last 24 hours.
func (a *api) jaegerServices(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	names, err := a.reader.Services(r.Context(), now.Add(-namesRange).UnixNano(), now.UnixNano())
	a.jaegerAnswer(w, r, "listing services", names, len(names), err)
}

// jaegerOperations serves GET /api/services/{service}/operations: the
// service's span names in the last 24 hours.
func (a *api) jaegerOperations(w http.ResponseWriter, r *http.Request) {
	service := r.PathValue("service")
	if service == "" || len(service) > maxParamLen {
		jaegerFail(w, http.StatusBadRequest, fmt.Sprintf("the service name must be 1 to %d bytes", maxParamLen))
		return
	}
	now := time.Now()
	names, err := a.reader.Operations(r.Context(), service, now.Add(-namesRange).UnixNano(), now.UnixNano())
	a.jaegerAnswer(w, r, "listing operations", names, len(names), err)
}

// jaegerTraceIDParam reads a trace id as Jaeger takes it: up to 32 hex
// digits in either case, shorter ones padded with zeros.
func jaegerTraceIDParam(v string) (string, bool) {
	if v == "" || len(v) > 32 {
		return "", false
	}
	id := strings.Repeat("0", 32-len(v)) + strings.ToLower(v)
	return id, store.ValidTraceID(id)
}

// jaegerTrace serves GET /api/traces/{traceId}. Grafana may add start and
// end (in milliseconds where Jaeger reads microseconds); a trace is found by
// its id alone, so they are ignored.
func (a *api) jaegerTrace(w http.ResponseWriter, r *http.Request) {
	id, ok := jaegerTraceIDParam(r.PathValue("traceId"))
	if !ok {
		jaegerFail(w, http.StatusBadRequest, "malformed trace id: want up to 32 hex digits, not all zero")
		return
	}
	t, err := a.reader.GetTrace(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		jaegerFail(w, http.StatusNotFound, "trace not found")
		return
	}
	if err != nil {
		a.jaegerAnswer(w, r, "reading a trace", nil, 0, err)
		return
	}
	a.jaegerAnswer(w, r, "", []jaegerTrace{jaegerTraceOf(t)}, 0, nil)
}

// jaegerSearch serves GET /api/traces?service=&operation=&tags=&minDuration=
// &maxDuration=&start=&end=&limit=: the whole traces (newest first) with a
// span of service (any service when it is not given) whose root span is
// operation, lasting minDuration to maxDuration, with the tags on their
// spans, started between start and end (Unix microseconds; the last 48 hours
// by default). tags is a JSON object of string values, as Grafana sends it
// (also tag=key:value, repeated); "error": "true" asks for traces with an
// error span.
func (a *api) jaegerSearch(w http.ResponseWriter, r *http.Request) {
	f, msg := jaegerSearchFilter(r.URL.Query(), time.Now(), a.limits.MaxWindow)
	if msg != "" {
		jaegerFail(w, http.StatusBadRequest, msg)
		return
	}
	found, err := a.reader.SearchTraces(r.Context(), f)
	if err != nil {
		a.jaegerAnswer(w, r, "searching traces", nil, 0, err)
		return
	}
	traces := make([]jaegerTrace, 0, len(found))
	for _, s := range found {
		t, err := a.reader.GetTrace(r.Context(), s.TraceID)
		if errors.Is(err, store.ErrNotFound) || err == nil && len(t.Spans) == 0 {
			continue // expired since the search: Grafana's table needs a span a trace
		}
		if len(traces) > 0 && errors.Is(err, context.DeadlineExceeded) {
			break // the request's time is up: the newest traces found, a shorter page
		}
		if err != nil {
			a.jaegerAnswer(w, r, "reading a trace", nil, 0, err)
			return
		}
		traces = append(traces, jaegerTraceOf(t))
	}
	a.jaegerAnswer(w, r, "", traces, 0, nil)
}

func jaegerSearchFilter(q map[string][]string, now time.Time, longest time.Duration) (store.TracesFilter, string) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	// Jaeger's operation is any span's name (the service's operations list
	// them all), not only the root's.
	f := store.TracesFilter{Service: get("service"), SpanName: get("operation"), Limit: jaegerSearchLimit}
	if len(f.Service) > maxParamLen || len(f.SpanName) > maxParamLen {
		return f, fmt.Sprintf("'service' and 'operation' are at most %d bytes", maxParamLen)
	}
	tags := map[string]string{}
	for _, v := range q["tag"] {
		k, val, ok := strings.Cut(v, ":")
		if !ok {
			return f, fmt.Sprintf("malformed 'tag' parameter, expecting key:value, received: %s", v)
		}
		tags[k] = val
	}
	for _, v := range q["tags"] {
		var m map[string]string
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return f, "malformed 'tags' parameter: want a JSON object of strings such as {\"http.status_code\":\"500\"}"
		}
		for k, val := range m {
			tags[k] = val
		}
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		v := tags[k]
		if k == "error" {
			if v != "true" {
				return f, "tag 'error': only \"true\" is supported (traces with an error span)"
			}
			f.ErrorsOnly = true
			continue
		}
		if k == "" || len(k) > maxParamLen || v == "" || len(v) > maxParamLen {
			return f, fmt.Sprintf("tag %q: keys and values are 1 to %d bytes (an empty value would match every span)",
				k, maxParamLen)
		}
		f.Attributes = append(f.Attributes, store.AttributeFilter{Key: k, Value: v})
	}
	if len(f.Attributes) > store.MaxAttributeFilters {
		return f, fmt.Sprintf("at most %d tags besides error", store.MaxAttributeFilters)
	}
	for _, d := range []struct {
		key  string
		into *time.Duration
	}{{"minDuration", &f.MinDuration}, {"maxDuration", &f.MaxDuration}} {
		if v := get(d.key); v != "" {
			var err error
			if *d.into, err = time.ParseDuration(v); err != nil || *d.into < 0 {
				return f, fmt.Sprintf("unable to parse param '%s': want a duration such as 1.5s or 200ms, got %q", d.key, v)
			}
		}
	}
	if f.MaxDuration > 0 && f.MinDuration > f.MaxDuration {
		return f, "'maxDuration' should be greater than 'minDuration'"
	}
	end, start := now.UnixNano(), int64(0)
	for _, p := range []struct {
		key  string
		into *int64
	}{{"end", &end}, {"start", &start}} {
		if v := get(p.key); v != "" {
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil || us < 0 || us > math.MaxInt64/1000 {
				return f, fmt.Sprintf("unable to parse param '%s': want Unix microseconds, got %q", p.key, v)
			}
			*p.into = us * 1000
		}
	}
	if get("start") == "" {
		start = max(0, end-int64(jaegerSearchRange))
	}
	if start > end {
		return f, "'start' is after 'end'"
	}
	if end-start > int64(longest) {
		return f, fmt.Sprintf("the window from 'start' to 'end' is at most %s", windowText(longest))
	}
	f.Start, f.End = start, end
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > jaegerMaxLimit {
			return f, fmt.Sprintf("unable to parse param 'limit': want a number up to %d, got %q", jaegerMaxLimit, v)
		}
		if n > 0 {
			f.Limit = n
		}
	}
	return f, ""
}

// jaegerDependencies serves GET /api/dependencies?endTs=&lookback=: the
// calls between services in the stored traces of the lookback (24 hours by
// default, at most 7 days) before endTs (now by default), both in
// milliseconds.
func (a *api) jaegerDependencies(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	end, lookback := time.Now().UnixMilli(), jaegerDepsLookback.Milliseconds()
	for _, p := range []struct {
		key  string
		into *int64
	}{{"endTs", &end}, {"lookback", &lookback}} {
		if v := q.Get(p.key); v != "" {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
				jaegerFail(w, http.StatusBadRequest, fmt.Sprintf("unable to parse param '%s': want milliseconds, got %q", p.key, v))
				return
			}
			*p.into = ms
		}
	}
	if longest := min(maxScanWindow, a.limits.MaxWindow); lookback > longest.Milliseconds() {
		jaegerFail(w, http.StatusBadRequest, fmt.Sprintf("'lookback' is at most %d ms (%s)", longest.Milliseconds(), windowText(longest)))
		return
	}
	deps, err := a.reader.Dependencies(r.Context(), max(0, end-lookback)*int64(time.Millisecond), end*int64(time.Millisecond))
	out := make([]jaegerDependency, len(deps))
	for i, d := range deps {
		out[i] = jaegerDependency{Parent: d.Parent, Child: d.Child, CallCount: d.Calls}
	}
	a.jaegerAnswer(w, r, "reading dependencies", out, len(out), err)
}

package query

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/store"
)

// Defaults and bounds of GET /api/v1/red.
const (
	defaultREDRange = time.Hour
	maxREDPoints    = 1000
	maxREDGroups    = 1000
)

// REDGroup is the RED of the series of a service that share one value of the
// grouped key, over the window: counts exact for all traffic received,
// whatever was kept; latency quantiles within 2 %. Its JSON also carries the
// grouped key as a field of its own ("instance": "cat-4").
type REDGroup struct {
	Service   string     `json:"service"`
	Operation string     `json:"operation"`
	Key       string     `json:"key"`
	Value     string     `json:"value"`
	Requests  uint64     `json:"requests"`
	Errors    uint64     `json:"errors"`
	ErrorRate float64    `json:"errorRate"`
	P50Ms     float64    `json:"p50Ms"`
	P90Ms     float64    `json:"p90Ms"`
	P99Ms     float64    `json:"p99Ms"`
	P999Ms    float64    `json:"p999Ms"`
	Points    []REDPoint `json:"points,omitempty"`
}

// REDPoint is a group's RED over one step.
type REDPoint struct {
	TimeUnixNano uint64  `json:"timeUnixNano,string"`
	Requests     uint64  `json:"requests"`
	Errors       uint64  `json:"errors"`
	P99Ms        float64 `json:"p99Ms"`
}

// MarshalJSON adds the grouped key's own field unless a field has its name.
func (g REDGroup) MarshalJSON() ([]byte, error) {
	type plain REDGroup
	b, err := json.Marshal(plain(g))
	if err != nil || g.Key == "" {
		return b, err
	}
	switch g.Key {
	case "service", "operation", "key", "value", "requests", "errors", "errorRate", "p50Ms", "p90Ms", "p99Ms", "p999Ms", "points":
		return b, nil
	}
	k, _ := json.Marshal(g.Key)
	v, _ := json.Marshal(g.Value)
	out := append(bytes.TrimSuffix(b, []byte("}")), ',')
	out = append(append(append(out, k...), ':'), v...)
	return append(out, '}'), nil
}

// ms is a duration in nanoseconds in milliseconds, to the microsecond.
func ms(ns float64) float64 { return math.Round(ns/1e3) / 1e3 }

func redGroupJSON(g *model.REDGroup) REDGroup {
	s := red.Sketch(g.Latency)
	out := REDGroup{Service: g.Service, Operation: g.Operation, Key: g.GroupBy, Value: g.Value,
		Requests: g.Requests, Errors: g.Errors,
		P50Ms: ms(s.Quantile(0.5)), P90Ms: ms(s.Quantile(0.9)), P99Ms: ms(s.Quantile(0.99)), P999Ms: ms(s.Quantile(0.999))}
	if g.Requests > 0 {
		out.ErrorRate = math.Round(float64(g.Errors)/float64(g.Requests)*1e4) / 1e4
	}
	for _, p := range g.Points {
		out.Points = append(out.Points, REDPoint{TimeUnixNano: p.TimeUnixNano, Requests: p.Requests, Errors: p.Errors,
			P99Ms: ms(red.BucketValue(p.P99Bucket))})
	}
	return out
}

// serviceParams reads the parameters the RED reads share: service
// (required), operation and groupBy; msg is the 400 message when one is
// invalid.
func serviceParams(q url.Values) (f store.REDFilter, msg string) {
	f = store.REDFilter{Service: q.Get("service"), Operation: q.Get("operation"), GroupBy: q.Get("groupBy")}
	switch {
	case f.Service == "":
		return f, "`service` is required"
	case len(f.Service) > maxParamLen || len(f.Operation) > maxParamLen || len(f.GroupBy) > maxParamLen:
		return f, fmt.Sprintf("`service`, `operation` and `groupBy` are at most %d bytes", maxParamLen)
	}
	return f, ""
}

// getRED serves GET /api/v1/red?service=&operation=&groupBy=&start=&end=&step=:
// requests, errors and latency of a service (and operation) on all traffic
// received, per instance (the default), operation, version or another
// dimension, over the window (the last hour by default), with points every
// step when one is given.
func (a *api) getRED(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, msg := serviceParams(q)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	f.MaxGroups = maxREDGroups
	switch f.GroupBy {
	case "":
		f.GroupBy = "instance"
	case "version":
		f.GroupBy = "service.version"
	}
	if f.Start, f.End, _, msg = a.window(q, time.Now(), defaultREDRange, 1, 1); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if v := q.Get("step"); v != "" {
		step, err := time.ParseDuration(v)
		if err != nil || step < time.Second {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("`step`: want a duration of at least 1s such as 10s or 1m, got %q", v))
			return
		}
		if (f.End-f.Start)/int64(step) > maxREDPoints {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("`step`: at most %d points a window; use a longer step", maxREDPoints))
			return
		}
		f.Step = int64(step)
	}
	groups, err := a.reader.RED(r.Context(), f)
	out := make([]REDGroup, len(groups))
	for i := range groups {
		out[i] = redGroupJSON(&groups[i])
	}
	a.answer(w, r, "reading RED", struct {
		Start  int64      `json:"start,string"`
		End    int64      `json:"end,string"`
		Groups []REDGroup `json:"groups"`
	}{f.Start, f.End, out}, err)
}

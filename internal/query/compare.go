package query

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/tracesift/tracesift/internal/red"
)

// Defaults and bounds of GET /api/v1/compare.
const (
	defaultCompareSlow  = time.Second
	defaultCompareLimit = 50
	maxCompareLimit     = 1000
)

// DimensionShare is how often one dimension value occurs among the failing
// and among the healthy requests of the window (shares of each), and their
// ratio, the lift.
type DimensionShare struct {
	Key          string  `json:"key"`
	Value        string  `json:"value"`
	Failing      float64 `json:"failing"`
	Healthy      float64 `json:"healthy"`
	Lift         float64 `json:"lift"`
	FailingCount uint64  `json:"failingCount"`
	HealthyCount uint64  `json:"healthyCount"`
}

// getCompare serves GET /api/v1/compare?service=&operation=&start=&end=&slow=&limit=:
// the failing requests of a service (and operation) — an error, a timeout,
// or slower than `slow` (1s) — set against the healthy ones along every
// dimension (instance, operation, version, region, ...), the values most
// over-represented among the failing first. From the RED of all traffic.
func (a *api) getCompare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, msg := serviceParams(q)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	slow := defaultCompareSlow
	if v := q.Get("slow"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("`slow`: want a positive duration such as 500ms or 2s, got %q", v))
			return
		}
		slow = d
	}
	var limit int
	if f.Start, f.End, limit, msg = a.window(q, time.Now(), defaultREDRange, defaultCompareLimit, maxCompareLimit); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	series, err := a.reader.REDTallies(r.Context(), f, red.BucketAbove(uint64(slow)))
	c := red.Compare(series)
	out := make([]DimensionShare, 0, min(len(c.Values), limit))
	for _, v := range c.Values[:min(len(c.Values), limit)] {
		out = append(out, DimensionShare{Key: v.Key, Value: v.Value, Failing: round4(v.FailingShare),
			Healthy: round4(v.HealthyShare), Lift: round4(v.Lift), FailingCount: v.Failing, HealthyCount: v.Healthy})
	}
	a.answer(w, r, "comparing failing and healthy requests", struct {
		Start      int64            `json:"start,string"`
		End        int64            `json:"end,string"`
		Slow       string           `json:"slow"`
		Failing    uint64           `json:"failing"`
		Healthy    uint64           `json:"healthy"`
		Dimensions []DimensionShare `json:"dimensions"`
	}{f.Start, f.End, slow.String(), c.Failing, c.Healthy, out}, err)
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

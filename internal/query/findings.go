package query

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tracesift/tracesift/internal/store"
)

// Defaults and bounds of GET /api/v1/findings.
const (
	defaultFindingsRange = time.Hour
	defaultFindingsLimit = 100
	maxFindingsLimit     = 1000
	maxParamLen          = 256
)

// windowText is d in days ("7 days").
func windowText(d time.Duration) string { return fmt.Sprintf("%d days", int(d/(24*time.Hour))) }

// getFindings serves GET /api/v1/findings?kind=&service=&start=&end=&limit=:
// findings aggregated across traces by kind, service and subject (slowest
// hops by operation, retry amplification by call edge, skew by host pair),
// with the trace ids of the worst examples.
func (a *api) getFindings(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	now := time.Now()
	f := store.FindingsFilter{Kind: q.Get("kind"), Service: q.Get("service")}
	if len(f.Kind) > maxParamLen || len(f.Service) > maxParamLen {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("`kind` and `service` are at most %d bytes", maxParamLen))
		return
	}
	var msg string
	if f.Start, f.End, f.Limit, msg = a.window(q, now, defaultFindingsRange, defaultFindingsLimit, maxFindingsLimit); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	sums, err := a.reader.GetFindingSummaries(r.Context(), f)
	a.answer(w, r, "aggregating findings", struct {
		Start    int64            `json:"start,string"`
		End      int64            `json:"end,string"`
		Findings []FindingSummary `json:"findings"`
	}{f.Start, f.End, findingSummaries(sums)}, err)
}

// window reads the `start`, `end` and `limit` parameters shared by the
// searches: end defaults to now, start to end − span, limit to def (at most
// max). msg is the 400 message when one is invalid.
func (a *api) window(q url.Values, now time.Time, span time.Duration, def, max int) (start, end int64, limit int, msg string) {
	return windowUpTo(q, now, span, def, max, a.limits.MaxWindow)
}

// windowUpTo is window for a read whose window is at most longest.
func windowUpTo(q url.Values, now time.Time, span time.Duration, def, max int, longest time.Duration) (start, end int64, limit int, msg string) {
	var err error
	if end, err = timeParam(q.Get("end"), now); err != nil {
		return 0, 0, 0, "`end`: " + err.Error()
	}
	if start, err = timeParam(q.Get("start"), time.Unix(0, end).Add(-span)); err != nil {
		return 0, 0, 0, "`start`: " + err.Error()
	}
	if start > end {
		return 0, 0, 0, "`start` is after `end`"
	}
	if end-start > int64(longest) {
		return 0, 0, 0, "the window from `start` to `end` is at most " + windowText(longest)
	}
	limit = def
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > max {
			return 0, 0, 0, fmt.Sprintf("`limit`: want a number from 1 to %d", max)
		}
		limit = n
	}
	return start, end, limit, ""
}

// timeParam reads a time given as Unix nanoseconds or RFC 3339; empty gives
// def.
func timeParam(v string, def time.Time) (int64, error) {
	if v == "" {
		return def.UnixNano(), nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%q is negative", v)
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, fmt.Errorf("%q: want Unix nanoseconds or RFC 3339 (2026-11-30T10:00:00Z)", v)
	}
	// Unix nanoseconds in an int64 span 1970 to 2262; UnixNano wraps
	// outside it.
	if t.Before(time.Unix(0, 0)) || t.After(time.Unix(0, math.MaxInt64)) {
		return 0, fmt.Errorf("%q: times are from 1970-01-01T00:00:00Z to 2262-04-11T23:47:16Z", v)
	}
	return t.UnixNano(), nil
}

package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/query"
	"github.com/tracesift/tracesift/internal/store"
)

// The reads a careless or hostile client can send to make the store work
// hardest, through the query API with its default limits: each must be
// answered, 200 or 400, within hostileBound, and while they run, one after
// another from as many clients as the API lets in at once, inserts go on.
const (
	hostileBound   = 5 * time.Second
	hostileClients = 4 // query.DefaultLimits.MaxConcurrent
)

// hostileRequests are the API paths of those reads, over the data that is
// there (it is all in the last hour): all time, the longest windows, deep
// pages, attribute scans, every list.
func hostileRequests(now time.Time) []string {
	ns := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixNano(), 10) }
	us := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixMicro(), 10) }
	month, week := 31*24*time.Hour-time.Minute, 7*24*time.Hour-time.Minute
	return []string{
		"/api/v1/traces?start=0",
		"/api/v1/traces?limit=1000&start=" + ns(month),
		"/api/v1/traces?limit=1000&offset=10000&start=" + ns(month),
		"/api/v1/traces?limit=1000&offset=10000&status=error&minDuration=2s&start=" + ns(month),
		"/api/v1/traces?limit=1000&attr.http.route=%2Fnone&attr.app.order.id=none&start=" + ns(month),
		"/api/v1/logs?limit=1000&start=" + ns(month),
		"/api/v1/logs?limit=1000&q=timeout+error&start=" + ns(month),
		"/api/v1/findings?limit=1000&start=" + ns(month),
		"/api/v1/services?start=" + ns(month),
		"/api/v1/services/payments/operations?start=" + ns(month),
		"/api/v1/dependencies?start=" + ns(week),
		"/api/v1/clock-skew?start=" + ns(week),
		"/api/v1/red?service=payments&step=1h&start=" + ns(month),
		"/api/traces?limit=200&start=" + us(month),
		"/api/dependencies?lookback=" + strconv.FormatInt(week.Milliseconds(), 10),
	}
}

// hostileAnswer is how one of them was answered.
type hostileAnswer struct {
	path string
	code int
	took time.Duration
}

func runHostile(h http.Handler, path string) hostileAnswer {
	rec := httptest.NewRecorder()
	t0 := time.Now()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return hostileAnswer{path: path, code: rec.Code, took: time.Since(t0)}
}

// hostileReads answers each request once, on a quiet store, then times
// inserts of extra spans alone and while hostileClients clients send the
// requests over and over; it returns the report and whether every answer
// came in time with 200 or 400.
func hostileReads(ctx context.Context, r *store.Reader, w *store.Writer, extra *storeGen, batches, writers int) (string, bool, error) {
	h := query.NewHandler(r, zap.NewNop())
	var sb strings.Builder
	ok := true
	check := func(a hostileAnswer) {
		if a.took > hostileBound || a.code != http.StatusOK && a.code != http.StatusBadRequest {
			ok = false
		}
	}
	fmt.Fprintf(&sb, "\nHostile reads through the API (default limits), each alone, within %s with 200 or 400:\n", hostileBound)
	for _, path := range hostileRequests(time.Now()) {
		a := runHostile(h, path)
		check(a)
		fmt.Fprintf(&sb, "  %3d %8.1f ms  %s\n", a.code, ms(a.took), path)
	}

	half := batches / 2
	t0 := time.Now()
	if _, _, err := loadStore(ctx, extra, half, writers, nil, spansTo(w)); err != nil {
		return "", false, err
	}
	alone := time.Since(t0)

	stop := make(chan struct{})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers []hostileAnswer
	)
	// Answers under the flood are reported, not judged: they queue behind
	// each other and the inserts.
	for c := range hostileClients {
		wg.Go(func() {
			paths := hostileRequests(time.Now())
			for i := c; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a := runHostile(h, paths[i%len(paths)])
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		})
	}
	t0 = time.Now()
	_, _, err := loadStore(ctx, extra, half, writers, nil, spansTo(w))
	during := time.Since(t0)
	close(stop)
	wg.Wait()
	if err != nil {
		return "", false, err
	}
	var slowest hostileAnswer
	codes := map[int]int{}
	for _, a := range answers {
		codes[a.code]++
		if a.took > slowest.took {
			slowest = a
		}
	}
	spans := float64(half * extra.batchSpans)
	fmt.Fprintf(&sb, "Inserts of %d more spans, %d writers: alone %.0f spans/s; with %d clients sending those reads "+
		"(%d answered: %v) %.0f spans/s — %.2f× the rate alone; slowest answer %.1f ms (%d, %s)\n",
		2*half*extra.batchSpans, writers, spans/alone.Seconds(), hostileClients, len(answers), codes,
		spans/during.Seconds(), alone.Seconds()/during.Seconds(), ms(slowest.took), slowest.code, slowest.path)
	return sb.String(), ok, nil
}

package embedded

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tenant"
)

// RED rows written in several flushes add up when read, grouped by any key,
// with the sketches merged.
func TestREDStoredAndSummed(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{})
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) uint64 { return uint64(base.Add(d).UnixNano()) }
	sketch := func(d time.Duration, n int) map[int32]uint64 {
		s := red.Sketch{}
		for range n {
			s.Add(uint64(d))
		}
		return s
	}
	v := func(version string) map[string]string { return map[string]string{"service.version": version} }
	rows := []model.RED{
		{TimeUnixNano: at(0), Service: "cat", Operation: "GET /cat", Instance: "cat-1", Dimensions: v("1.0"), Requests: 100, Errors: 0, Latency: sketch(35*time.Millisecond, 100)},
		{TimeUnixNano: at(0), Service: "cat", Operation: "GET /cat", Instance: "cat-4", Dimensions: v("1.1"), Requests: 10, Errors: 4, Latency: sketch(930*time.Millisecond, 10)},
		{TimeUnixNano: at(10 * time.Second), Service: "cat", Operation: "GET /cat", Instance: "cat-1", Dimensions: v("1.0"), Requests: 50, Errors: 1, Latency: sketch(35*time.Millisecond, 50)},
		{TimeUnixNano: at(10 * time.Second), Service: "cat", Operation: "POST /cat", Instance: "cat-1", Dimensions: v("1.0"), Requests: 5, Latency: sketch(5*time.Millisecond, 5)},
		{TimeUnixNano: at(10 * time.Second), Service: "dog", Operation: "GET /dog", Instance: "dog-1", Dimensions: v("2.0"), Requests: 7, Latency: sketch(time.Millisecond, 7)},
	}
	require.NoError(t, w.WriteRED(ctx, rows[:2]))
	require.NoError(t, w.WriteRED(ctx, rows[2:]))
	// A second flush of the same series and interval adds to the first.
	require.NoError(t, w.WriteRED(ctx, []model.RED{{TimeUnixNano: at(0), Service: "cat", Operation: "GET /cat", Instance: "cat-4",
		Dimensions: v("1.1"), Requests: 2, Errors: 2, Latency: sketch(930*time.Millisecond, 2)}}))

	window := store.REDFilter{Service: "cat", Operation: "GET /cat", Start: int64(at(0)), End: int64(at(time.Minute)), GroupBy: "instance"}
	got, err := r.RED(ctx, window)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "cat-1", got[0].Value, "the busiest first")
	assert.Equal(t, uint64(150), got[0].Requests)
	assert.Equal(t, uint64(1), got[0].Errors)
	assert.Equal(t, "cat-4", got[1].Value)
	assert.Equal(t, uint64(12), got[1].Requests)
	assert.Equal(t, uint64(6), got[1].Errors)
	assert.InEpsilon(t, float64(930*time.Millisecond), red.Sketch(got[1].Latency).Quantile(0.99), red.RelativeAccuracy)
	assert.Empty(t, got[0].Points, "no step, no points")

	window.GroupBy, window.Step = "service.version", int64(10*time.Second)
	got, err = r.RED(ctx, window)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "1.0", got[0].Value)
	require.Len(t, got[0].Points, 2)
	assert.Equal(t, at(0), got[0].Points[0].TimeUnixNano)
	assert.Equal(t, uint64(100), got[0].Points[0].Requests)
	assert.Equal(t, uint64(50), got[0].Points[1].Requests)

	window.GroupBy, window.Operation, window.Step = "operation", "", 0
	got, err = r.RED(ctx, window)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []string{"GET /cat", "POST /cat"}, []string{got[0].Value, got[1].Value})
	assert.Equal(t, uint64(162), got[0].Requests)

	window.Service = "x' OR 1=1 --"
	got, err = r.RED(ctx, window)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// The series of a window, summed over intervals and flushes, for the
// comparison of failing with healthy requests.
func TestREDTalliesSummed(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{})
	base := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	mk := func(d time.Duration, instance string, n, errs uint64) model.RED {
		return model.RED{TimeUnixNano: uint64(base.Add(d).UnixNano()), Service: "owl", Operation: "GET /owl", Instance: instance,
			Dimensions: map[string]string{"service.version": instance + "-v"}, Requests: n, Errors: errs,
			Latency: map[int32]uint64{400: n - errs, 500: errs}, ErrorLatency: map[int32]uint64{500: errs}}
	}
	require.NoError(t, w.WriteRED(ctx, []model.RED{mk(0, "owl-1", 10, 1), mk(0, "owl-2", 5, 5)}))
	require.NoError(t, w.WriteRED(ctx, []model.RED{mk(10*time.Second, "owl-1", 20, 2), mk(time.Hour, "owl-1", 99, 9)}))
	window := store.REDFilter{Service: "owl", Start: base.UnixNano(), End: base.Add(time.Minute).UnixNano()}
	got, err := r.REDTallies(ctx, window, 400)
	require.NoError(t, err)
	require.Len(t, got, 2)
	by := map[string]model.REDTally{got[0].Instance: got[0], got[1].Instance: got[1]}
	assert.Equal(t, uint64(30), by["owl-1"].Requests, "the hour later is outside the window")
	assert.Equal(t, uint64(3), by["owl-1"].Errors)
	assert.Equal(t, uint64(27), by["owl-1"].Slow, "bucket 400 and above, errors aside")
	got, err = r.REDTallies(ctx, window, 401)
	require.NoError(t, err)
	assert.Zero(t, got[0].Slow+got[1].Slow, "only errors above bucket 400")
	assert.Equal(t, map[string]string{"service.version": "owl-2-v"}, by["owl-2"].Dimensions)
}

// A trace read after its hosts' skew was estimated gets the latest estimate
// near its time of each skewed pair among its hosts, whether the reader
// knows the tenant's pairs or not; once it knows them, neither that trace
// nor one of those hosts at another time reads its window.
func TestSkewedPairsReadWithTheTrace(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	counter := &statementCounter{Conn: conn}
	r := store.NewReader(counter, db, store.ReaderConfig{LogWindow: time.Minute})
	base := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	td := ptrace.NewTraces()
	for i, host := range []string{"web-7", "db-7"} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc")
		rs.Resource().Attributes().PutStr("host.name", host)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(traceID(0x7c))
		sp.SetSpanID(spanID(byte(i + 1)))
		if i == 1 {
			sp.SetParentSpanID(spanID(1))
		}
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Second)))
	}
	_, err := w.WriteTraces(ctx, td)
	require.NoError(t, err)
	at := func(d time.Duration) uint64 { return uint64(base.Add(d).UnixNano()) }
	require.NoError(t, w.WriteClockPairs(ctx, []model.ClockPair{
		{TimeUnixNano: at(10 * time.Second), A: "db-7", B: "web-7", OffsetNanos: -200e6, Samples: 5},
		{TimeUnixNano: at(50 * time.Second), A: "db-7", B: "web-7", OffsetNanos: -300e6, Samples: 9}, // the latest
		{TimeUnixNano: at(time.Hour), A: "db-7", B: "web-7", OffsetNanos: -900e6, Samples: 9},        // past the window
		{TimeUnixNano: at(20 * time.Second), A: "db-7", B: "mq-7", OffsetNanos: 500e6, Samples: 5},   // another host
	}))
	for _, read := range []struct {
		what       string
		statements int64
	}{{"with the resources", 3}, {"the tenant's pairs known", 2}, {"again", 2}} {
		counter.reset()
		got, err := r.GetTrace(ctx, traceID(0x7c).String())
		require.NoError(t, err)
		r.Wait()
		assert.Equal(t, []model.ClockPair{{A: "db-7", B: "web-7", OffsetNanos: -300e6, Samples: 9}}, got.SkewedPairs, read.what)
		assert.Equal(t, read.statements, counter.n.Load(), read.what)
	}
	// The same hosts an hour and two minutes later: no estimate in its window.
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetTraceID(traceID(0x7d))
	td.ResourceSpans().At(1).ScopeSpans().At(0).Spans().At(0).SetTraceID(traceID(0x7d))
	for i := range 2 {
		sp := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans().At(0)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Hour + 2*time.Minute)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Hour + 2*time.Minute + time.Second)))
	}
	_, err = w.WriteTraces(ctx, td)
	require.NoError(t, err)
	counter.reset()
	later, err := r.GetTrace(ctx, traceID(0x7d).String())
	require.NoError(t, err)
	r.Wait()
	assert.Nil(t, later.SkewedPairs)
	assert.EqualValues(t, 2, counter.n.Load(), "the tenant's pairs say its window has none")

	pairs, err := r.ClockPairs(ctx, base.UnixNano(), base.Add(time.Minute).UnixNano())
	require.NoError(t, err)
	assert.Equal(t, []model.ClockPair{
		{TimeUnixNano: at(20 * time.Second), A: "db-7", B: "mq-7", OffsetNanos: 500e6, Samples: 5},
		{TimeUnixNano: at(10 * time.Second), A: "db-7", B: "web-7", OffsetNanos: -200e6, Samples: 5},
		{TimeUnixNano: at(50 * time.Second), A: "db-7", B: "web-7", OffsetNanos: -300e6, Samples: 9},
	}, pairs, "by pair and time, in the window only")
}

// A tenant with more estimates than the reader keeps (10 000) has the window
// of a trace through a pair estimated in it read, with the same answer.
func TestSkewedPairsOfATenantWithManyEstimates(t *testing.T) {
	ctx := context.Background()
	const tdb = "ts_skewed_many"
	w := shopStore(t, tdb, 0x7e, tenant.Default, true)
	counter := &statementCounter{Conn: conn}
	r := store.NewReader(counter, tdb, store.ReaderConfig{LogWindow: time.Minute})
	// One a second from 5 000 s before the trace: the latest in its window is
	// a minute after its end.
	var est []model.ClockPair
	for i := range 10001 {
		est = append(est, model.ClockPair{TimeUnixNano: uint64(getTraceBase.Add(time.Duration(i-5000) * time.Second).UnixNano()),
			A: "pay-1", B: "shop-1", OffsetNanos: int64(i), Samples: 1})
	}
	require.NoError(t, w.WriteClockPairs(ctx, est))
	for _, read := range []struct {
		what       string
		statements int64
	}{{"with the resources", 3}, {"the tenant's pairs known, without their estimates", 3}, {"again", 3}} {
		counter.reset()
		got, err := r.GetTrace(ctx, traceID(0x7e).String())
		require.NoError(t, err)
		r.Wait()
		assert.Equal(t, []model.ClockPair{{A: "pay-1", B: "shop-1", OffsetNanos: 5061, Samples: 1}}, got.SkewedPairs, read.what)
		assert.Equal(t, read.statements, counter.n.Load(), read.what)
	}
}

// A window read from the rollups (whole ten minutes and minutes) and the
// 10 s rows (its edges) counts exactly the rows in it, whatever its bounds
// and step: the sums of random windows against the rows themselves.
func TestREDRollupsMatchTheRows(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{})
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC) // three hours of its own
	rng := rand.New(rand.NewPCG(7, 7))
	var rows []model.RED
	for at := time.Duration(0); at < 3*time.Hour; at += 10 * time.Second {
		for _, inst := range []string{"bee-1", "bee-2"} {
			n, bucket := uint64(rng.IntN(5)), int32(rng.IntN(3))
			rows = append(rows, model.RED{TimeUnixNano: uint64(base.Add(at).UnixNano()), Service: "bee", Operation: "GET /bee",
				Instance: inst, Dimensions: map[string]string{"service.version": inst}, Requests: n, Errors: n / 2,
				Latency: map[int32]uint64{bucket: n}, ErrorLatency: map[int32]uint64{bucket: n / 2}})
		}
	}
	// Several flushes, as the sampler sends them.
	for i := 0; i < len(rows); i += 100 {
		require.NoError(t, w.WriteRED(ctx, rows[i:min(i+100, len(rows))]))
	}
	sum := func(from, to time.Time, step int64) (reqs, errs, slow uint64, lat map[int32]uint64, points map[uint64]uint64,
		p99 map[uint64]float64) {
		lat, points, p99 = map[int32]uint64{}, map[uint64]uint64{}, map[uint64]float64{}
		sketches := map[uint64]red.Sketch{}
		for _, row := range rows {
			ts := time.Unix(0, int64(row.TimeUnixNano))
			if row.Instance != "bee-1" || ts.Before(from.Truncate(time.Second)) || ts.After(to) {
				continue
			}
			reqs, errs = reqs+row.Requests, errs+row.Errors
			slow += red.Tally([]model.RED{row}, 1)[0].Slow // slower than 1 ns: bucket 1 and above
			for k, n := range row.Latency {
				lat[k] += n
			}
			if step > 0 {
				t := uint64(ts.Unix()/step*step) * 1e9
				points[t] += row.Requests
				if sketches[t] == nil {
					sketches[t] = red.Sketch{}
				}
				sketches[t].Merge(row.Latency)
			}
		}
		for t, s := range sketches {
			p99[t] = s.Quantile(0.99)
		}
		return
	}
	for range 60 {
		from := base.Add(time.Duration(rng.Int64N(int64(100 * time.Minute))))
		to := from.Add(time.Duration(rng.Int64N(int64(150 * time.Minute))))
		step := []int64{0, 0, 10, 30, 60, 300, 600, 3600, 7200}[rng.IntN(9)]
		f := store.REDFilter{Service: "bee", Operation: "GET /bee", GroupBy: "instance", Start: from.UnixNano(), End: to.UnixNano(),
			Step: step * 1e9}
		got, err := r.RED(ctx, f)
		require.NoError(t, err)
		reqs, errs, slow, lat, points, p99 := sum(from, to, step)
		name := fmt.Sprintf("%s..%s step %ds", from.Format("15:04:05.000"), to.Format("15:04:05.000"), step)
		var g model.REDGroup
		if i := slices.IndexFunc(got, func(g model.REDGroup) bool { return g.Value == "bee-1" }); i >= 0 {
			g = got[i]
		}
		assert.Equal(t, reqs, g.Requests, name)
		assert.Equal(t, errs, g.Errors, name)
		if reqs > 0 {
			assert.Equal(t, lat, nonZero(g.Latency), name)
		}
		gotPoints := map[uint64]uint64{}
		for _, p := range g.Points {
			gotPoints[p.TimeUnixNano] += p.Requests
			assert.Equal(t, p99[p.TimeUnixNano], red.BucketValue(p.P99Bucket), "%s: the p99 at %d", name, p.TimeUnixNano)
		}
		assert.Equal(t, nonZero(points), nonZero(gotPoints), name)

		series, err := r.REDTallies(ctx, f, red.BucketAbove(1))
		require.NoError(t, err)
		var s model.REDTally
		if i := slices.IndexFunc(series, func(s model.REDTally) bool { return s.Instance == "bee-1" }); i >= 0 {
			s = series[i]
		}
		assert.Equal(t, reqs, s.Requests, name)
		assert.Equal(t, errs, s.Errors, name)
		assert.Equal(t, slow, s.Slow, name)
	}
}

// nonZero is m without its zero counts.
func nonZero[K comparable](m map[K]uint64) map[K]uint64 {
	out := map[K]uint64{}
	for k, n := range m {
		if n > 0 {
			out[k] = n
		}
	}
	return out
}

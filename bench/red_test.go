package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/embedded"
)

// BenchmarkRED is `make bench-red`: 24 hours of RED for
// TRACESIFT_BENCH_RED_SERIES series (1000 by default: 10 services × 10
// operations × 10 instances, 10 s intervals) loaded into the embedded
// ClickHouse (the last hour a flush an interval, as the sampler sends
// them), then GET /api/v1/red's read (one service's operation per instance
// over the 24 hours, 5 min points) and GET /api/v1/compare's (one service
// over the 24 hours) timed, 30 runs each over the services in turn. The
// target: under 200 ms. Run it with -benchtime 1x.
func BenchmarkRED(b *testing.B) {
	series := 1000
	if v := os.Getenv("TRACESIFT_BENCH_RED_SERIES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n%100 != 0 {
			b.Fatalf("TRACESIFT_BENCH_RED_SERIES=%q: want a multiple of 100", v)
		}
		series = n
	}
	services, ops, insts := series/100, 10, 10
	ctx := context.Background()
	conn, err := embedded.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const db = "tracesift"
	if err := store.ApplySchema(ctx, conn, db); err != nil {
		b.Fatal(err)
	}
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{})

	end := time.Now().Truncate(10 * time.Second)
	start := end.Add(-24 * time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	var rows []model.RED
	loaded := 0
	began := time.Now()
	for at := start; at.Before(end); at = at.Add(10 * time.Second) {
		for s := range services {
			for o := range ops {
				for i := range insts {
					n := 20 + rng.IntN(20)
					lat, bad := red.Sketch{}, red.Sketch{}
					errs := 0
					for k := range n {
						d := uint64(20e6 + rng.ExpFloat64()*30e6)
						lat.Add(d)
						if k%50 == 0 {
							errs++
							bad.Add(d)
						}
					}
					rows = append(rows, model.RED{TimeUnixNano: uint64(at.UnixNano()), Service: fmt.Sprintf("svc-%d", s),
						Operation: fmt.Sprintf("GET /op-%d", o), Instance: fmt.Sprintf("svc-%d-pod-%d", s, i),
						Dimensions: map[string]string{"service.version": fmt.Sprintf("1.%d", i%2), "cloud.region": "eu"},
						Requests:   uint64(n), Errors: uint64(errs), Latency: lat, ErrorLatency: bad})
				}
			}
		}
		// The last hour is flushed as the sampler does, an interval at a time,
		// so that the rollups are built from small inserts, as in operation.
		if len(rows) >= 100_000 || end.Sub(at) <= time.Hour {
			if err := w.WriteRED(ctx, rows); err != nil {
				b.Fatal(err)
			}
			loaded += len(rows)
			rows = rows[:0]
		}
	}
	if err := w.WriteRED(ctx, rows); err != nil {
		b.Fatal(err)
	}
	loaded += len(rows)
	load := time.Since(began)
	// The reads are timed once the engine has merged what the load wrote, as
	// in steady operation, where a flush is one row a series every 10 s:
	// the bulk load leaves minutes of merges that would share the two cores.
	settled := time.Now()
	for {
		var merging int
		err := conn.Query(ctx, "SELECT count() AS n FROM system.merges WHERE database = '"+db+"'", nil, func(b []byte) error {
			var row struct{ N int }
			err := json.Unmarshal(b, &row)
			merging = row.N
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		if merging == 0 || time.Since(settled) > 10*time.Minute {
			break
		}
		time.Sleep(time.Second) // polling the engine's merges, not waiting on a guess
	}
	settle := time.Since(settled)

	var redT, cmpT []time.Duration
	for run := range 30 {
		svc := fmt.Sprintf("svc-%d", run%services)
		t0 := time.Now()
		groups, err := r.RED(ctx, store.REDFilter{Service: svc, Operation: "GET /op-3", GroupBy: "instance",
			Start: start.UnixNano(), End: end.UnixNano(), Step: int64(5 * time.Minute), MaxGroups: 1000})
		if err != nil || len(groups) != insts {
			b.Fatalf("RED: %d groups, %v", len(groups), err)
		}
		redT = append(redT, time.Since(t0))
		t0 = time.Now()
		all, err := r.REDTallies(ctx, store.REDFilter{Service: svc, Start: start.UnixNano(), End: end.UnixNano()},
			red.BucketAbove(uint64(time.Second)))
		if err != nil || len(all) != ops*insts {
			b.Fatalf("RED series: %d, %v", len(all), err)
		}
		red.Compare(all)
		cmpT = append(cmpT, time.Since(t0))
	}
	rt, ct := quantiles(redT), quantiles(cmpT)
	fmt.Printf("red: %d rows (%d series × 24 h of 10 s) loaded in %s (%.0f rows/s), merged %s later\n", loaded, series,
		load.Round(time.Millisecond), float64(loaded)/load.Seconds(), settle.Round(time.Second))
	fmt.Printf("GET /api/v1/red (a service's operation per instance, 24 h, 5 min points), p50 / p99: %6.1f / %6.1f ms\n",
		ms(rt.p50), ms(rt.p99))
	fmt.Printf("GET /api/v1/compare (a service, 24 h), p50 / p99:                          %6.1f / %6.1f ms\n",
		ms(ct.p50), ms(ct.p99))
	b.ReportMetric(ms(rt.p99), "red-p99-ms")
	b.ReportMetric(ms(ct.p99), "compare-p99-ms")
	b.ReportAllocs()
}

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/embedded"
)

// BenchmarkLogSearch loads TRACESIFT_BENCH_LOG_LINES log lines (10 million
// by default) into the embedded ClickHouse through the store's writer, then
// times the searches of GET /api/v1/logs over them (the reader's SearchLogs,
// the API's default window of one hour, limit 100): a rare word, a common
// word, two words, a service and a word, and a trace id. It reports the
// load's lines/s and bytes on disk per line, and p50/p99 of each search.
func BenchmarkLogSearch(b *testing.B) {
	lines := 10_000_000
	if v := os.Getenv("TRACESIFT_BENCH_LOG_LINES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10_000 {
			b.Fatalf("TRACESIFT_BENCH_LOG_LINES=%q: want a number of lines, at least 10000", v)
		}
		lines = n
	}
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
	r := store.NewReader(conn, db, store.ReaderConfig{LogWindow: time.Hour, MaxLogs: 100})

	end := time.Now()
	start := end.Add(-time.Hour)
	gen := newLogGen(start, end, lines)
	began := time.Now()
	for done := 0; done < lines; {
		n := min(200_000, lines-done)
		if _, err := w.WriteLogs(ctx, gen.batch(n)); err != nil {
			b.Fatal(err)
		}
		done += n
	}
	load := time.Since(began)
	if err := conn.Exec(ctx, "OPTIMIZE TABLE "+db+".logs FINAL", nil); err != nil {
		b.Fatal(err)
	}
	var disk struct {
		Bytes uint64 `json:"bytes"`
	}
	if err := conn.Query(ctx, "SELECT sum(bytes_on_disk) AS bytes FROM system.parts WHERE database = {db:String} AND table = 'logs' AND active",
		store.Params{"db": db}, func(row []byte) error { return json.Unmarshal(row, &disk) }); err != nil {
		b.Fatal(err)
	}

	searches := []struct {
		name string
		f    store.LogsFilter
	}{
		{"needle (an id)", store.LogsFilter{Words: []string{gen.someID}}},
		{"rare word", store.LogsFilter{Words: store.SearchWords("zorblax")}},
		{"common word", store.LogsFilter{Words: store.SearchWords("declined")}},
		{"two words", store.LogsFilter{Words: store.SearchWords("connection reset")}},
		{"service and word", store.LogsFilter{Service: "payments", Words: store.SearchWords("timeout")}},
		{"trace id", store.LogsFilter{TraceID: gen.someTrace}},
	}
	const runs = 30
	b.ResetTimer()
	for b.Loop() {
		fmt.Printf("log search over %d lines (loaded at %.0f lines/s, %.1f bytes on disk per line), %d runs each:\n",
			lines, float64(lines)/load.Seconds(), float64(disk.Bytes)/float64(lines), runs)
		for _, s := range searches {
			f := s.f
			f.Start, f.End, f.Limit = start.UnixNano(), end.UnixNano(), 100
			var took []time.Duration
			found := 0
			for range runs {
				t0 := time.Now()
				got, err := r.SearchLogs(ctx, f)
				if err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
				found = len(got)
			}
			slices.Sort(took)
			p50, p99 := took[len(took)/2], took[len(took)*99/100]
			fmt.Printf("  %-18s p50 %7.1f ms  p99 %7.1f ms  (%d lines returned)\n", s.name,
				float64(p50)/1e6, float64(p99)/1e6, found)
			b.ReportMetric(float64(p50)/1e6, "ms-p50-"+metricName(s.name))
			b.ReportMetric(float64(p99)/1e6, "ms-p99-"+metricName(s.name))
		}
	}
	b.ReportMetric(float64(lines)/load.Seconds(), "load-lines/s")
	b.ReportMetric(float64(disk.Bytes)/float64(lines), "disk-bytes/line")
}

func metricName(s string) string {
	out := []byte(s)
	n := 0
	for _, c := range out {
		switch {
		case c == ' ':
			out[n] = '-'
		case c == '(' || c == ')':
			continue
		default:
			out[n] = c
		}
		n++
	}
	return string(out[:n])
}

// logGen makes log lines like those of the tracing load's services: a few
// dozen templates with ids and durations, 30 % of them with a trace id,
// one in 10 000 with a rare word.
type logGen struct {
	rng        *rand.Rand
	start      int64
	step       int64
	n          int64
	someTrace  string
	someID     string // an order id some line has
	services   []string
	severities []string
}

func newLogGen(start, end time.Time, lines int) *logGen {
	return &logGen{rng: rand.New(rand.NewPCG(7, 11)), start: start.UnixNano(),
		step:       max(1, end.Sub(start).Nanoseconds()/int64(lines)),
		services:   []string{"frontend", "checkout", "inventory", "payments", "shipping", "search", "users", "ledger"},
		severities: []string{"INFO", "INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"}}
}

var logTemplates = []string{
	"GET /api/orders/%d 200 in %dms",
	"POST /api/cart/%d/items 201 in %dms",
	"payment declined for order %d: insufficient funds (%dms)",
	"cache miss key=user:%d took %dms",
	"connection reset by peer while calling inventory, attempt %d after %dms",
	"slow query: SELECT * FROM orders WHERE customer_id=%d took %dms",
	"request timeout after %dms calling payments for order %d",
	"user %d logged in from web, session ttl %dm",
	"shipment %d label printed in %dms",
	"search for product ids returned %d hits in %dms",
}

func (g *logGen) batch(n int) plog.Logs {
	ld := plog.NewLogs()
	per := make([]plog.LogRecordSlice, len(g.services))
	for i, s := range g.services {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", s)
		rl.Resource().Attributes().PutStr("host.name", fmt.Sprintf("%s-%d", s, i%3))
		per[i] = rl.ScopeLogs().AppendEmpty().LogRecords()
	}
	var tid [16]byte
	for range n {
		svc := g.rng.IntN(len(g.services))
		lr := per[svc].AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(g.start + g.n*g.step))
		g.n++
		lr.SetSeverityText(g.severities[g.rng.IntN(len(g.severities))])
		id := g.rng.IntN(100_000_000)
		body := fmt.Sprintf(logTemplates[g.rng.IntN(len(logTemplates))], id, g.rng.IntN(3000))
		if g.someID == "" && g.n > int64(n/2) {
			g.someID = strconv.Itoa(id)
		}
		if g.rng.IntN(10_000) == 0 {
			body += " circuit breaker opened for zorblax-gateway"
		}
		lr.Body().SetStr(body)
		if g.rng.IntN(10) < 3 {
			for i := range tid {
				tid[i] = byte(g.rng.Uint32())
			}
			lr.SetTraceID(tid)
			if g.someTrace == "" {
				g.someTrace = pcommon.TraceID(tid).String()
			}
		}
	}
	return ld
}

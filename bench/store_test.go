package bench

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/embedded"
	"github.com/tracesift/tracesift/internal/tenant"
)

var (
	//go:embed testdata/otel_schema.sql
	otelSchemaSQL string
	//go:embed testdata/otel_trace_by_id.sql
	otelTraceByIDSQL string
	//go:embed testdata/otel_copy.sql
	otelCopySQL string
)

const (
	storeDB = "tracesift"
	// otelDB holds the OpenTelemetry exporter's schema: chDB allows one
	// session per process, so both schemas live in it, side by side.
	otelDB = "otel"

	storeFetches    = 1000 // trace ids fetched, drawn from all loaded traces
	storeSearchRuns = 30   // runs of each search
	storeLimit      = 20   // GET /api/v1/traces' default limit
	storeRange      = time.Hour
	// storeTracedLines is how many log lines carry a trace's id: one a
	// server span (storeExtras).
	storeTracedLines = 4
	// storeBusyFetches is how many of the trace ids are fetched again while
	// inserts run.
	storeBusyFetches = 200
)

// BenchmarkStore is issue 6's `make bench-store`: it loads
// TRACESIFT_BENCH_STORE_SPANS spans (10 million by default: 1 million traces
// of the tracing load's shape, see storeGen) over the last hour into the
// embedded ClickHouse through the store's writer (Writer.WriteTraces, one
// call per TRACESIFT_BENCH_STORE_BATCH spans, 50 000 by default,
// TRACESIFT_BENCH_STORE_WRITERS calls at a time, 2 by default as the store
// exporter's queue consumers), and reports the insert's spans/s and spans
// per CPU-second of the process. Then it writes, the same way, what the
// pipeline stores beside those traces (storeExtras: 0.8 log lines a span,
// half of them with the trace's id, a finding and a clock offset a trace)
// and reports lines/s, and the estimates of one skewed host pair
// (storeSkewedPair: 1 in 20 traces pass through it). The store's filter
// warmer runs throughout, as in the collector. Run it with -benchtime 1x.
//
// Once the merges the load started have settled, it times, over the data as
// loaded, trace by id (Reader.GetTrace: the spans, logs, findings and clock
// offsets, and the skewed pair for a trace through it; a trace without all
// of them, or with a pair it should not have, fails the benchmark) for 1000 trace
// ids drawn from all loaded traces and five trace searches
// (Reader.SearchTraces over the hour, 20 a page, 30 runs each). Then it copies the same spans into the
// OpenTelemetry Collector ClickHouse exporter's schema (testdata/
// otel_schema.sql, in database otel of the same session), runs OPTIMIZE
// FINAL on every table of both, and reports bytes on disk per span of each
// (active parts of every table the schema uses) and trace by id for both
// (the exporter's by its documented lookup-table query) and the searches
// again. Then the same reads (200 of the ids) while writers load more spans
// into the hour at 150 000 spans/s offered (half the insert target;
// TRACESIFT_BENCH_STORE_BUSY_RATE), and the hostile reads
// (hostileReads). Nothing is asserted on time; a fetched trace without all
// its spans, or a search that misses what it must find, fails the
// benchmark. Bytes per span count every table of traces, not the logs,
// which are reported per line.
func BenchmarkStore(b *testing.B) {
	var err error
	spans := envCount(b, "TRACESIFT_BENCH_STORE_SPANS", 10_000_000)
	batch := min(envCount(b, "TRACESIFT_BENCH_STORE_BATCH", 50_000), spans)
	if spans%batch != 0 {
		b.Fatalf("TRACESIFT_BENCH_STORE_SPANS=%d is not a whole number of %d-span batches", spans, batch)
	}
	batches := spans / batch
	busyRate := envCount(b, "TRACESIFT_BENCH_STORE_BUSY_RATE", 150_000)
	writers := 2
	if v := os.Getenv("TRACESIFT_BENCH_STORE_WRITERS"); v != "" {
		if writers, err = strconv.Atoi(v); err != nil || writers < 1 || writers >= storeTemplates {
			b.Fatalf("TRACESIFT_BENCH_STORE_WRITERS=%q: want 1 to %d concurrent writes", v, storeTemplates-1)
		}
	}
	ctx := context.Background()
	conn, err := embedded.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if err := store.ApplySchema(ctx, conn, storeDB); err != nil {
		b.Fatal(err)
	}
	if err := applyOTelSchema(ctx, conn); err != nil {
		b.Fatal(err)
	}
	w := store.NewWriter(conn, storeDB)
	r := store.NewReader(conn, storeDB, store.ReaderConfig{})
	defer r.Wait()
	// The filter warmer runs as in the collector's store (storeextension).
	warmCtx, stopWarming := context.WithCancel(ctx)
	warmDone := make(chan struct{})
	go func() {
		defer close(warmDone)
		store.NewFilterWarmer(conn, storeDB).Run(warmCtx, store.FilterWarmEvery, func(_ int, err error) {
			if err != nil {
				b.Errorf("filter warmer: %v", err)
			}
		})
	}()
	defer func() { stopWarming(); <-warmDone }()

	end := time.Now()
	start := end.Add(-storeRange)
	gen, err := newStoreGen(1, batch, batches, start, end, storeFetches)
	if err != nil {
		b.Fatal(err)
	}
	var ld loadStats
	cpu0, began := cpuTime(), time.Now()
	if ld.generating, _, err = loadStore(ctx, gen, batches, writers, nil, spansTo(w)); err != nil {
		b.Fatal(err)
	}
	ld.wall, ld.cpu = time.Since(began), cpuTime()-cpu0
	// The same traces again (the same seed makes the same batches) for what
	// the pipeline stores beside them: their logs, findings, clock offsets.
	replay, err := newStoreGen(1, batch, batches, start, end, storeFetches)
	if err != nil {
		b.Fatal(err)
	}
	var lines atomic.Int64
	began = time.Now()
	if _, _, err = loadStore(ctx, replay, batches, writers, nil, extrasTo(w, &lines)); err != nil {
		b.Fatal(err)
	}
	ld.extrasWall, ld.lines = time.Since(began), int(lines.Load())
	if err := w.WriteClockPairs(ctx, storeSkewedPairs(start, end)); err != nil {
		b.Fatal(err)
	}
	if ld.settle, err = settleMerges(ctx, conn); err != nil {
		b.Fatal(err)
	}
	ld.cpuSettled = cpuTime() - cpu0
	loaded, err := diskUsage(ctx, conn, storeDB)
	if err != nil {
		b.Fatal(err)
	}
	window := func(f store.TracesFilter) store.TracesFilter {
		f.Start, f.End, f.Limit = start.UnixNano(), end.UnixNano(), storeLimit
		return f
	}
	page := func(f store.TracesFilter) func(int) (store.TracesFilter, string) {
		return func(int) (store.TracesFilter, string) { return window(f), "" }
	}
	searches := []storeSearch{
		{"service", page(store.TracesFilter{Service: "payments"})},
		{"service+operation", page(store.TracesFilter{Service: "frontend", Operation: "POST /api/checkout"})},
		{"minDuration 1s", page(store.TracesFilter{MinDuration: time.Second})},
		{"status=error", page(store.TracesFilter{ErrorsOnly: true})},
		// A different order id every run: the engine's query condition
		// cache remembers which granules a filter matched, so repeating
		// one needle would time the cache.
		{"attr app.order.id", func(run int) (store.TracesFilter, string) {
			f := store.TracesFilter{Attributes: []store.AttributeFilter{{Key: "app.order.id", Value: gen.needles[run]}}}
			return window(f), gen.needleTraces[run]
		}},
	}
	search := func() []timing {
		var out []timing
		for _, s := range searches {
			var took []time.Duration
			for run := range storeSearchRuns {
				f, want := s.filter(run)
				t0 := time.Now()
				got, err := r.SearchTraces(ctx, f)
				took = append(took, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				if want == "" && len(got) != storeLimit || want != "" && (len(got) != 1 || got[0].TraceID != want) {
					b.Fatalf("search %s found %d traces, want %s", s.name, len(got), cmpWant(want))
				}
			}
			out = append(out, quantiles(took))
		}
		return out
	}
	ids := gen.sample

	b.ResetTimer()
	copied := false
	extraSpans := 0 // inserted by the hostile-read phase of an earlier round
	for b.Loop() {
		asLoaded := storeRun{oursDisk: loaded}
		asLoaded.oursDisk.tables = slices.Clone(loaded.tables) // apportioned below
		asLoaded.ours, _ = fetchTraces(b, ctx, conn, r, ids, false)
		asLoaded.searches = search()
		if !copied { // once: a second round (-benchtime 2x) finds the data as the first left it
			if err := conn.Exec(ctx, strings.NewReplacer("${otel}", otelDB, "${db}", storeDB).Replace(otelCopySQL), nil); err != nil {
				b.Fatal(err)
			}
			copied = true
			// The copy has every span's id, and a parent id but for the
			// roots, as the exporter would.
			var ids struct {
				NoID  uint64 `json:"no_id"`
				Roots uint64 `json:"roots"`
			}
			err := conn.Query(ctx, "SELECT countIf(SpanId = '') AS no_id, countIf(ParentSpanId = '') AS roots FROM "+otelDB+".otel_traces",
				nil, func(row []byte) error { return json.Unmarshal(row, &ids) })
			if err != nil {
				b.Fatal(err)
			}
			if ids.NoID != 0 || ids.Roots != uint64(spans/SpansPerTrace) {
				b.Fatalf("the exporter's copy has %d spans without an id and %d roots, want none and %d", ids.NoID, ids.Roots, spans/SpansPerTrace)
			}
		}
		for _, db := range []string{storeDB, otelDB} {
			if err := optimizeFinal(ctx, conn, db); err != nil {
				b.Fatal(err)
			}
		}
		var final storeRun
		if final.oursDisk, err = diskUsage(ctx, conn, storeDB); err != nil {
			b.Fatal(err)
		}
		if final.otelDisk, err = diskUsage(ctx, conn, otelDB); err != nil {
			b.Fatal(err)
		}
		share, err := factsShare(ctx, conn, storeDB, final.oursDisk)
		if err != nil {
			b.Fatal(err)
		}
		final.oursDisk.apportion(share)
		asLoaded.oursDisk.apportion(share) // as loaded, by the same share
		if n, m := final.oursDisk.rows["spans"], final.otelDisk.rows["otel_traces"]; n != uint64(spans+extraSpans) || m != uint64(spans) {
			b.Fatalf("the spans tables hold %d (tracesift) and %d (exporter) spans, want %d", n, m, spans)
		}
		final.ours, final.otel = fetchTraces(b, ctx, conn, r, ids, true)
		final.searches = search()
		where, err := whereBytesGo(ctx, conn, spans)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Print(storeReport(spans, batch, writers, ld, asLoaded, final, searches, where))

		b.ReportMetric(float64(spans)/ld.wall.Seconds(), "insert-spans/s")
		b.ReportMetric(float64(spans)/ld.cpu.Seconds(), "insert-spans/CPU-s")
		b.ReportMetric(final.oursDisk.perSpan(spans), "disk-bytes/span")
		b.ReportMetric(final.otelDisk.perSpan(spans), "otel-disk-bytes/span")
		b.ReportMetric(ms(final.ours.get.p50), "ms-p50-by-id")
		b.ReportMetric(ms(final.ours.get.p99), "ms-p99-by-id")
		b.ReportMetric(ms(final.otel.p50), "otel-ms-p50-by-id")
		b.ReportMetric(ms(final.otel.p99), "otel-ms-p99-by-id")
		for i, s := range searches {
			b.ReportMetric(ms(final.searches[i].p99), "ms-p99-search-"+metricName(s.name))
		}

		// While inserts run: the same reads as writers load more spans into
		// the same hour at a fixed rate, half the insert target by default
		// (busy, not saturated); fixed, so that runs and configurations
		// whose loads differ in speed meet the same work. Its order ids
		// follow the load's, so that each needle stays in one trace.
		more, err := newStoreGen(uint64(1000+extraSpans), batch, batches, start, end, 1)
		if err != nil {
			b.Fatal(err)
		}
		more.orders = 500_000_000 + extraSpans
		busy, err := whileInserting(ctx, more, writers, paced(spansTo(w), batch, float64(busyRate)), func() {
			busyFetch, _ := fetchTraces(b, ctx, conn, r, ids[:min(len(ids), storeBusyFetches)], false)
			busySearches := search()
			fmt.Print(busyReport(busyFetch, busySearches, searches, busyRate))
			b.ReportMetric(ms(busyFetch.get.p99), "busy-ms-p99-by-id")
			for i, s := range searches {
				b.ReportMetric(ms(busySearches[i].p99), "busy-ms-p99-search-"+metricName(s.name))
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		fmt.Printf("  meanwhile %d WriteTraces calls of %d spans, %d at a time: %.0f spans/s\n",
			busy.batches, batch, writers, float64(busy.batches*batch)/busy.wall.Seconds())
		extraSpans += busy.batches * batch

		hostileBatches := envCount(b, "TRACESIFT_BENCH_STORE_HOSTILE_SPANS", 4_000_000) / batch
		extra, err := newStoreGen(uint64(2+extraSpans), batch, max(hostileBatches, 2), start, end, 1)
		if err != nil {
			b.Fatal(err)
		}
		report, ok, err := hostileReads(ctx, r, w, extra, max(hostileBatches, 2), writers)
		if err != nil {
			b.Fatal(err)
		}
		extraSpans += max(hostileBatches, 2) / 2 * 2 * batch
		fmt.Print(report)
		if !ok {
			b.Errorf("a hostile read was not answered 200 or 400 within %s", hostileBound)
		}
	}
}

// storeSearch is one of the five typical trace searches.
type storeSearch struct {
	name string
	// filter is the search of run 0, 1, …, and the one trace it must find
	// ("" when it must fill a page).
	filter func(run int) (store.TracesFilter, string)
}

func cmpWant(want string) string {
	if want == "" {
		return fmt.Sprintf("a full page of %d", storeLimit)
	}
	return "only " + want
}

// loadStats is what the load through the writer took.
type loadStats struct {
	wall       time.Duration // the whole load
	generating time.Duration // of it, making batches
	cpu        time.Duration // utime+stime of the process over the load
	settle     time.Duration // after the logs, until the merges were done
	extrasWall time.Duration // writing the traces' logs, findings and clock offsets
	lines      int           // log lines written
	cpuSettled time.Duration // cpu from the load's start until the merges were done, the logs' load included
}

// timing is a series of runs: the median, p99 and the first run, which
// finds the engine's caches as the runs before left them.
type timing struct{ p50, p99, first time.Duration }

func quantiles(d []time.Duration) timing {
	first := d[0]
	slices.Sort(d)
	return timing{d[len(d)/2], d[len(d)*99/100], first}
}

// withFirst is t with its first run, for a search's 30 runs, whose p99 is
// the slowest run.
func withFirst(t timing) string { return fmt.Sprintf("%s (1st %.1f)", t, ms(t.first)) }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func mib(bytes uint64) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

func (t timing) String() string { return fmt.Sprintf("%6.1f / %6.1f ms", ms(t.p50), ms(t.p99)) }

// storeRun is what one state of the data measured.
type storeRun struct {
	ours               fetchTimes
	otel               timing
	searches           []timing
	oursDisk, otelDisk disk
}

type fetchTimes struct {
	get   timing // Reader.GetTrace: its spans, then its window's logs, findings, clock offsets
	spans timing // its first statement alone (the spans), as the exporter's query reads
	// Traces read, and those through storeSkewedPair's hosts (their window read too).
	fetched, skewed int
	// What the process read from the disk meanwhile, not from the page cache
	// (every statement timed, the exporter's too): a tail of reads of files
	// the page cache could not keep.
	diskRead uint64
}

func envCount(b *testing.B, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 10_000 {
		b.Fatalf("%s=%q: want a number, at least 10000", key, v)
	}
	return n
}

// diskReadBytes is what the process has read from storage, not the page
// cache (/proc/self/io's read_bytes); 0 where the kernel does not say.
func diskReadBytes() uint64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "read_bytes: "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// cpuTime is the CPU time of the whole process: Go and the engine's threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func applyOTelSchema(ctx context.Context, conn store.Conn) error {
	for _, stmt := range strings.Split(strings.ReplaceAll(otelSchemaSQL, "${db}", otelDB), ";\n") {
		var sql []string
		for _, line := range strings.Split(stmt, "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "--") {
				sql = append(sql, line)
			}
		}
		if s := strings.TrimSpace(strings.Join(sql, "\n")); s != "" {
			if err := conn.Exec(ctx, s, nil); err != nil {
				return fmt.Errorf("the exporter's schema: %w", err)
			}
		}
	}
	return nil
}

// settleMerges waits until no merge has run and the number of active parts
// has not changed for 75 s (at most ten minutes) and says when the last
// merge was seen. The engine looks for merges every 5 s, and each time it
// finds none it waits longer, up to a minute (max_merge_selecting_sleep_ms):
// a shorter quiet spell can be one of its waits, with hundreds of parts left.
func settleMerges(ctx context.Context, conn store.Conn) (time.Duration, error) {
	const quietFor = 75 * time.Second
	began := time.Now()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	type state struct {
		Merges uint64 `json:"merges"`
		Parts  uint64 `json:"parts"`
	}
	poll := func() (st state, err error) {
		err = conn.Query(ctx, `SELECT (SELECT count() FROM system.merges WHERE database IN ({a:String}, {b:String})) AS merges,
			(SELECT count() FROM system.parts WHERE database IN ({a:String}, {b:String}) AND active) AS parts`,
			store.Params{"a": storeDB, "b": otelDB}, func(row []byte) error { return json.Unmarshal(row, &st) })
		if err != nil {
			err = fmt.Errorf("watching merges: %w", err)
		}
		return st, err
	}
	last, err := poll()
	if err != nil {
		return 0, err
	}
	lastChange := began
	for time.Since(lastChange) < quietFor && time.Since(began) < 10*time.Minute {
		<-tick.C
		now, err := poll()
		if err != nil {
			return 0, err
		}
		if now.Merges > 0 || now.Parts != last.Parts {
			lastChange = time.Now()
		}
		last = now
	}
	return lastChange.Sub(began), nil
}

// disk is what a database's tables take on disk, active parts only: the
// logs table apart.
type disk struct {
	bytes, parts uint64
	tables       []tableDisk
	rows         map[string]uint64
	logs         tableDisk // with its copy of traced lines (in trace_facts): rows are logs'
	tracedLines  uint64    // the copy's bytes
}

type tableDisk struct {
	Table string `json:"table"`
	Bytes uint64 `json:"bytes"`
	Rows  uint64 `json:"rows"`
	Parts uint64 `json:"parts"`
}

func (d disk) perSpan(spans int) float64 { return float64(d.bytes) / float64(spans) }

func diskUsage(ctx context.Context, conn store.Conn, db string) (disk, error) {
	d := disk{rows: map[string]uint64{}}
	err := conn.Query(ctx, `SELECT table, toUInt64(sum(bytes_on_disk)) AS bytes, toUInt64(sum(rows)) AS rows,
		toUInt64(count()) AS parts FROM system.parts WHERE database = {db:String} AND active GROUP BY table ORDER BY bytes DESC`,
		store.Params{"db": db}, func(row []byte) error {
			var t tableDisk
			if err := json.Unmarshal(row, &t); err != nil {
				return err
			}
			d.rows[t.Table] = t.Rows
			if t.Table == "logs" { // per line, not per span
				d.logs.Table, d.logs.Rows = t.Table, t.Rows
				d.logs.Bytes += t.Bytes
				d.logs.Parts += t.Parts
				return nil
			}
			d.bytes += t.Bytes
			d.parts += t.Parts
			d.tables = append(d.tables, t)
			return nil
		})
	if err != nil {
		return disk{}, fmt.Errorf("reading the parts of %s: %w", db, err)
	}
	return d, nil
}

// apportion moves the bytes of trace_facts beyond share of them, its
// findings and clock offsets, from the tables of traces to the logs': the
// rest is the copy of traced lines (schema 023).
func (d *disk) apportion(share float64) {
	for i, t := range d.tables {
		if t.Table != "trace_facts" {
			continue
		}
		lines := t.Bytes - uint64(float64(t.Bytes)*min(share, 1))
		d.tables[i].Bytes -= lines
		d.bytes -= lines
		d.logs.Bytes += lines
		d.tracedLines = lines
	}
	slices.SortStableFunc(d.tables, func(a, b tableDisk) int { return cmp.Compare(b.Bytes, a.Bytes) })
}

// factsShare is the share of db's trace_facts that its findings and clock
// offsets would take as a table of their own, merged: what they would cost
// were the copy of traced lines elsewhere, as it was before schema 023.
func factsShare(ctx context.Context, conn store.Conn, db string, facts disk) (float64, error) {
	const scratch = "bench_facts_alone"
	for _, s := range []string{"DROP DATABASE IF EXISTS " + scratch, "CREATE DATABASE " + scratch,
		"CREATE TABLE " + scratch + ".trace_facts AS " + db + ".trace_facts",
		"INSERT INTO " + scratch + ".trace_facts SELECT * FROM " + db + ".trace_facts WHERE fact != 'line'",
		"OPTIMIZE TABLE " + scratch + ".trace_facts FINAL"} {
		if err := conn.Exec(ctx, s, nil); err != nil {
			return 0, fmt.Errorf("measuring the findings and clock offsets alone: %w", err)
		}
	}
	alone, err := diskUsage(ctx, conn, scratch)
	if err != nil {
		return 0, err
	}
	if err := conn.Exec(ctx, "DROP DATABASE "+scratch, nil); err != nil {
		return 0, err
	}
	for _, t := range facts.tables {
		if t.Table == "trace_facts" {
			return float64(alone.bytes) / float64(max(1, t.Bytes)), nil
		}
	}
	return 0, fmt.Errorf("%s has no trace_facts", db)
}

func optimizeFinal(ctx context.Context, conn store.Conn, db string) error {
	var tables []string
	err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = {db:String} AND engine LIKE '%MergeTree'",
		store.Params{"db": db}, func(row []byte) error {
			var t struct {
				Name string `json:"name"`
			}
			err := json.Unmarshal(row, &t)
			tables = append(tables, t.Name)
			return err
		})
	if err != nil {
		return fmt.Errorf("listing the tables of %s: %w", db, err)
	}
	for _, t := range tables {
		if err := conn.Exec(ctx, "OPTIMIZE TABLE "+db+"."+t+" FINAL", nil); err != nil {
			return fmt.Errorf("optimizing %s.%s: %w", db, t, err)
		}
	}
	return nil
}

// fetchTraces times trace by id for every id: Reader.GetTrace, the
// reader's spans query alone, and,
// with otel, the exporter's documented query. The three take turns at going
// first, so that none is always served from what another just read.
func fetchTraces(b *testing.B, ctx context.Context, conn store.Conn, r *store.Reader, ids []string, otel bool) (fetchTimes, timing) {
	spansQuery := store.Query("trace_spans", storeDB)
	otelQuery := strings.ReplaceAll(otelTraceByIDSQL, "${db}", otelDB)
	var get, spans, exp []time.Duration
	skewed := 0
	read0 := diskReadBytes()
	countRows := func(query string, p store.Params) (int, error) {
		n := 0
		err := conn.Query(ctx, query, p, func(row []byte) error {
			n++
			var m map[string]any
			return json.Unmarshal(row, &m)
		})
		return n, err
	}
	steps := []func(id string) (int, error){
		func(id string) (int, error) {
			t0 := time.Now()
			tr, err := r.GetTrace(ctx, id)
			get = append(get, time.Since(t0))
			if err != nil {
				return 0, err
			}
			if len(tr.Logs) != storeTracedLines || len(tr.Findings) != 1 || len(tr.ClockOffsets) != 1 {
				return 0, fmt.Errorf("%d log lines, %d findings, %d clock offsets, want %d, 1 and 1",
					len(tr.Logs), len(tr.Findings), len(tr.ClockOffsets), storeTracedLines)
			}
			through := 0 // spans on the skewed pair's hosts
			for _, s := range tr.Spans {
				if slices.Contains(storeSkewedPair[:], s.Host) {
					through++
				}
			}
			if want := min(through/2, 1); len(tr.SkewedPairs) != want {
				return 0, fmt.Errorf("%d skewed pairs, want %d (%d spans on their hosts)", len(tr.SkewedPairs), want, through)
			}
			skewed += len(tr.SkewedPairs)
			return len(tr.Spans), nil
		},
		func(id string) (int, error) {
			t0 := time.Now()
			n, err := countRows(spansQuery, store.Params{"trace_id": id, "tenant": tenant.Default,
				"max_spans": uint64(store.DefaultMaxSpansPerTrace) + 1})
			spans = append(spans, time.Since(t0))
			return n, err
		},
	}
	if otel {
		steps = append(steps, func(id string) (int, error) {
			t0 := time.Now()
			n, err := countRows(otelQuery, store.Params{"trace_id": id})
			exp = append(exp, time.Since(t0))
			return n, err
		})
	}
	for i, id := range ids {
		for j := range steps {
			k := (i + j) % len(steps)
			n, err := steps[k](id)
			if err != nil {
				b.Fatalf("trace %s: %v", id, err)
			}
			if n != SpansPerTrace {
				b.Fatalf("trace %s: %d spans, want %d (fetch %d of %d)", id, n, SpansPerTrace, k+1, len(steps))
			}
		}
	}
	ft := fetchTimes{get: quantiles(get), spans: quantiles(spans), skewed: skewed, fetched: len(ids),
		diskRead: diskReadBytes() - read0}
	if !otel {
		return ft, timing{}
	}
	return ft, quantiles(exp)
}

// whereBytesGo lists the columns and skip indexes of both schemas that take
// 0.1 bytes per span or more, compressed.
func whereBytesGo(ctx context.Context, conn store.Conn, spans int) (string, error) {
	var sb strings.Builder
	for _, q := range []struct{ what, query string }{
		{"columns", `SELECT database, table, name, data_compressed_bytes AS bytes FROM system.columns
			WHERE database IN ({a:String}, {b:String}) AND data_compressed_bytes >= {min:UInt64} ORDER BY database, table, bytes DESC`},
		{"skip indexes", `SELECT database, table, name, data_compressed_bytes AS bytes FROM system.data_skipping_indices
			WHERE database IN ({a:String}, {b:String}) AND data_compressed_bytes >= {min:UInt64} ORDER BY database, table, bytes DESC`},
	} {
		fmt.Fprintf(&sb, "%s, compressed bytes per span (0.1 and more):\n", q.what)
		p := store.Params{"a": storeDB, "b": otelDB, "min": uint64(spans / 10)}
		err := conn.Query(ctx, q.query, p, func(row []byte) error {
			var c struct {
				Database, Table, Name string
				Bytes                 uint64
			}
			if err := json.Unmarshal(row, &c); err != nil {
				return err
			}
			fmt.Fprintf(&sb, "  %-48s %7.1f\n", c.Database+"."+c.Table+"."+c.Name, float64(c.Bytes)/float64(spans))
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("listing %s: %w", q.what, err)
		}
	}
	return sb.String(), nil
}

func storeReport(spans, batch, writers int, ld loadStats, loaded, final storeRun, searches []storeSearch, where string) string {
	var sb strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	p("store: %d spans (%d traces of %d) over %s, %d WriteTraces calls of %d spans, %d at a time\n",
		spans, spans/SpansPerTrace, SpansPerTrace, storeRange, spans/batch, batch, writers)
	p("insert: %.0f spans/s (%.1f s, of which %.1f s making batches)\n",
		float64(spans)/ld.wall.Seconds(), ld.wall.Seconds(), ld.generating.Seconds())
	p("        %.0f spans per CPU-second of the process over the load (%.1f CPU-s)\n",
		float64(spans)/ld.cpu.Seconds(), ld.cpu.Seconds())
	p("then the same traces' logs (%d lines, %d with a trace id), findings and clock offsets (one each a trace): "+
		"%.1f s, %.0f lines/s\n", ld.lines, spans/SpansPerTrace*storeTracedLines, ld.extrasWall.Seconds(),
		float64(ld.lines)/ld.extrasWall.Seconds())
	// Merges the spans started run on during the logs' load: only the sum
	// of both with every merge says what the spans cost in all.
	p("then merges went on for %.1f s: the spans, their logs and every merge took %.1f CPU-s (%.0f spans per CPU-second)\n",
		ld.settle.Seconds(), ld.cpuSettled.Seconds(), float64(spans)/ld.cpuSettled.Seconds())
	const row = "%-50s %-26s %s\n"
	p("\n"+row, "", "tracesift", "OTel exporter schema")
	p(row, fmt.Sprintf("bytes on disk per span, as loaded (%d parts)", loaded.oursDisk.parts),
		fmt.Sprintf("%.1f", loaded.oursDisk.perSpan(spans)), "-")
	p(row, "bytes on disk per span, OPTIMIZE FINAL",
		fmt.Sprintf("%.1f", final.oursDisk.perSpan(spans)),
		fmt.Sprintf("%.1f (tracesift: %.0f %% of it)", final.otelDisk.perSpan(spans),
			100*float64(final.oursDisk.bytes)/float64(max(1, final.otelDisk.bytes))))
	for i := range max(len(final.oursDisk.tables), len(final.otelDisk.tables)) {
		cell := func(d disk) string {
			if i >= len(d.tables) {
				return ""
			}
			return fmt.Sprintf("%s %.1f", d.tables[i].Table, float64(d.tables[i].Bytes)/float64(spans))
		}
		p(row, "", "  "+cell(final.oursDisk), "  "+cell(final.otelDisk))
	}
	perLine := func(d disk, b uint64) float64 { return float64(b) / float64(max(1, d.logs.Rows)) }
	p(row, "logs: bytes on disk per line, as loaded / FINAL", fmt.Sprintf("%.1f / %.1f (the copy of traced lines %.1f)",
		perLine(loaded.oursDisk, loaded.oursDisk.logs.Bytes), perLine(final.oursDisk, final.oursDisk.logs.Bytes),
		perLine(final.oursDisk, final.oursDisk.tracedLines)), "-")
	p("  (trace_facts holds both: its findings and clock offsets count as a table of their own would take them, merged; " +
		"as loaded, by the same share)\n")
	p(row, "trace by id p50 / p99, as loaded", loaded.ours.get, "-")
	p("  %d of the %d through the skewed host pair, read with its estimate\n", loaded.ours.skewed, loaded.ours.fetched)
	p(row, "  spans query alone", loaded.ours.spans, "")
	p(row, "  read from disk meanwhile", mib(loaded.ours.diskRead), "")
	p(row, "trace by id p50 / p99, OPTIMIZE FINAL", final.ours.get, final.otel)
	p(row, "  spans query alone", final.ours.spans, "(its one query: lookup + spans)")
	p(row, "  read from disk meanwhile, all three", mib(final.ours.diskRead), "")
	p(row, "  the exporter's ÷ tracesift's", fmt.Sprintf("%.1f× / %.1f×", float64(final.otel.p50)/float64(final.ours.get.p50),
		float64(final.otel.p99)/float64(final.ours.get.p99)), "")
	p("\nsearches (Reader.SearchTraces, %s window, %d a page, %d runs), p50 / p99 (the first run):\n",
		storeRange, storeLimit, storeSearchRuns)
	const searchRow = "%-50s %-37s %s\n"
	p(searchRow, "", "as loaded", "OPTIMIZE FINAL")
	for i, s := range searches {
		p(searchRow, "  "+s.name, withFirst(loaded.searches[i]), withFirst(final.searches[i]))
	}
	p("\n%s", where)
	return sb.String()
}

// loadStore hands batches batches from gen (all until stop is closed, with
// batches < 0) to write, writers calls at a time (the store exporter's queue
// has two consumers), and says how long making the batches took and how many
// were written.
func loadStore(ctx context.Context, gen *storeGen, batches, writers int, stop <-chan struct{},
	write func(context.Context, ptrace.Traces) error) (time.Duration, int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	todo := make(chan ptrace.Traces)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for td := range todo {
				if err := write(ctx, td); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		})
	}
	var generating time.Duration
	sent := 0
send:
	for ; batches < 0 || sent < batches; sent++ {
		t0 := time.Now()
		td := gen.next()
		generating += time.Since(t0)
		select {
		case todo <- td:
		case <-stop:
			break send
		case <-ctx.Done():
			break send
		}
	}
	close(todo)
	wg.Wait()
	close(errs)
	return generating, sent, <-errs
}

// busyLoad is what a load under reads did.
type busyLoad struct {
	batches int
	wall    time.Duration
}

// whileInserting runs reads while write is given gen's batches, writers at
// a time, and stops the load when they are done.
func whileInserting(ctx context.Context, gen *storeGen, writers int, write func(context.Context, ptrace.Traces) error,
	reads func()) (busyLoad, error) {
	stop := make(chan struct{})
	var (
		bl  busyLoad
		err error
	)
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		_, bl.batches, err = loadStore(ctx, gen, -1, writers, stop, write)
	}()
	reads()
	close(stop)
	<-done
	bl.wall = time.Since(began)
	return bl, err
}

func busyReport(fetch fetchTimes, took []timing, searches []storeSearch, rate int) string {
	var sb strings.Builder
	const row = "%-50s %s\n"
	fmt.Fprintf(&sb, "\nwhile inserts run (the same hour, %d spans/s offered), p50 / p99 (a search's first run):\n", rate)
	fmt.Fprintf(&sb, row, fmt.Sprintf("trace by id (%d ids)", storeBusyFetches), fetch.get)
	fmt.Fprintf(&sb, row, "  spans query alone", fetch.spans)
	fmt.Fprintf(&sb, row, "  read from disk meanwhile, merges too", mib(fetch.diskRead))
	for i, s := range searches {
		fmt.Fprintf(&sb, row, "  "+s.name, withFirst(took[i]))
	}
	return sb.String()
}

// paced lets write take a batch of batchSpans no faster than rate spans/s,
// over all its callers.
func paced(write func(context.Context, ptrace.Traces) error, batchSpans int, rate float64) func(context.Context, ptrace.Traces) error {
	var (
		mu   sync.Mutex
		next time.Time
	)
	every := time.Duration(float64(batchSpans) / rate * float64(time.Second))
	return func(ctx context.Context, td ptrace.Traces) error {
		mu.Lock()
		at := time.Now()
		if next.After(at) {
			at = next
		}
		next = at.Add(every)
		mu.Unlock()
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		return write(ctx, td)
	}
}

// spansTo writes a batch's spans through w, every one of them.
func spansTo(w *store.Writer) func(context.Context, ptrace.Traces) error {
	return func(ctx context.Context, td ptrace.Traces) error {
		st, err := w.WriteTraces(ctx, td)
		if err == nil && st.Written != td.SpanCount() {
			err = fmt.Errorf("WriteTraces wrote %d of %d spans (%d invalid)", st.Written, td.SpanCount(), st.Invalid)
		}
		return err
	}
}

// extrasTo writes what storeExtras makes of a batch through w: its log
// lines, findings and clock offsets; lines counts the lines.
func extrasTo(w *store.Writer, lines *atomic.Int64) func(context.Context, ptrace.Traces) error {
	return func(ctx context.Context, td ptrace.Traces) error {
		ld, findings, offsets := storeExtras(td)
		st, err := w.WriteLogs(ctx, ld)
		if err == nil && st.Written != ld.LogRecordCount() {
			err = fmt.Errorf("WriteLogs wrote %d of %d lines (%d invalid)", st.Written, ld.LogRecordCount(), st.Invalid)
		}
		if err != nil {
			return err
		}
		lines.Add(int64(st.Written))
		return w.WriteFacts(ctx, findings, offsets) // one insert, as WriteTraces does
	}
}

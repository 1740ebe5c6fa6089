package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	printMedians()
	printREDCost()
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Settings of the comparison that the tail samplers are configured with.
const (
	decisionWait = 5 * time.Second
	// refNumTraces bounds the reference's trace buffer. At the ~10-20 k
	// traces/s this machine can push, decision_wait 5s holds 50-100 k traces;
	// 200 k leaves room so the reference never evicts a trace early, which
	// would make it look cheaper than it is. Checked after each run with
	// otelcol_processor_tail_sampling_sampling_trace_dropped_too_early.
	refNumTraces = 200_000
	// recallSample is how many error and how many slow traces are looked up.
	recallSample = 100
)

type benchOptions struct {
	duration, warmup time.Duration
	conns            int
	out              string // "" keeps artifacts only for the run
	systems          []string
	// refShards is tail_sampling's num_shards: by default one per CPU, as
	// tracesift_sampler's num_shards 0 means. The processor's own default is
	// 1; over a 30 s window here it did as well per CPU-second (see
	// docs/benchmarks.md), but in short runs it lagged behind.
	refShards int
	// tsSamplerExtra is added to tracesift_otlp's sampler settings, e.g.
	// "max_buffered_bytes: 2147483648" (TRACESIFT_BENCH_SAMPLER_SETTINGS).
	tsSamplerExtra string
	rate           float64 // offered spans/s; 0: as fast as the server answers (TRACESIFT_BENCH_RATE)
	tsVersion      string  // git describe of the measured source
}

func optionsFromEnv(b *testing.B) benchOptions {
	// The warm-up outlasts decision_wait, so that both samplers are deciding
	// and freeing traces, not only buffering them, when the window opens.
	o := benchOptions{duration: 30 * time.Second, warmup: decisionWait + 5*time.Second, conns: 4,
		systems: []string{"reference", "tracesift"}, refShards: runtime.NumCPU()}
	dur := func(key string, into *time.Duration) {
		if v := os.Getenv(key); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				b.Fatalf("%s=%q: want a positive duration such as 30s", key, v)
			}
			*into = d
		}
	}
	dur("TRACESIFT_BENCH_DURATION", &o.duration)
	dur("TRACESIFT_BENCH_WARMUP", &o.warmup)
	if v := os.Getenv("TRACESIFT_BENCH_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("TRACESIFT_BENCH_CONNS=%q: want a positive number", v)
		}
		o.conns = n
	}
	if v := os.Getenv("TRACESIFT_BENCH_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r < 0 {
			b.Fatalf("TRACESIFT_BENCH_RATE=%q: want spans per second (0: as fast as the server answers)", v)
		}
		o.rate = r
	}
	if v := os.Getenv("TRACESIFT_BENCH_REF_SHARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("TRACESIFT_BENCH_REF_SHARDS=%q: want a positive number", v)
		}
		o.refShards = n
	}
	if v := os.Getenv("TRACESIFT_BENCH_SYSTEMS"); v != "" {
		o.systems = strings.Split(v, ",")
		for _, s := range o.systems {
			if s != "reference" && s != "tracesift" {
				b.Fatalf("TRACESIFT_BENCH_SYSTEMS=%q: names are reference and tracesift", v)
			}
		}
	}
	o.out = os.Getenv("TRACESIFT_BENCH_OUT")
	o.tsSamplerExtra = os.Getenv("TRACESIFT_BENCH_SAMPLER_SETTINGS")
	return o
}

// binaries are built once per test binary: with -count N every iteration
// compares the same builds. Only the selected systems are built.
var binaries struct {
	sync.Mutex
	dir     string
	built   map[string]string // system → binary
	version string            // of tracesift's source tree
}

func buildBinary(b *testing.B, system string) string {
	binaries.Lock()
	defer binaries.Unlock()
	if bin, ok := binaries.built[system]; ok {
		return bin
	}
	if binaries.dir == "" {
		dir, err := os.MkdirTemp("", "tracesift-bench-bin-")
		if err != nil {
			b.Fatal(err)
		}
		binaries.dir, binaries.built = dir, map[string]string{}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	dir, pkg := root, "./cmd/collector"
	if system == "reference" || system == "reference-kafka" {
		dir, pkg = filepath.Join(root, "bench", system), "."
	}
	bin := filepath.Join(binaries.dir, system)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = dir
	cmd.Env = serverEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s in %s: %v\n%s", pkg, dir, err, out)
	}
	if system == "tracesift" {
		// Which source was measured; "-dirty" means uncommitted changes.
		out, err := exec.Command("git", "-C", root, "describe", "--tags", "--always", "--dirty").Output()
		if binaries.version = strings.TrimSpace(string(out)); err != nil || binaries.version == "" {
			binaries.version = "unknown"
		}
	}
	binaries.built[system] = bin
	return bin
}

// serverEnv is the environment of builds and servers: the caller's, with
// CHDB_LIB_PATH defaulting to the libchdb.so that `make deps` installs.
func serverEnv() []string {
	env := os.Environ()
	if os.Getenv("CHDB_LIB_PATH") == "" {
		if lib, err := filepath.Abs("../node_modules/@chdb/lib-linux-x64-gnu/libchdb.so"); err == nil {
			env = append(env, "CHDB_LIB_PATH="+lib)
		}
	}
	return env
}

// result is what one system did under the load.
type result struct {
	name          string
	window        time.Duration
	counts        Counts // during the measured window
	rejectedAll   Counts // over the whole run, warm-up and drain included
	firstErr      error
	serverCPU     time.Duration
	loadgenCPU    time.Duration
	otherCPU      time.Duration // every other process's, in the window
	rssIdle       int64         // after start, before load
	rssWindowFrom int64
	rssWindowTo   int64
	peakRSS       int64 // VmHWM at the end of the window
	peakRSSFinal  int64 // VmHWM before SIGTERM (includes the decision drain)

	kept, decided float64 // traces, from the server's own metrics
	notes         []string

	recall *recallResult
	stop   error
	logs   []string
	nLogs  int
}

func (r *result) spansPerSec() float64 { return float64(r.counts.SpansAccepted) / r.window.Seconds() }
func (r *result) spansPerCPU() float64 {
	if r.serverCPU <= 0 {
		return 0
	}
	return float64(r.counts.SpansAccepted) / r.serverCPU.Seconds()
}

type recallResult struct {
	byClass map[Class][2]int // complete, sampled
	partial int              // stored with fewer than 10 spans
	missing int              // 404 at the deadline
	waited  time.Duration
}

func (r *recallResult) percent(classes ...Class) float64 {
	var ok, n int
	for _, c := range classes {
		ok += r.byClass[c][0]
		n += r.byClass[c][1]
	}
	if n == 0 {
		return 0
	}
	return 100 * float64(ok) / float64(n)
}

// system is how to configure, start and check one collector.
type system struct {
	name string
	bin  string
	// config returns the YAML configuration; dataDir is an empty temporary
	// folder for the server's data.
	config func(dataDir string, p ports) string
	// ready reports whether the server accepts load.
	ready func(p ports) bool
	// afterLoad runs once the load has stopped, with the server still up.
	afterLoad func(b *testing.B, p ports, l *Load, r *result)
}

type ports struct{ grpc, http, query, metrics int }

func (p ports) grpcAddr() string   { return fmt.Sprintf("127.0.0.1:%d", p.grpc) }
func (p ports) metricsURL() string { return fmt.Sprintf("http://127.0.0.1:%d/metrics", p.metrics) }
func (p ports) queryURL() string   { return fmt.Sprintf("http://127.0.0.1:%d", p.query) }

func freePorts(b *testing.B) ports {
	var p ports
	for _, into := range []*int{&p.grpc, &p.http, &p.query, &p.metrics} {
		port, err := FreePort()
		if err != nil {
			b.Fatal(err)
		}
		*into = port
	}
	return p
}

func tracesiftSystem(bin, samplerExtra string) system {
	// TRACESIFT_BENCH_PPROF=127.0.0.1:6060 serves the pprof endpoints of the
	// collector during the run, for profiles under the benchmark's load.
	pprofExt, pprofName := "", ""
	if addr := os.Getenv("TRACESIFT_BENCH_PPROF"); addr != "" {
		pprofExt, pprofName = fmt.Sprintf("  pprof:\n    endpoint: %s\n", addr), ", pprof"
	}
	return system{
		name: "tracesift",
		bin:  bin,
		config: func(dataDir string, p ports) string {
			// cmd/collector/default.yaml with a temporary data directory, free
			// ports and the comparison's decision_wait; kept traces really go
			// to the embedded ClickHouse, as in production.
			return fmt.Sprintf(`extensions:
  tracesift_store:
    database: tracesift
    embedded:
      path: %q
  tracesift_query:
    endpoint: 127.0.0.1:%d
%sreceivers:
  tracesift_otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
        max_recv_msg_size_mib: 16
      http:
        endpoint: 127.0.0.1:%d
        max_request_body_size: 16777216
    sampler:
      decision_wait: %s
      slow_threshold: 1s
      baseline_ratio: 0.01
      analyze:
        store: tracesift_store
%s
processors:
  tracesift_logs: {}
exporters:
  tracesift:
    store: tracesift_store
service:
  extensions: [tracesift_store, tracesift_query%s]
  pipelines:
    traces:
      receivers: [tracesift_otlp]
      exporters: [tracesift]
    logs:
      receivers: [tracesift_otlp]
      processors: [tracesift_logs]
      exporters: [tracesift]
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
`, dataDir, p.query, pprofExt, p.grpc, p.http, decisionWait, indent(samplerExtra, "      "), pprofName, p.metrics)
		},
		ready: func(p ports) bool {
			return TCPReady(p.grpcAddr()) && HTTPOK(p.queryURL()+"/health")
		},
		afterLoad: func(b *testing.B, p ports, l *Load, r *result) {
			r.recall = checkRecall(b, p, l.Interesting())
			if m, err := ScrapeMetrics(p.metricsURL()); err == nil {
				r.kept = m.Sum("otelcol_tracesift_sampler_traces_decided", `decision="kept"`)
				r.decided = m.Sum("otelcol_tracesift_sampler_traces_decided")
				for _, name := range []string{"otelcol_tracesift_sampler_export_errors", "otelcol_tracesift_sampler_spans_invalid",
					"otelcol_tracesift_sampler_spans_late", "otelcol_tracesift_sampler_early_decisions", "otelcol_tracesift_sampler_pushbacks",
					"otelcol_tracesift_store_records_invalid", "otelcol_exporter_send_failed_spans",
					"otelcol_exporter_enqueue_failed_spans", "otelcol_receiver_refused_spans"} {
					if v := m.Sum(name); v != 0 {
						r.notes = append(r.notes, fmt.Sprintf("%s=%.0f", name, v))
					}
				}
				r.notes = append(r.notes, fmt.Sprintf("otelcol_tracesift_sampler_traces_buffered=%.0f (after the drain)",
					m.Sum("otelcol_tracesift_sampler_traces_buffered")))
			}
		},
	}
}

// indent prefixes every line of yaml ("a: 1; b: 2" also works: ';' splits).
func indent(yaml, prefix string) string {
	var lines []string
	for _, l := range strings.FieldsFunc(yaml, func(r rune) bool { return r == '\n' || r == ';' }) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, prefix+l)
		}
	}
	return strings.Join(lines, "\n")
}

func referenceSystem(bin string, shards int) system {
	return system{
		name: "reference",
		bin:  bin,
		config: func(_ string, p ports) string {
			// The same keep rules as tracesift's defaults, as far as
			// tail_sampling has them: errors, ≥ 1 s, 1 % baseline; the nop
			// exporter makes this measure receiving and sampling only.
			return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d
        max_recv_msg_size_mib: 16
processors:
  tail_sampling:
    decision_wait: %s
    num_traces: %d
    num_shards: %d
    policies:
      - name: errors
        type: status_code
        status_code: {status_codes: [ERROR]}
      - name: slow
        type: latency
        latency: {threshold_ms: 1000}
      - name: baseline
        type: probabilistic
        probabilistic: {sampling_percentage: 1}
exporters:
  nop: {}
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [tail_sampling]
      exporters: [nop]
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
`, p.grpc, decisionWait, refNumTraces, shards, p.metrics)
		},
		ready: func(p ports) bool {
			// Receivers start last, so an open OTLP port means the pipeline is up.
			return TCPReady(p.grpcAddr()) && HTTPOK(p.metricsURL())
		},
		afterLoad: func(b *testing.B, p ports, _ *Load, r *result) {
			// Let the last traces be decided so the counts are final; the
			// reference has no buffered-traces gauge that reaches 0 reliably,
			// so wait out decision_wait plus its one-second timer tick.
			time.Sleep(decisionWait + 2*time.Second)
			m, err := ScrapeMetrics(p.metricsURL())
			if err != nil {
				r.notes = append(r.notes, err.Error())
				return
			}
			r.kept = m.Sum("otelcol_processor_tail_sampling_global_count_traces_sampled", `sampled="true"`)
			r.decided = m.Sum("otelcol_processor_tail_sampling_global_count_traces_sampled")
			for _, name := range []string{"otelcol_processor_tail_sampling_sampling_trace_dropped_too_early",
				"otelcol_processor_tail_sampling_sampling_policy_evaluation_error",
				"otelcol_processor_tail_sampling_traces_dropped_too_large", "otelcol_receiver_refused_spans"} {
				if v := m.Sum(name); v != 0 {
					r.notes = append(r.notes, fmt.Sprintf("%s=%.0f", name, v))
				}
			}
		},
	}
}

// checkRecall looks up a sample of the error and slow traces sent whole
// through the query API, once decision_wait has passed, and retries the
// incomplete ones until a deadline: the decision, the exporter's queue and
// the insert all take their time after the last span.
func checkRecall(b *testing.B, p ports, sent []SentTrace) *recallResult {
	rng := rand.New(rand.NewPCG(42, 42))
	rng.Shuffle(len(sent), func(i, j int) { sent[i], sent[j] = sent[j], sent[i] })
	var sample []SentTrace
	taken := map[Class]int{}
	for _, st := range sent {
		if taken[st.Class] < recallSample {
			taken[st.Class]++
			sample = append(sample, st)
		}
	}
	res := &recallResult{byClass: map[Class][2]int{}}
	for _, st := range sample {
		v := res.byClass[st.Class]
		v[1]++
		res.byClass[st.Class] = v
	}
	start := time.Now()
	time.Sleep(decisionWait)
	deadline := start.Add(decisionWait + 60*time.Second)
	pending := sample
	spans := map[string]int{}
	for len(pending) > 0 && time.Now().Before(deadline) {
		var still []SentTrace
		for _, st := range pending {
			n, err := storedSpans(p, st.ID.String())
			if err != nil {
				b.Logf("recall lookup of %s: %v", st.ID, err)
			}
			spans[st.ID.String()] = n
			if n == SpansPerTrace {
				v := res.byClass[st.Class]
				v[0]++
				res.byClass[st.Class] = v
				continue
			}
			still = append(still, st)
		}
		pending = still
		if len(pending) > 0 {
			time.Sleep(time.Second)
		}
	}
	for _, st := range pending {
		if spans[st.ID.String()] > 0 {
			res.partial++
		} else {
			res.missing++
		}
	}
	res.waited = time.Since(start)
	return res
}

// storedSpans returns the number of distinct spans the query API has for id,
// 0 for 404.
func storedSpans(p ports, id string) (int, error) {
	resp, err := http.Get(p.queryURL() + "/api/v1/traces/" + id)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 0, nil
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	var tr struct {
		Spans []struct {
			SpanID string `json:"spanId"`
		} `json:"spans"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return 0, err
	}
	ids := map[string]bool{}
	for _, s := range tr.Spans {
		ids[s.SpanID] = true
	}
	return len(ids), nil
}

// run drives one system: start, warm up, measure, drain, check, stop.
func run(b *testing.B, sys system, o benchOptions, seed uint64) *result {
	srv, p, dir := startSystem(b, sys, o, fmt.Sprintf("%s-%d", sys.name, seed))
	r := &result{name: sys.name, window: o.duration}
	pid := srv.PID()
	mustMem := func() (int64, int64) {
		rss, peak, err := ProcMemory(pid)
		if err != nil {
			b.Fatalf("%s: %v", sys.name, err)
		}
		return rss, peak
	}
	mustCPU := func(pid int) time.Duration {
		d, err := ProcCPU(pid)
		if err != nil {
			b.Fatalf("%s: %v", sys.name, err)
		}
		return d
	}
	r.rssIdle, _ = mustMem()

	load, err := StartLoad(LoadConfig{Endpoint: p.grpcAddr(), Conns: o.conns, Seed: seed, Rate: o.rate})
	if err != nil {
		b.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			load.Stop(10 * time.Second)
		}
	}()
	time.Sleep(o.warmup)
	if srv.Exited() {
		b.Fatalf("%s exited during warm-up; log:\n%s", sys.name, srv.LogTail(40))
	}

	mustMachine := func() time.Duration {
		d, err := MachineBusy()
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	c0, cpu0, gen0, all0, t0 := load.Counts(), mustCPU(pid), mustCPU(os.Getpid()), mustMachine(), time.Now()
	r.rssWindowFrom, _ = mustMem()
	time.Sleep(o.duration)
	c1, cpu1, gen1, all1, t1 := load.Counts(), mustCPU(pid), mustCPU(os.Getpid()), mustMachine(), time.Now()
	r.rssWindowTo, r.peakRSS = mustMem()

	r.window = t1.Sub(t0)
	r.serverCPU = cpu1 - cpu0
	r.loadgenCPU = gen1 - gen0
	r.otherCPU = max(0, (all1-all0)-r.serverCPU-r.loadgenCPU)
	r.counts = Counts{
		Requests:               c1.Requests - c0.Requests,
		SpansAccepted:          c1.SpansAccepted - c0.SpansAccepted,
		SpansPartiallyRejected: c1.SpansPartiallyRejected - c0.SpansPartiallyRejected,
		Rejected:               c1.Rejected,
	}
	for code, n := range c0.Rejected {
		r.counts.Rejected[code] -= n
		if r.counts.Rejected[code] == 0 {
			delete(r.counts.Rejected, code)
		}
	}

	load.Stop(30 * time.Second)
	stopped = true
	r.rejectedAll = load.Counts()
	r.firstErr = load.FirstError()
	if srv.Exited() {
		b.Fatalf("%s exited under load; log:\n%s", sys.name, srv.LogTail(40))
	}

	sys.afterLoad(b, p, load, r)
	if m, err := ScrapeMetrics(p.metricsURL()); err == nil && o.out != "" {
		_ = m.WriteFile(dir, "metrics.txt")
	}
	_, r.peakRSSFinal = mustMem()
	r.stop = srv.Stop(2 * time.Minute)
	r.logs, r.nLogs = srv.LogProblems(5)
	return r
}

// startSystem starts sys on free ports with its data in a temporary folder
// and waits until it accepts load; dir keeps its configuration and log (in
// o.out/name when set). The server is killed when the benchmark ends.
func startSystem(b *testing.B, sys system, o benchOptions, name string) (srv *Server, p ports, dir string) {
	dir = b.TempDir()
	if o.out != "" {
		dir = filepath.Join(o.out, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	p = freePorts(b)
	cfgPath := filepath.Join(dir, "config.yaml")
	// The data stays out of TRACESIFT_BENCH_OUT: only logs and metrics are kept.
	if err := os.WriteFile(cfgPath, []byte(sys.config(b.TempDir(), p)), 0o644); err != nil {
		b.Fatal(err)
	}
	srv, err := StartServer(sys.name, sys.bin, filepath.Join(dir, "server.log"), serverEnv(), "--config", cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Kill)
	if err := srv.WaitReady(2*time.Minute, func() bool { return sys.ready(p) }); err != nil {
		b.Fatal(err)
	}
	return srv, p, dir
}

// BenchmarkCollectorVsReference is issue 3's comparison: one iteration runs
// the OpenTelemetry Collector with contrib's tail_sampling (reference) and
// then tracesift's collector under the same OTLP/gRPC load, and reports for
// each accepted spans/s, spans per server CPU-second and peak RSS, their
// ratios (tracesift / reference), and tracesift's recall of error and slow
// traces. Run it with -benchtime 1x; -count N and benchstat give medians.
func BenchmarkCollectorVsReference(b *testing.B) {
	o := optionsFromEnv(b)
	systems := map[string]system{}
	for _, name := range o.systems {
		bin := buildBinary(b, name)
		if name == "tracesift" {
			systems[name] = tracesiftSystem(bin, o.tsSamplerExtra)
		} else {
			systems[name] = referenceSystem(bin, o.refShards)
		}
	}
	o.tsVersion = binaries.version
	b.ReportAllocs()
	b.ResetTimer()

	for b.Loop() {
		// A new seed per iteration (also across -count), the same for both
		// systems within one: they get identical load.
		history.Lock()
		seed := uint64(len(history.runs) + 1)
		history.Unlock()
		results := map[string]*result{}
		var order []*result
		for _, name := range o.systems {
			r := run(b, systems[name], o, seed)
			results[name] = r
			order = append(order, r)
		}
		// The summary goes through b.Log, which go test prints after the
		// result line (printed directly it could split that line, and
		// benchstat would miss it) but cuts after 10 lines: the details are
		// printed by TestMain at the end.
		b.Log(table(o, order, false))
		report(b, results)
		history.Lock()
		history.runs = append(history.runs, results)
		history.reports = append(history.reports, table(o, order, true))
		history.out = o.out
		history.Unlock()
	}
}

func report(b *testing.B, rs map[string]*result) {
	short := map[string]string{"tracesift": "ts", "reference": "ref"}
	for name, r := range rs {
		p := short[name]
		b.ReportMetric(r.spansPerSec(), p+"-spans/s")
		b.ReportMetric(r.spansPerCPU(), p+"-spans/cpu-s")
		// Not "MB": benchstat would read that as a byte unit and rescale it.
		b.ReportMetric(float64(r.peakRSS)/(1<<20), p+"-MiB-peak-RSS")
		b.ReportMetric(float64(r.counts.RejectedTotal()), p+"-rejected-reqs")
		if r.recall != nil {
			b.ReportMetric(r.recall.percent(Error, Slow), p+"-recall-%")
		}
	}
	ts, ref := rs["tracesift"], rs["reference"]
	if ts == nil || ref == nil {
		return
	}
	if v := ref.spansPerSec(); v > 0 {
		b.ReportMetric(ts.spansPerSec()/v, "ratio-spans/s")
	}
	if v := ref.spansPerCPU(); v > 0 {
		b.ReportMetric(ts.spansPerCPU()/v, "ratio-spans/cpu-s")
	}
	if ref.peakRSS > 0 {
		b.ReportMetric(float64(ts.peakRSS)/float64(ref.peakRSS), "ratio-peak-RSS")
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func table(o benchOptions, rs []*result, details bool) string {
	var sb strings.Builder
	offered := "as fast as each server answers"
	if o.rate > 0 {
		offered = fmt.Sprintf("offered at %.0f spans/s", o.rate)
	}
	fmt.Fprintf(&sb, "\n=== tracesift vs OpenTelemetry Collector tail_sampling (contrib v0.161.0): %s measured after %s warm-up, %d gRPC connections, 500-span requests, %s\n",
		o.duration, o.warmup, o.conns, offered)
	fmt.Fprintf(&sb, "reference: num_shards %d, num_traces %d, decision_wait %s; tracesift %s: decision_wait %s, baseline_ratio 0.01%s\n",
		o.refShards, refNumTraces, decisionWait, o.tsVersion, decisionWait, strings.ReplaceAll(indent(o.tsSamplerExtra, ", "), "\n", ""))
	fmt.Fprintf(&sb, "%-10s %10s %12s %11s %9s %9s %9s %9s %9s %9s\n",
		"system", "spans/s", "spans/CPU-s", "server CPU", "peak RSS", "RSS idle", "RSS end", "load-gen", "others", "rejected")
	for _, r := range rs {
		fmt.Fprintf(&sb, "%-10s %10.0f %12.0f %10.1fs %7.0fMB %7.0fMB %7.0fMB %8.1fs %8.1fs %9d\n",
			r.name, r.spansPerSec(), r.spansPerCPU(), r.serverCPU.Seconds(), mb(r.peakRSS), mb(r.rssIdle),
			mb(r.rssWindowTo), r.loadgenCPU.Seconds(), r.otherCPU.Seconds(), r.counts.RejectedTotal())
	}
	var ts, ref *result
	for _, r := range rs {
		switch r.name {
		case "tracesift":
			ts = r
		case "reference":
			ref = r
		}
	}
	if ts != nil && ref != nil && ref.spansPerSec() > 0 && ref.spansPerCPU() > 0 && ref.peakRSS > 0 {
		fmt.Fprintf(&sb, "%-10s %9.2fx %11.2fx %11s %8.2fx\n", "ratio", ts.spansPerSec()/ref.spansPerSec(),
			ts.spansPerCPU()/ref.spansPerCPU(), "", float64(ts.peakRSS)/float64(ref.peakRSS))
	}
	if !details {
		return sb.String()
	}
	fmt.Fprintf(&sb, "(CPU columns are CPU-seconds in the window: the server, this load generator, all other processes of the machine)\n")
	for _, r := range rs {
		fmt.Fprintf(&sb, "-- %s: %d requests OK in the window; rejected over the run: %s; partial-success rejected spans: %d; traces kept/decided: %.0f/%.0f; peak RSS at stop: %.0fMB\n",
			r.name, r.counts.Requests, r.rejectedAll.RejectedString(), r.rejectedAll.SpansPartiallyRejected,
			r.kept, r.decided, mb(r.peakRSSFinal))
		if r.firstErr != nil {
			fmt.Fprintf(&sb, "   first rejection: %s\n", truncate(r.firstErr.Error(), 300))
		}
		if r.recall != nil {
			rc := r.recall
			fmt.Fprintf(&sb, "   recall (stored with all 10 spans): error %.1f%% (%d/%d), slow %.1f%% (%d/%d); partial %d, missing %d; checked within %s\n",
				rc.percent(Error), rc.byClass[Error][0], rc.byClass[Error][1],
				rc.percent(Slow), rc.byClass[Slow][0], rc.byClass[Slow][1], rc.partial, rc.missing, rc.waited.Round(time.Second))
		}
		if len(r.notes) > 0 {
			fmt.Fprintf(&sb, "   metrics: %s\n", strings.Join(r.notes, ", "))
		}
		if r.stop != nil {
			fmt.Fprintf(&sb, "   stop: %v\n", r.stop)
		}
		if r.nLogs > 0 {
			fmt.Fprintf(&sb, "   %d warn/error log lines, first ones:\n", r.nLogs)
			for _, l := range r.logs {
				fmt.Fprintf(&sb, "     %s\n", l)
			}
		}
	}
	return sb.String()
}

// history keeps every iteration's results so that TestMain can print the
// medians of a -count N run, as benchstat would, in one table.
var history struct {
	sync.Mutex
	runs    []map[string]*result
	reports []string
	out     string
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printMedians() {
	history.Lock()
	defer history.Unlock()
	var sb strings.Builder
	for _, r := range history.reports {
		sb.WriteString(r)
	}
	if len(history.runs) >= 2 {
		medians(&sb)
	}
	fmt.Print(sb.String())
	if history.out != "" && sb.Len() > 0 {
		_ = os.WriteFile(filepath.Join(history.out, "report.txt"), []byte(sb.String()), 0o644)
	}
}

func medians(sb *strings.Builder) {
	sys := func(name string, f func(*result) float64) func(map[string]*result) (float64, bool) {
		return func(rs map[string]*result) (float64, bool) {
			r, ok := rs[name]
			if !ok {
				return 0, false
			}
			return f(r), true
		}
	}
	ratio := func(f func(*result) float64) func(map[string]*result) (float64, bool) {
		return func(rs map[string]*result) (float64, bool) {
			ts, ok1 := rs["tracesift"]
			ref, ok2 := rs["reference"]
			if !ok1 || !ok2 || f(ref) == 0 {
				return 0, false
			}
			return f(ts) / f(ref), true
		}
	}
	spansPerSec := func(r *result) float64 { return r.spansPerSec() }
	spansPerCPU := func(r *result) float64 { return r.spansPerCPU() }
	peak := func(r *result) float64 { return mb(r.peakRSS) }
	rows := []struct {
		label string
		cols  [3]func(map[string]*result) (float64, bool)
		unit  string
	}{
		{"accepted spans/s", [3]func(map[string]*result) (float64, bool){sys("reference", spansPerSec), sys("tracesift", spansPerSec), ratio(spansPerSec)}, "%.0f"},
		{"spans per server CPU-s", [3]func(map[string]*result) (float64, bool){sys("reference", spansPerCPU), sys("tracesift", spansPerCPU), ratio(spansPerCPU)}, "%.0f"},
		{"peak RSS (MiB)", [3]func(map[string]*result) (float64, bool){sys("reference", peak), sys("tracesift", peak), ratio(peak)}, "%.0f"},
	}
	fmt.Fprintf(sb, "\n=== medians of %d runs (min..max)\n%-24s %26s %26s %26s\n", len(history.runs),
		"", "reference", "tracesift", "tracesift / reference")
	for _, row := range rows {
		fmt.Fprintf(sb, "%-24s", row.label)
		for i, get := range row.cols {
			var v []float64
			for _, rs := range history.runs {
				if x, ok := get(rs); ok {
					v = append(v, x)
				}
			}
			if len(v) == 0 {
				fmt.Fprintf(sb, " %26s", "-")
				continue
			}
			format := row.unit
			if i == 2 {
				format = "%.2f"
			}
			cell := fmt.Sprintf(format+" ("+format+".."+format+")", median(v), slices.Min(v), slices.Max(v))
			fmt.Fprintf(sb, " %26s", cell)
		}
		sb.WriteString("\n")
	}
	var recall []float64
	for _, rs := range history.runs {
		if r, ok := rs["tracesift"]; ok && r.recall != nil {
			recall = append(recall, r.recall.percent(Error, Slow))
		}
	}
	if len(recall) > 0 {
		fmt.Fprintf(sb, "%-24s %26s %26s\n", "recall error+slow (%)", "-",
			fmt.Sprintf("%.1f (%.1f..%.1f)", median(recall), slices.Min(recall), slices.Max(recall)))
	}
}

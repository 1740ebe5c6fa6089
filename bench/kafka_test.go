package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/tracesift/tracesift/internal/kafka/broker"
)

// The distributed comparison (make bench-kafka): tracesift's three roles
// (gateway, two samplers, ingester, deploy/kafka) against the OpenTelemetry
// Collector's own Kafka path (contrib kafka exporter partitioning traces by
// trace id → two kafka receivers in one group → tail_sampling → otlphttp to
// a sink in this process), each on a broker of its own, under the same
// offered load. Measured: spans/s taken, the roles' CPU (the broker's
// apart), spans per CPU-second, and then, with one consumer killed
// (SIGKILL) mid-stream, the recall of error traces.

const (
	kafkaPartitions  = 8
	kafkaRecallPhase = 20 * time.Second
)

type kafkaOptions struct {
	rate             float64
	duration, warmup time.Duration
	conns            int
	systems          []string
}

func kafkaOptionsFromEnv(b *testing.B) kafkaOptions {
	o := kafkaOptions{rate: 30000, duration: 30 * time.Second, warmup: 15 * time.Second, conns: 4,
		systems: []string{"reference", "tracesift"}}
	if v := os.Getenv("TRACESIFT_BENCH_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			b.Fatalf("TRACESIFT_BENCH_RATE=%q: want spans per second", v)
		}
		o.rate = r
	}
	if v := os.Getenv("TRACESIFT_BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("TRACESIFT_BENCH_DURATION=%q: want a duration", v)
		}
		o.duration = d
	}
	if v := os.Getenv("TRACESIFT_BENCH_SYSTEMS"); v != "" {
		o.systems = strings.Split(v, ",")
	}
	return o
}

// kafkaResult is what one path did.
type kafkaResult struct {
	name                string
	window              time.Duration
	spans               int64 // accepted in the window
	rolesCPU, brokerCPU time.Duration
	rejected            string
	perRole             []string // each role's CPU in the window
	errorsSent          int      // error traces sent, recall phase included
	errorsWhole         int      // of them, stored or delivered with every span
	errorsPartial       int      // of them, stored or delivered with some spans
}

func (r *kafkaResult) spansPerCPU() float64 { return float64(r.spans) / r.rolesCPU.Seconds() }
func (r *kafkaResult) recall() float64 {
	if r.errorsSent == 0 {
		return 0
	}
	return 100 * float64(r.errorsWhole) / float64(r.errorsSent)
}

// kafkaPath is one system's processes on its broker.
type kafkaPath struct {
	roles    []*Server // every process of the path; consumers[0] is killed for the recall
	consumer *Server
	otlp     string // where the load goes
	// whole reports how many of ids arrived with every span, and with some.
	whole func(ids []pcommon.TraceID) (whole, partial int)
	// drain is how long to wait after the load for the last decisions.
	drain time.Duration
	// pprof is each role's profiling endpoint (TRACESIFT_BENCH_PROFILE).
	pprof map[string]string
}

func BenchmarkKafkaVsReference(b *testing.B) {
	o := kafkaOptionsFromEnv(b)
	results := map[string][]*kafkaResult{}
	for b.Loop() {
		for _, sys := range o.systems {
			results[sys] = append(results[sys], runKafka(b, sys, o))
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-10s %12s %10s %10s %14s %12s %s\n", "system", "spans/s", "roles CPU", "broker CPU", "spans/CPU-s",
		"error recall", "errors partial, sent; rejected calls (CPU by role)")
	for _, sys := range o.systems {
		for _, r := range results[sys] {
			fmt.Fprintf(&sb, "%-10s %12.0f %9.1fs %9.1fs %14.0f %11.1f%% %d, %d; %s (%s)\n", r.name, float64(r.spans)/r.window.Seconds(),
				r.rolesCPU.Seconds(), r.brokerCPU.Seconds(), r.spansPerCPU(), r.recall(), r.errorsPartial, r.errorsSent, r.rejected,
				strings.Join(r.perRole, ", "))
		}
	}
	if len(results["tracesift"]) > 0 && len(results["reference"]) > 0 {
		var ratios []float64
		for i := range min(len(results["tracesift"]), len(results["reference"])) {
			ratios = append(ratios, results["tracesift"][i].spansPerCPU()/results["reference"][i].spansPerCPU())
		}
		fmt.Fprintf(&sb, "tracesift / reference, spans per CPU-second, each run: %s; median %.2f×\n", fmtRatios(ratios), median(ratios))
		b.ReportMetric(median(ratios), "x-spans-per-cpu")
	}
	// Printed whole: a benchmark's log is cut after a few lines.
	fmt.Println(sb.String())
}

func fmtRatios(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.2f×", x)
	}
	return strings.Join(parts, " ")
}

func runKafka(b *testing.B, sys string, o kafkaOptions) *kafkaResult {
	dir := b.TempDir()
	if out := os.Getenv("TRACESIFT_BENCH_OUT"); out != "" { // keep the logs and configs
		dir = filepath.Join(out, fmt.Sprintf("kafka-%s-%d", sys, time.Now().Unix()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	brk, err := broker.Start(context.Background(), filepath.Join(dir, "kafka"), "")
	if err != nil {
		b.Fatal(err)
	}
	defer brk.Stop()
	var path *kafkaPath
	if sys == "tracesift" {
		path = startTracesiftPath(b, brk.Addr, dir)
	} else {
		path = startReferencePath(b, brk.Addr, dir)
	}
	defer func() {
		for _, s := range path.roles {
			s.Kill()
		}
	}()
	load, err := StartLoad(LoadConfig{Endpoint: path.otlp, Conns: o.conns, Seed: 7, RequestTimeout: 10 * time.Second,
		RejectBackoff: 100 * time.Millisecond, Rate: o.rate})
	if err != nil {
		b.Fatal(err)
	}
	defer load.Stop(10 * time.Second)
	time.Sleep(o.warmup) // the load runs: warming up
	cpu := func() (each []time.Duration, brokerCPU time.Duration) {
		for _, s := range path.roles {
			c, _ := ProcCPU(s.PID())
			each = append(each, c)
		}
		brokerCPU, _ = brokerProcCPU(brk)
		return
	}
	c0, before := load.Counts(), time.Now()
	r0, k0 := cpu()
	profiled := profileRoles(path.pprof, dir, o.duration)
	time.Sleep(o.duration) // the measured window
	profiled.Wait()
	c1, window := load.Counts(), time.Since(before)
	r1, k1 := cpu()
	res := &kafkaResult{name: sys, window: window, spans: c1.SpansAccepted - c0.SpansAccepted,
		brokerCPU: k1 - k0, rejected: c1.RejectedString()}
	for i, s := range path.roles {
		res.rolesCPU += r1[i] - r0[i]
		res.perRole = append(res.perRole, fmt.Sprintf("%s %.1fs", s.Name, (r1[i]-r0[i]).Seconds()))
	}

	// Recall: one consumer killed mid-stream, the load going on.
	path.consumer.Kill()
	time.Sleep(kafkaRecallPhase)
	load.Stop(10 * time.Second)
	var errs []pcommon.TraceID
	for _, st := range load.Interesting() {
		if st.Class == Error {
			errs = append(errs, st.ID)
		}
	}
	res.errorsSent = len(errs)
	deadline := time.Now().Add(path.drain + time.Minute)
	for {
		res.errorsWhole, res.errorsPartial = path.whole(errs)
		if res.errorsWhole == len(errs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second) // polling the outcome
	}
	for _, s := range path.roles {
		_ = s.Stop(30 * time.Second)
	}
	return res
}

// profileRoles saves a CPU profile of each role over d into dir
// (TRACESIFT_BENCH_PROFILE=1 with TRACESIFT_BENCH_OUT): where a role's CPU
// goes, measured under the benchmark's own load.
func profileRoles(endpoints map[string]string, dir string, d time.Duration) *sync.WaitGroup {
	var wg sync.WaitGroup
	for name, addr := range endpoints {
		wg.Go(func() {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Seconds())-1)
			resp, err := http.Get(url)
			if err != nil {
				fmt.Fprintf(os.Stderr, "profiling %s: %v\n", name, err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(filepath.Join(dir, name+".pprof"))
			if err == nil {
				_, err = io.Copy(f, resp.Body)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "profiling %s: %v\n", name, err)
			}
		})
	}
	return &wg
}

// brokerProcCPU is the broker JVM's CPU time.
func brokerProcCPU(brk *broker.Broker) (time.Duration, error) { return ProcCPU(brk.PID()) }

func kafkaRoleEnv(brokerAddr string, extra ...string) []string {
	env := append(serverEnv(), "TRACESIFT_KAFKA_BROKERS="+brokerAddr,
		fmt.Sprintf("TRACESIFT_KAFKA_PARTITIONS=%d", kafkaPartitions),
		"TRACESIFT_DECISION_WAIT="+decisionWait.String(), "TRACESIFT_METRICS_HOST=127.0.0.1")
	return append(env, extra...)
}

func startRole(b *testing.B, name, bin, dir string, env []string, ready func() bool, args ...string) *Server {
	s, err := StartServer(name, bin, filepath.Join(dir, name+".log"), env, args...)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.WaitReady(2*time.Minute, ready); err != nil {
		s.Kill()
		b.Fatal(err)
	}
	return s
}

func freeAddr(b *testing.B) string {
	p, err := FreePort()
	if err != nil {
		b.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

func startTracesiftPath(b *testing.B, brokerAddr, dir string) *kafkaPath {
	bin := buildBinary(b, "tracesift")
	root, _ := filepath.Abs("..")
	cfg := func(role string) []string {
		return []string{"--config", filepath.Join(root, "deploy", "kafka", role+".yaml")}
	}
	p := &kafkaPath{drain: decisionWait + 15*time.Second, pprof: map[string]string{}}
	role := func(name, config string, extra ...string) *Server {
		health := freeAddr(b)
		port, _ := FreePort()
		env := kafkaRoleEnv(brokerAddr, append(extra, "TRACESIFT_HEALTH_ENDPOINT="+health,
			fmt.Sprintf("TRACESIFT_METRICS_PORT=%d", port), "TRACESIFT_DATA_DIR="+filepath.Join(dir, name))...)
		args := cfg(config)
		if os.Getenv("TRACESIFT_BENCH_PROFILE") != "" {
			p.pprof[name] = freeAddr(b)
			exts := "health_check,pprof"
			if config == "ingester" {
				exts = "tracesift_store,tracesift_query," + exts
			}
			args = append(args, "--set", "extensions.pprof.endpoint="+p.pprof[name],
				"--set", "service.extensions=["+exts+"]")
		}
		return startRole(b, name, bin, dir, env, func() bool { return HTTPOK("http://" + health + "/") }, args...)
	}
	query := freeAddr(b)
	otlp := freeAddr(b)
	p.otlp = otlp
	p.roles = append(p.roles, role("ingester", "ingester", "TRACESIFT_QUERY_ENDPOINT="+query))
	for i := range 2 {
		p.roles = append(p.roles, role(fmt.Sprintf("sampler-%d", i+1), "sampler"))
	}
	p.consumer = p.roles[1]
	p.roles = append(p.roles, role("gateway", "gateway", "TRACESIFT_OTLP_GRPC_ENDPOINT="+otlp,
		"TRACESIFT_OTLP_HTTP_ENDPOINT="+freeAddr(b), "TRACESIFT_LOKI_ENDPOINT="+freeAddr(b)))
	qp := ports{}
	qp.query, _ = strconv.Atoi(query[strings.LastIndex(query, ":")+1:])
	p.whole = func(ids []pcommon.TraceID) (whole, partial int) {
		for _, id := range ids {
			switch spans, _ := storedSpans(qp, id.String()); {
			case spans == SpansPerTrace:
				whole++
			case spans > 0:
				partial++
			}
		}
		return whole, partial
	}
	return p
}

func startReferencePath(b *testing.B, brokerAddr, dir string) *kafkaPath {
	bin := buildBinary(b, "reference-kafka")
	// The contrib exporter does not create topics on a broker that forbids it.
	tr := &kgo.Transport{}
	defer tr.CloseIdleConnections()
	client := &kgo.Client{Addr: kgo.TCP(brokerAddr), Timeout: 30 * time.Second, Transport: tr}
	resp, err := client.CreateTopics(context.Background(), &kgo.CreateTopicsRequest{Topics: []kgo.TopicConfig{
		{Topic: "otlp_spans", NumPartitions: kafkaPartitions, ReplicationFactor: 1}}})
	if err != nil || resp.Errors["otlp_spans"] != nil {
		b.Fatalf("creating the reference's topic: %v %v", err, resp)
	}
	sink := newTraceSink(b)
	// Each role's config serves its metrics on port; up once they answer.
	role := func(name string, port int, config string) *Server {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			b.Fatal(err)
		}
		return startRole(b, name, bin, dir, serverEnv(), func() bool {
			return HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		}, "--config", path)
	}
	p := &kafkaPath{otlp: freeAddr(b), drain: decisionWait + 15*time.Second, whole: sink.whole}
	for i := range 2 {
		port, _ := FreePort()
		p.roles = append(p.roles, role(fmt.Sprintf("consumer-%d", i+1), port, fmt.Sprintf(`receivers:
  kafka:
    brokers: [%s]
    traces: {topics: [otlp_spans], encoding: otlp_proto}
    group_id: reference-samplers
    initial_offset: earliest
processors:
  tail_sampling:
    decision_wait: %s
    num_traces: %d
    policies:
      - {name: errors, type: status_code, status_code: {status_codes: [ERROR]}}
      - {name: slow, type: latency, latency: {threshold_ms: 1000}}
      - {name: baseline, type: probabilistic, probabilistic: {sampling_percentage: 1}}
exporters:
  otlphttp:
    endpoint: %s
    compression: none
service:
  pipelines:
    traces: {receivers: [kafka], processors: [tail_sampling], exporters: [otlphttp]}
  telemetry:
    metrics: {readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}}]}
`, brokerAddr, decisionWait, refNumTraces, sink.url, port)))
	}
	p.consumer = p.roles[0]
	port, _ := FreePort()
	gw := role("producer", port, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc: {endpoint: %s, max_recv_msg_size_mib: 16}
exporters:
  kafka:
    brokers: [%s]
    traces: {topic: otlp_spans, encoding: otlp_proto}
    partition_traces_by_id: true
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [kafka]}
  telemetry:
    metrics: {readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}}]}
`, p.otlp, brokerAddr, port))
	if err := gw.WaitReady(time.Minute, func() bool { return TCPReady(p.otlp) }); err != nil {
		b.Fatal(err)
	}
	p.roles = append(p.roles, gw)
	return p
}

// traceSink is an OTLP/HTTP endpoint that remembers each trace's span ids.
type traceSink struct {
	url   string
	mu    sync.Mutex
	spans map[pcommon.TraceID]map[pcommon.SpanID]bool
}

func newTraceSink(b *testing.B) *traceSink {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := &traceSink{url: "http://" + l.Addr().String(), spans: map[pcommon.TraceID]map[pcommon.SpanID]bool{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if err == nil {
			err = req.UnmarshalProto(body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		rss := req.Traces().ResourceSpans()
		for i := range rss.Len() {
			sss := rss.At(i).ScopeSpans()
			for j := range sss.Len() {
				spans := sss.At(j).Spans()
				for k := range spans.Len() {
					sp := spans.At(k)
					if s.spans[sp.TraceID()] == nil {
						s.spans[sp.TraceID()] = map[pcommon.SpanID]bool{}
					}
					s.spans[sp.TraceID()][sp.SpanID()] = true
				}
			}
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := ptraceotlp.NewExportResponse().MarshalProto()
		_, _ = w.Write(out)
	})}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *traceSink) whole(ids []pcommon.TraceID) (whole, partial int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		switch n := len(s.spans[id]); {
		case n == SpansPerTrace:
			whole++
		case n > 0:
			partial++
		}
	}
	return whole, partial
}

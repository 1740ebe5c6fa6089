package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/kafka/broker"
)

// builtBinary is the built collector, whose processes a test runs.
type builtBinary struct {
	t         *testing.T
	bin, repo string
}

// buildBinary builds the collector into a temporary folder.
func buildBinary(t *testing.T) *builtBinary {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	b := &builtBinary{t: t, repo: filepath.Join(wd, "..", ".."), bin: filepath.Join(t.TempDir(), "tracesift")}
	out, err := exec.Command("go", "build", "-o", b.bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return b
}

// cluster is distributed mode on one machine, as make run-kafka starts it:
// a real Kafka broker and the roles as processes of the built binary, with
// the shipped configurations (deploy/kafka). Without a broker, gateway and
// query being the all-in-one's, its methods send to and read the all-in-one.
type cluster struct {
	*builtBinary
	broker     *broker.Broker
	brokerDir  string
	partitions int
	gateway    string // OTLP/HTTP endpoint
	query      string // the ingester's query API
	// samplerEnv is added to the samplers' environment.
	samplerEnv []string
	// logsAgain allows a log line stored twice: an ingester killed between
	// an insert and its commit inserts the batch again, differently made up.
	logsAgain bool
}

// proc is a process of the binary: a role, or the all-in-one.
type proc struct {
	b       *builtBinary
	name    string
	args    []string
	env     []string
	health  string
	metrics string // the self-metrics port
	cmd     *exec.Cmd
	exited  chan struct{}
	log     string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Kafka broker and the roles' processes")
	}
	if _, err := broker.Libs(); err != nil {
		t.Fatalf("%v (make test installs them)", err)
	}
	c := &cluster{builtBinary: buildBinary(t), partitions: 4, brokerDir: filepath.Join(t.TempDir(), "kafka")}
	var err error
	c.broker, err = broker.Start(context.Background(), c.brokerDir, "")
	require.NoError(t, err)
	t.Cleanup(func() { c.broker.Stop() })
	return c
}

// start runs role with its shipped configuration and waits until its
// health check answers.
func (c *cluster) start(role, name string, env ...string) *proc {
	c.t.Helper()
	p := c.newProc(name, []string{"--config", filepath.Join(c.repo, "deploy", "kafka", role+".yaml")}, append([]string{
		"TRACESIFT_KAFKA_BROKERS=" + c.broker.Addr,
		fmt.Sprintf("TRACESIFT_KAFKA_PARTITIONS=%d", c.partitions),
		"TRACESIFT_DECISION_WAIT=1s",
		"TRACESIFT_BASELINE_RATIO=0",
		"TRACESIFT_DATA_DIR=" + filepath.Join(c.t.TempDir(), "data"),
	}, env...)...)
	p.launch()
	return p
}

// newProc prepares process name of the binary: args, the test's environment
// with free health check and self-metrics ports, then env. The test's
// cleanup stops it, showing its log and goroutines first if the test failed.
func (b *builtBinary) newProc(name string, args []string, env ...string) *proc {
	t := b.t
	t.Helper()
	p := &proc{b: b, name: name, args: args, health: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		log: filepath.Join(t.TempDir(), name+".log"), metrics: fmt.Sprint(freePort(t))}
	p.env = append(os.Environ(),
		"TRACESIFT_HEALTH_ENDPOINT="+p.health,
		"TRACESIFT_METRICS_HOST=127.0.0.1",
		"TRACESIFT_METRICS_PORT="+p.metrics,
		"GOTRACEBACK=all") // see goroutines
	p.env = append(p.env, env...)
	t.Cleanup(func() {
		if !t.Failed() {
			p.stop()
			return
		}
		out, _ := os.ReadFile(p.log)
		t.Logf("--- %s's log: warnings, errors, panics ---\n%s\n--- its last lines ---\n%s\n"+
			"--- %s's goroutines in tracesift's code ---\n%s", name, notable(out, 60), tail(out, 40), name, p.goroutines())
		p.stop()
	})
	return p
}

// launch starts the process (again, after a kill: with the same data and
// ports) and waits until its health check answers.
func (p *proc) launch() {
	t := p.b.t
	t.Helper()
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	p.exited = make(chan struct{})
	p.cmd = exec.Command(p.b.bin, p.args...)
	p.cmd.Dir = p.b.repo // the engine is found in node_modules
	p.cmd.Env = p.env
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	exited := p.exited
	go func() { _ = p.cmd.Wait(); logf.Close(); close(exited) }()
	eventually(t, p.name+"'s health check", func() bool {
		select {
		case <-exited:
			out, _ := os.ReadFile(p.log)
			t.Fatalf("%s exited:\n%s", p.name, tail(out, 40))
		default:
		}
		return answersOK("http://" + p.health + "/")
	})
}

// stop ends the process with SIGTERM (its clean shutdown).
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// goroutines ends a running process with SIGQUIT, on which the Go runtime
// writes every goroutine's stack to the log, and returns the stacks that
// pass through tracesift's own code or the Kafka client: where a stalled
// role waits.
func (p *proc) goroutines() string {
	select {
	case <-p.exited:
		return "(exited before)"
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		return "(no dump within 10 s)"
	}
	out, _ := os.ReadFile(p.log)
	var keep []string
	for _, g := range strings.Split(string(out), "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && (strings.Contains(g, "tracesift/tracesift/internal/") ||
			strings.Contains(g, "segmentio/kafka-go")) {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

// kill ends it with SIGKILL, as a crash.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// answersOK says whether a GET of url answers 200.
func answersOK(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// notable is the first n lines of a log that warn, report an error or a
// panic, with the lines that follow a panic.
func notable(b []byte, n int) string {
	var keep []string
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines) && len(keep) < n; i++ {
		l := lines[i]
		switch {
		case strings.Contains(l, "panic"):
			keep = append(keep, lines[i:min(i+20, len(lines))]...)
			i += 19
		case strings.Contains(l, "\twarn\t"), strings.Contains(l, "\terror\t"):
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// startRoles starts the gateway, samplers samplers and the ingester.
func (c *cluster) startRoles(samplers int) (gateway *proc, sampler []*proc, ingester *proc) {
	c.gateway = fmt.Sprintf("127.0.0.1:%d", freePort(c.t))
	c.query = fmt.Sprintf("127.0.0.1:%d", freePort(c.t))
	ingester = c.start("ingester", "ingester", "TRACESIFT_QUERY_ENDPOINT="+c.query)
	for i := range samplers {
		sampler = append(sampler, c.start("sampler", fmt.Sprintf("sampler-%d", i+1), c.samplerEnv...))
	}
	gateway = c.start("gateway", "gateway",
		"TRACESIFT_OTLP_HTTP_ENDPOINT="+c.gateway,
		fmt.Sprintf("TRACESIFT_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", freePort(c.t)),
		fmt.Sprintf("TRACESIFT_LOKI_ENDPOINT=127.0.0.1:%d", freePort(c.t)))
	return gateway, sampler, ingester
}

// Kinds of the generated traces.
const (
	healthyTrace = iota
	errorTrace
	slowTrace
)

// genTrace is one generated trace: a root in service front (one request)
// and two children in service back (another request, sent first).
type genTrace struct {
	id   pcommon.TraceID
	kind int
}

func kindOf(i int) int {
	switch i % 10 {
	case 0:
		return errorTrace
	case 1:
		return slowTrace
	}
	return healthyTrace
}

// sendTraces sends traces first..first+n-1 over OTLP/HTTP, batch at a time
// (makeBatch), and returns them.
func (c *cluster) sendTraces(first, n, batch int) []genTrace {
	c.t.Helper()
	var out []genTrace
	for b := first; b < first+n; b += batch {
		gs, reqs := makeBatch(b, min(batch, first+n-b))
		for _, r := range reqs {
			require.NoError(c.t, c.send(r, nil))
		}
		out = append(out, gs...)
	}
	return out
}

// otlpRequest is one OTLP/HTTP request: its path and protobuf body.
type otlpRequest struct {
	path string
	body []byte
}

// makeBatch makes traces first..first+n-1 and their requests: the children
// first, then the roots, then an ERROR log line of each failing trace's
// failing child.
func makeBatch(first, n int) ([]genTrace, []otlpRequest) {
	var out []genTrace
	t0 := time.Now().Add(-time.Minute)
	roots, kids := ptrace.NewTraces(), ptrace.NewTraces()
	logs := plog.NewLogs()
	rootSpans := resourceSpans(roots, "front")
	kidSpans := resourceSpans(kids, "back")
	lr := logs.ResourceLogs().AppendEmpty()
	lr.Resource().Attributes().PutStr("service.name", "back")
	records := lr.ScopeLogs().AppendEmpty().LogRecords()
	for i := first; i < first+n; i++ {
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], 0xfeed)
		binary.BigEndian.PutUint64(tid[8:], uint64(i+1))
		g := genTrace{id: tid, kind: kindOf(i)}
		out = append(out, g)
		dur := 20 * time.Millisecond
		if g.kind == slowTrace {
			dur = 2 * time.Second
		}
		// The root is healthy whatever the trace: a trace split between
		// two decisions would lose it.
		span(rootSpans.AppendEmpty(), tid, 1, 0, "GET /order", t0, dur)
		for k := uint64(2); k <= 3; k++ {
			s := kidSpans.AppendEmpty()
			span(s, tid, k, 1, "SELECT order", t0.Add(time.Millisecond), dur/2)
			if g.kind == errorTrace && k == 3 {
				s.Status().SetCode(ptrace.StatusCodeError)
				l := records.AppendEmpty()
				l.SetTraceID(tid)
				l.SetSpanID(s.SpanID())
				l.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(2 * time.Millisecond)))
				l.SetSeverityText("ERROR")
				l.SetSeverityNumber(plog.SeverityNumberError)
				l.Body().SetStr("deadlock detected")
			}
		}
	}
	reqs := []otlpRequest{tracesRequest(kids), tracesRequest(roots)}
	if records.Len() > 0 {
		body, err := (&plog.ProtoMarshaler{}).MarshalLogs(logs)
		if err != nil {
			panic(err)
		}
		reqs = append(reqs, otlpRequest{"/v1/logs", body})
	}
	return out, reqs
}

func tracesRequest(td ptrace.Traces) otlpRequest {
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err)
	}
	return otlpRequest{"/v1/traces", body}
}

func resourceSpans(td ptrace.Traces, service string) ptrace.SpanSlice {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	rs.Resource().Attributes().PutStr("host.name", service+"-1")
	return rs.ScopeSpans().AppendEmpty().Spans()
}

func span(s ptrace.Span, tid pcommon.TraceID, id, parent uint64, name string, start time.Time, dur time.Duration) {
	s.SetTraceID(tid)
	var sid pcommon.SpanID
	binary.BigEndian.PutUint64(sid[:], id)
	s.SetSpanID(sid)
	if parent != 0 {
		var pid pcommon.SpanID
		binary.BigEndian.PutUint64(pid[:], parent)
		s.SetParentSpanID(pid)
	}
	s.SetName(name)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(dur)))
}

// send posts r to the gateway as an OTLP exporter does: while the gateway
// answers 503 or 429 (Kafka is not taking spans) or cannot be reached, it
// tries again, counting the refusals in pushedBack (when not nil), for up
// to two minutes; any other answer than 200 is an error.
func (c *cluster) send(r otlpRequest, pushedBack *atomic.Int64) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Post("http://"+c.gateway+r.path, "application/x-protobuf", bytes.NewReader(r.body))
		if err == nil {
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusOK:
				return nil
			case http.StatusServiceUnavailable, http.StatusTooManyRequests:
				if pushedBack != nil {
					pushedBack.Add(1)
				}
			default:
				return fmt.Errorf("%s: %s", r.path, resp.Status)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the gateway did not take the request in 2 minutes (%v)", r.path, err)
		}
		time.Sleep(100 * time.Millisecond) // an exporter's retry backoff
	}
}

// streamer sends batch after batch of traces, as a load, until finished.
type streamer struct {
	c          *cluster
	pushedBack atomic.Int64
	acked      atomic.Int64 // traces the gateway took
	stop, done chan struct{}
	traces     []genTrace // acknowledged by the gateway
	err        error
}

// stream starts sending traces from first on, batch traces every 50 ms.
func (c *cluster) stream(first, batch int) *streamer {
	s := &streamer{c: c, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(50 * time.Millisecond) // the load's pace
		defer tick.Stop()
		for next := first; ; next += batch {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			gs, reqs := makeBatch(next, batch)
			for _, r := range reqs {
				if s.err = c.send(r, &s.pushedBack); s.err != nil {
					return
				}
			}
			s.traces = append(s.traces, gs...)
			s.acked.Add(int64(len(gs)))
		}
	}()
	return s
}

// waitSent waits until the gateway has acknowledged n traces in all.
func (s *streamer) waitSent(n int) {
	eventually(s.c.t, fmt.Sprintf("%d traces sent", n), func() bool {
		select {
		case <-s.done:
			require.NoError(s.c.t, s.err)
		default:
		}
		return s.acked.Load() >= int64(n)
	})
}

// finish stops the load and returns every trace the gateway acknowledged.
func (s *streamer) finish() []genTrace {
	close(s.stop)
	<-s.done
	require.NoError(s.c.t, s.err)
	return s.traces
}

// stored reads a trace from the ingester's API: its span count and log
// count, code 404 when it is not stored.
func (c *cluster) stored(id pcommon.TraceID) (code, spans, logs int) {
	code, tr := getTrace(c.t, endpoints{query: c.query}, id.String())
	if code != http.StatusOK {
		return code, 0, 0
	}
	return code, len(tr.Spans), len(tr.Logs)
}

// checkKept waits until every error and slow trace of traces is stored
// whole (its three spans; an error trace with its log line), then checks
// that no healthy one is. It asks the ingester's API about the traces not
// seen whole yet in rounds, four at a time: one poller per trace (hundreds
// every 50 ms) kept the API so busy that its answers timed out.
func (c *cluster) checkKept(traces []genTrace) {
	t := c.t
	t.Helper()
	var pending []genTrace
	for _, g := range traces {
		if g.kind != healthyTrace {
			pending = append(pending, g)
		}
	}
	whole := func(g genTrace) bool {
		wantLogs := 0
		if g.kind == errorTrace {
			wantLogs = 1
		}
		code, tr, err := fetchTrace(endpoints{query: c.query}, g.id.String())
		if err != nil || code != http.StatusOK {
			return false // asked again next round
		}
		return len(tr.Spans) == 3 && (len(tr.Logs) == wantLogs || c.logsAgain && len(tr.Logs) >= wantLogs)
	}
	deadline := time.Now().Add(90 * time.Second)
	for len(pending) > 0 {
		var mu sync.Mutex
		var still []genTrace
		work := make(chan genTrace)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for g := range work {
					if !whole(g) {
						mu.Lock()
						still = append(still, g)
						mu.Unlock()
					}
				}
			})
		}
		for _, g := range pending {
			work <- g
		}
		close(work)
		wg.Wait()
		pending = still
		if len(pending) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%d error or slow traces not stored whole within 90 s, e.g. %s", len(pending), pending[0].id)
			}
			time.Sleep(200 * time.Millisecond) // polling the outcome
		}
	}
	for _, g := range traces {
		if g.kind == healthyTrace {
			code, _, _ := c.stored(g.id)
			require.Equal(t, http.StatusNotFound, code, "healthy trace %s is not kept", g.id)
		}
	}
}

// Test 1 of distributed mode: OTLP into the gateway, two samplers, the
// ingester; every error and slow trace is stored whole with its log line,
// no healthy one.
func TestKafkaEndToEnd(t *testing.T) {
	c := startCluster(t)
	gateway, samplers, _ := c.startRoles(2)
	// Bad input first: a span without ids at the gateway, a message that is
	// not OTLP in the spans topic. Each is counted and logged, and loses
	// nothing else.
	bad := ptrace.NewTraces()
	span(resourceSpans(bad, "front").AppendEmpty(), pcommon.TraceID{}, 1, 0, "no ids", time.Now(), time.Millisecond)
	require.NoError(t, c.send(tracesRequest(bad), nil))
	w := &kgo.Writer{Addr: kgo.TCP(c.broker.Addr), Topic: "tracesift-spans", RequiredAcks: kgo.RequireAll}
	require.NoError(t, w.WriteMessages(context.Background(), kgo.Message{Key: []byte("garbage"), Value: []byte{0xff, 0xff, 0xff}}))
	require.NoError(t, w.Close())

	traces := c.sendTraces(0, 200, 20)
	c.checkKept(traces)
	assert.Equal(t, 1.0, metric(t, endpoints{metrics: gateway.metrics}, "otelcol_tracesift_receiver_spans_invalid"))
	skipped := 0.0
	for _, s := range samplers {
		skipped += metric(t, endpoints{metrics: s.metrics}, "otelcol_tracesift_kafka_messages_skipped", `topic="tracesift-spans"`)
	}
	assert.Equal(t, 1.0, skipped, "the message that is not OTLP, by whichever sampler read it")
}

// sendLate sends a fourth span of each trace, a child of its root, in one
// request per batch traces: after their decision, so late.
func (c *cluster) sendLate(traces []genTrace, batch int) {
	t0 := time.Now().Add(-time.Minute)
	for b := 0; b < len(traces); b += batch {
		td := ptrace.NewTraces()
		spans := resourceSpans(td, "back")
		for _, g := range traces[b:min(b+batch, len(traces))] {
			span(spans.AppendEmpty(), g.id, 4, 1, "publish order", t0.Add(5*time.Millisecond), time.Millisecond)
		}
		require.NoError(c.t, c.send(tracesRequest(td), nil))
	}
}

// searchedSpans is what the ingester's search says of each trace of
// service front in the last hour: its span count.
func (c *cluster) searchedSpans() map[string]int {
	var body struct {
		Traces []struct {
			TraceID   string `json:"traceId"`
			SpanCount int    `json:"spanCount"`
		} `json:"traces"`
	}
	require.Equal(c.t, http.StatusOK, getJSON(c.t, endpoints{query: c.query}, "/api/v1/traces?service=front&limit=1000", &body))
	out := map[string]int{}
	for _, tr := range body.Traces {
		out[tr.TraceID] = tr.SpanCount
	}
	return out
}

// Test 2 of distributed mode: a sampler killed with SIGKILL while traces
// stream in. With the shipped configuration (decision_wait 10 s, session
// timeout 10 s) the other sampler takes its partitions over, and every error
// and slow trace sent before the kill is stored whole within 45 s of it;
// spans sent after the decisions follow them (kept traces get them, dropped
// ones do not); nothing is stored twice.
func TestKafkaSamplerKilled(t *testing.T) {
	c := startCluster(t)
	c.samplerEnv = []string{"TRACESIFT_DECISION_WAIT=10s"}
	_, samplers, _ := c.startRoles(2)
	traces := c.sendTraces(0, 100, 10)
	samplers[0].kill()
	killed := time.Now()
	traces = append(traces, c.sendTraces(100, 100, 10)...)

	// Every kept trace sent before the kill, whole, within 45 s of it.
	deadline := killed.Add(45 * time.Second)
	for _, g := range traces[:100] {
		if g.kind == healthyTrace {
			continue
		}
		for {
			code, spans, _ := c.stored(g.id)
			if code == http.StatusOK && spans == 3 {
				break
			}
			require.True(t, time.Now().Before(deadline), "trace %s (%d spans) not stored 45 s after the kill", g.id, spans)
			time.Sleep(100 * time.Millisecond) // polling the API, not synchronising
		}
	}
	t.Logf("every kept trace sent before the kill stored %v after it", time.Since(killed).Round(time.Second))
	c.checkKept(traces)

	// Late spans follow the decisions, whichever sampler took them.
	c.sendLate(traces, 20)
	for _, g := range traces {
		if g.kind == healthyTrace {
			continue
		}
		eventually(t, fmt.Sprintf("the late span of %s", g.id), func() bool {
			code, spans, _ := c.stored(g.id)
			return code == http.StatusOK && spans == 4
		})
	}
	counts := c.searchedSpans()
	for _, g := range traces {
		if g.kind == healthyTrace {
			code, _, _ := c.stored(g.id)
			require.Equal(t, http.StatusNotFound, code, "healthy trace %s, and its late span, dropped", g.id)
			continue
		}
		require.Equal(t, 4, counts[g.id.String()], "trace %s counted once in the search", g.id)
	}
}

// singleDecisions checks, in the decisions topic, that no trace was decided
// both ways: no trace was split between two decisions.
func (c *cluster) singleDecisions() {
	t := c.t
	t.Helper()
	kept := map[string]map[bool]bool{}
	for p := range c.partitions {
		r := kgo.NewReader(kgo.ReaderConfig{Brokers: []string{c.broker.Addr}, Topic: "tracesift-decisions", Partition: p})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		last, err := r.ReadLag(ctx)
		require.NoError(t, err)
		for n := int64(0); n < last; n++ {
			m, err := r.ReadMessage(ctx)
			require.NoError(t, err)
			id := fmt.Sprintf("%x", m.Key)
			if kept[id] == nil {
				kept[id] = map[bool]bool{}
			}
			kept[id][m.Value[0] == 1] = true
		}
		cancel()
		r.Close()
	}
	require.NotEmpty(t, kept)
	for id, ways := range kept {
		require.Len(t, ways, 1, "trace %s decided both ways", id)
	}
}

// Test 3 of distributed mode: samplers rescaled 2 → 3 → 1 while traces
// stream in (the two leaving with SIGTERM): every error and slow trace is
// stored whole, and no trace is decided both ways.
func TestKafkaRescale(t *testing.T) {
	c := startCluster(t)
	_, samplers, _ := c.startRoles(2)
	load := c.stream(0, 10)
	load.waitSent(200)
	samplers = append(samplers, c.start("sampler", "sampler-3", c.samplerEnv...))
	load.waitSent(400)
	samplers[0].stop()
	samplers[1].stop()
	load.waitSent(600)
	traces := load.finish()
	c.checkKept(traces)
	c.singleDecisions()
}

// Test 4 of distributed mode: the broker killed and restarted while traces
// stream in. The gateway pushes back meanwhile (503, which the sender
// retries), and every trace it acknowledged is decided: no error or slow
// trace is lost.
func TestKafkaBrokerRestart(t *testing.T) {
	c := startCluster(t)
	c.startRoles(2)
	load := c.stream(0, 10)
	load.waitSent(200)
	addr := c.broker.Addr
	c.broker.Kill()
	eventually(t, "the gateway to push back", func() bool { return load.pushedBack.Load() > 0 })
	var err error
	c.broker, err = broker.Start(context.Background(), c.brokerDir, addr)
	require.NoError(t, err)
	load.waitSent(int(load.acked.Load()) + 200)
	traces := load.finish()
	t.Logf("%d requests refused while the broker was down; %d traces acknowledged", load.pushedBack.Load(), len(traces))
	c.checkKept(traces)
}

// Test 5 of distributed mode: the ingester killed with SIGKILL while traces
// stream in, and started again on its data: nothing is lost.
func TestKafkaIngesterKilled(t *testing.T) {
	c := startCluster(t)
	c.logsAgain = true
	_, _, ingester := c.startRoles(2)
	load := c.stream(0, 10)
	load.waitSent(200)
	ingester.kill()
	load.waitSent(400)
	ingester.launch()
	traces := load.finish()
	c.checkKept(traces)
}

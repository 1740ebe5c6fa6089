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
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/kafka/broker"
)

// cluster is distributed mode on one machine, as make run-kafka starts it:
// a real Kafka broker and the roles as processes of the built binary, with
// the shipped configurations (deploy/kafka).
type cluster struct {
	t          *testing.T
	bin, repo  string
	broker     *broker.Broker
	partitions int
	gateway    string // OTLP/HTTP endpoint
	query      string // the ingester's query API
	// samplerEnv is added to the samplers' environment.
	samplerEnv []string
}

// proc is one role's process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Kafka broker and the roles' processes")
	}
	if _, err := broker.Libs(); err != nil {
		t.Fatalf("%v (make test installs them)", err)
	}
	wd, err := os.Getwd()
	require.NoError(t, err)
	c := &cluster{t: t, repo: filepath.Join(wd, "..", ".."), partitions: 4}
	c.bin = filepath.Join(t.TempDir(), "tracesift")
	out, err := exec.Command("go", "build", "-o", c.bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	c.broker, err = broker.Start(context.Background(), filepath.Join(t.TempDir(), "kafka"), "")
	require.NoError(t, err)
	t.Cleanup(c.broker.Stop)
	return c
}

// start runs role with its shipped configuration and waits until its
// health check answers.
func (c *cluster) start(role, name string, env ...string) *proc {
	t := c.t
	t.Helper()
	dir := t.TempDir()
	health := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := &proc{name: name, exited: make(chan struct{}), log: filepath.Join(dir, name+".log")}
	logf, err := os.Create(p.log)
	require.NoError(t, err)
	p.cmd = exec.Command(c.bin, "--config", filepath.Join(c.repo, "deploy", "kafka", role+".yaml"))
	p.cmd.Dir = c.repo // the engine is found in node_modules
	p.cmd.Env = append(os.Environ(),
		"TRACESIFT_KAFKA_BROKERS="+c.broker.Addr,
		fmt.Sprintf("TRACESIFT_KAFKA_PARTITIONS=%d", c.partitions),
		"TRACESIFT_DECISION_WAIT=1s",
		"TRACESIFT_BASELINE_RATIO=0",
		"TRACESIFT_HEALTH_ENDPOINT="+health,
		fmt.Sprintf("TRACESIFT_METRICS_PORT=%d", freePort(t)),
		"TRACESIFT_DATA_DIR="+filepath.Join(dir, "data"))
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			out, _ := os.ReadFile(p.log)
			t.Logf("--- %s's log ---\n%s", name, tail(out, 40))
		}
	})
	eventually(t, name+"'s health check", func() bool {
		select {
		case <-p.exited:
			out, _ := os.ReadFile(p.log)
			t.Fatalf("%s exited:\n%s", name, tail(out, 40))
		default:
		}
		return answersOK("http://" + health + "/")
	})
	return p
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

// sendTraces sends traces first..first+n-1 over OTLP/HTTP, batch at a time,
// each trace's children before its root, and an ERROR log line of each
// failing trace's child; it returns them.
func (c *cluster) sendTraces(first, n, batch int) []genTrace {
	t := c.t
	t.Helper()
	var out []genTrace
	t0 := time.Now().Add(-time.Minute)
	for b := first; b < first+n; b += batch {
		roots, kids := ptrace.NewTraces(), ptrace.NewTraces()
		logs := plog.NewLogs()
		rootSpans := resourceSpans(roots, "front")
		kidSpans := resourceSpans(kids, "back")
		lr := logs.ResourceLogs().AppendEmpty()
		lr.Resource().Attributes().PutStr("service.name", "back")
		records := lr.ScopeLogs().AppendEmpty().LogRecords()
		for i := b; i < min(b+batch, first+n); i++ {
			var tid pcommon.TraceID
			binary.BigEndian.PutUint64(tid[:8], 0xfeed)
			binary.BigEndian.PutUint64(tid[8:], uint64(i+1))
			g := genTrace{id: tid, kind: kindOf(i)}
			out = append(out, g)
			dur := 20 * time.Millisecond
			if g.kind == slowTrace {
				dur = 2 * time.Second
			}
			root := rootSpans.AppendEmpty()
			span(root, tid, 1, 0, "GET /order", t0, dur)
			if g.kind == errorTrace {
				root.Status().SetCode(ptrace.StatusCodeError)
			}
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
		c.post("/v1/traces", kids)
		c.post("/v1/traces", roots)
		if records.Len() > 0 {
			c.post("/v1/logs", logs)
		}
	}
	return out
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

// post sends td or ld over OTLP/HTTP, retrying as an exporter does while the
// gateway answers 503 (Kafka not there), and fails the test on anything
// else.
func (c *cluster) post(path string, v any) {
	t := c.t
	t.Helper()
	var body []byte
	var err error
	switch v := v.(type) {
	case ptrace.Traces:
		body, err = (&ptrace.ProtoMarshaler{}).MarshalTraces(v)
	case plog.Logs:
		body, err = (&plog.ProtoMarshaler{}).MarshalLogs(v)
	}
	require.NoError(t, err)
	eventually(t, "the gateway to take "+path, func() bool {
		resp, err := http.Post("http://"+c.gateway+path, "application/x-protobuf", bytes.NewReader(body))
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
			return false
		}
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return true
	})
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
// that no healthy one is.
func (c *cluster) checkKept(traces []genTrace) {
	t := c.t
	t.Helper()
	var wg sync.WaitGroup
	for _, g := range traces {
		if g.kind == healthyTrace {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wantLogs := 0
			if g.kind == errorTrace {
				wantLogs = 1
			}
			eventually(t, fmt.Sprintf("trace %s stored whole", g.id), func() bool {
				code, spans, logs := c.stored(g.id)
				return code == http.StatusOK && spans == 3 && logs == wantLogs
			})
		}()
	}
	wg.Wait()
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
	c.startRoles(2)
	traces := c.sendTraces(0, 200, 20)
	c.checkKept(traces)
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
		c.post("/v1/traces", td)
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

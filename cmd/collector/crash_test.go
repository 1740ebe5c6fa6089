package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/tracesift/tracesift/internal/query"
)

// The all-in-one killed with SIGKILL and started again on its data
// directory (README, "Failure modes"): every trace, log line and finding the
// API showed before the kill shows after it, the same. What was acknowledged
// but not yet stored is lost, so a kill right after traffic only has to
// leave a store that starts, still shows what it showed, and goes on storing.
func TestAllInOneKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it")
	}
	b := buildBinary(t)
	ep := endpoints{
		grpc:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		http:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		query: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		loki:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
	}
	// The default configuration, as make run starts it; decision_wait 1 s
	// and no baseline only make the test quicker and what is kept exact.
	p := b.newProc("all-in-one", nil,
		"TRACESIFT_DATA_DIR="+filepath.Join(t.TempDir(), "data"),
		"TRACESIFT_QUERY_ENDPOINT="+ep.query,
		"TRACESIFT_OTLP_GRPC_ENDPOINT="+ep.grpc,
		"TRACESIFT_OTLP_HTTP_ENDPOINT="+ep.http,
		"TRACESIFT_LOKI_ENDPOINT="+ep.loki,
		"TRACESIFT_DECISION_WAIT=1s",
		"TRACESIFT_BASELINE_RATIO=0")
	p.launch()
	ep.metrics, ep.health = p.metrics, p.health
	c := &cluster{builtBinary: b, gateway: ep.http, query: ep.query}
	services := []string{"back", "crash-sdk", "crash-loki"}

	// 4 error traces with a log line each, 4 slow and 32 healthy ones over
	// OTLP/HTTP; an error trace and log lines over OTLP/gRPC from the SDK;
	// log lines without a trace over the Loki push API.
	traces := c.sendTraces(0, 40, 10)
	sdkTrace := sendSDKTraffic(t, ep)
	pushLoki(t, ep, "crash-loki", "before the first kill", 5)
	c.checkKept(traces)
	eventually(t, "the SDK's trace and log lines, the Loki lines", func() bool {
		code, tr, err := fetchTrace(ep, sdkTrace)
		return err == nil && code == http.StatusOK && len(tr.Spans) == 2 && len(tr.Logs) == 1 &&
			len(searchLogs(t, ep, "crash-sdk")) == 3 && len(searchLogs(t, ep, "crash-loki")) == 5
	})
	// Nothing left in the exporters' queues: every batch written whole,
	// findings included (they are inserted after their batch's spans).
	eventually(t, "the exporters' queues to be empty", func() bool {
		return metric(t, ep, "otelcol_exporter_queue_size") == 0
	})
	ids := append(idsOf(traces), sdkTrace)
	before := c.snapshot(ids, services)
	require.Len(t, before.traces, 9, "4 error, 4 slow, the SDK's")
	require.NotEmpty(t, before.findings, "the error traces have findings")

	p.kill()
	p.launch()
	require.Equal(t, before, c.snapshot(ids, services), "what the API showed before the kill, after it")

	// Traffic stored, then more acknowledged right before the second kill:
	// in the sampler's buffer or the exporters' queues, that may be lost.
	stored := c.sendTraces(100, 40, 10)
	c.checkKept(stored)
	inFlight := c.sendTraces(140, 60, 10)
	pushLoki(t, ep, "crash-loki", "before the second kill", 5)
	moreIDs := idsOf(append(stored, inFlight...))
	mid := c.snapshot(moreIDs, services)
	p.kill()
	p.launch()
	after := c.snapshot(ids, services)
	assert.Equal(t, before.traces, after.traces, "the traces stored before the first kill")
	requireStill(t, before, after)
	midAfter := c.snapshot(moreIDs, services)
	requireStill(t, mid, midAfter)
	sent, before2, after2 := 0, 0, 0
	for _, g := range inFlight {
		if g.kind != healthyTrace {
			sent++
			before2 += mid.spans(g.id.String())
			after2 += midAfter.spans(g.id.String())
		}
	}
	t.Logf("%d error and slow traces (%d spans) acknowledged right before the second kill: %d of their spans visible before it, %d after it",
		sent, 3*sent, before2, after2)

	// It goes on storing, and did not panic on the way.
	c.checkKept(c.sendTraces(200, 40, 10))
	out, err := os.ReadFile(p.log)
	require.NoError(t, err)
	assert.NotContains(t, string(out), "panic:")
}

func idsOf(traces []genTrace) []string {
	var ids []string
	for _, g := range traces {
		ids = append(ids, g.id.String())
	}
	return ids
}

// sendSDKTraffic sends with the OpenTelemetry SDK over OTLP/gRPC, as service
// crash-sdk, an error trace of two spans and three log lines, one of them in
// the trace; it returns the trace's id.
func sendSDKTraffic(t *testing.T, ep endpoints) string {
	ctx := context.Background()
	texp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(ep.grpc), otlptracegrpc.WithInsecure())
	require.NoError(t, err)
	tracer := tracerProvider(t, texp, "crash-sdk").Tracer("crash")
	lexp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(ep.grpc), otlploggrpc.WithInsecure())
	require.NoError(t, err)
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(lexp)),
		sdklog.WithResource(resource.NewSchemaless(semconv.ServiceName("crash-sdk"))))
	defer lp.Shutdown(ctx)
	emit := func(ctx context.Context, body string) {
		var r otellog.Record
		r.SetTimestamp(time.Now())
		r.SetBody(attribute.StringValue(body))
		r.SetSeverity(otellog.SeverityInfo)
		lp.Logger("crash").Emit(ctx, r)
	}

	rootCtx, root := tracer.Start(ctx, "POST /pay", trace.WithSpanKind(trace.SpanKindServer))
	childCtx, child := tracer.Start(rootCtx, "charge card", trace.WithSpanKind(trace.SpanKindClient))
	emit(childCtx, "card declined")
	child.SetStatus(codes.Error, "declined")
	child.End()
	root.SetStatus(codes.Error, "payment failed")
	root.End()
	emit(ctx, "nightly report sent")
	emit(ctx, "cache warmed")
	return root.SpanContext().TraceID().String()
}

// pushLoki pushes n lines of service without a trace id over the Loki push
// API.
func pushLoki(t *testing.T, ep endpoints, service, text string, n int) {
	t.Helper()
	now := time.Now()
	var values []string
	for i := range n {
		values = append(values, fmt.Sprintf(`[%q,%q]`, fmt.Sprint(now.Add(time.Duration(i)*time.Millisecond).UnixNano()),
			fmt.Sprintf("%s, line %d", text, i)))
	}
	push := fmt.Sprintf(`{"streams":[{"stream":{"service_name":%q},"values":[%s]}]}`, service, strings.Join(values, ","))
	resp, err := http.Post("http://"+ep.loki+"/loki/api/v1/push", "application/json", strings.NewReader(push))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// searchLogs is the log search's answer for service (the last hour), in a
// stable order.
func searchLogs(t *testing.T, ep endpoints, service string) []query.LogMatch {
	t.Helper()
	var body struct{ Logs []query.LogMatch }
	require.Equal(t, http.StatusOK, getJSON(t, ep, "/api/v1/logs?limit=1000&service="+url.QueryEscape(service), &body))
	slices.SortFunc(body.Logs, func(a, b query.LogMatch) int { return compareLogs(a.Log, b.Log) })
	return body.Logs
}

func compareLogs(a, b query.Log) int {
	return cmp.Or(cmp.Compare(a.TimeUnixNano, b.TimeUnixNano), cmp.Compare(a.ObservedTimeUnixNano, b.ObservedTimeUnixNano),
		strings.Compare(a.Body, b.Body))
}

// snapshot is what the query API shows: the stored ones of some traces, the
// search of service front's traces (span count by trace id), the log search
// of some services, the findings across traces. Lists whose order the API
// leaves open on ties are sorted.
type snapshot struct {
	traces   map[string]*query.Trace
	searched map[string]int
	logs     map[string][]query.LogMatch
	findings []query.FindingSummary
}

// spans is the span count of trace id, 0 when not stored.
func (s snapshot) spans(id string) int {
	if tr := s.traces[id]; tr != nil {
		return len(tr.Spans)
	}
	return 0
}

func (c *cluster) snapshot(ids, services []string) snapshot {
	t := c.t
	t.Helper()
	ep := endpoints{query: c.query}
	s := snapshot{traces: map[string]*query.Trace{}, searched: c.searchedSpans(), logs: map[string][]query.LogMatch{}}
	for _, id := range ids {
		code, tr := getTrace(t, ep, id)
		if code == http.StatusNotFound {
			continue
		}
		require.Equal(t, http.StatusOK, code, "trace %s", id)
		slices.SortFunc(tr.Logs, compareLogs)
		slices.SortFunc(tr.Findings, func(a, b query.Finding) int {
			return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Subject, b.Subject), strings.Compare(a.Summary, b.Summary))
		})
		s.traces[id] = tr
	}
	for _, svc := range services {
		s.logs[svc] = searchLogs(t, ep, svc)
	}
	var f struct{ Findings []query.FindingSummary }
	require.Equal(t, http.StatusOK, getJSON(t, ep, "/api/v1/findings?limit=1000", &f))
	s.findings = f.Findings
	return s
}

// requireStill checks that what before shows is in after, the same: each
// trace's spans, logs and findings, each searched trace with at least its
// span count, each log line, each finding counted at least as often. after
// may show more: what was stored since.
func requireStill(t *testing.T, before, after snapshot) {
	t.Helper()
	for id, tr := range before.traces {
		got := after.traces[id]
		require.NotNil(t, got, "trace %s is lost", id)
		assert.Subset(t, got.Spans, tr.Spans, "trace %s's spans", id)
		assert.Subset(t, got.Logs, tr.Logs, "trace %s's logs", id)
		assert.Subset(t, got.Findings, tr.Findings, "trace %s's findings", id)
	}
	for id, n := range before.searched {
		assert.GreaterOrEqual(t, after.searched[id], n, "trace %s in the search", id)
	}
	for svc, lines := range before.logs {
		assert.Subset(t, after.logs[svc], lines, "the log lines of %s", svc)
	}
	counts := map[[3]string]uint64{}
	for _, f := range after.findings {
		counts[[3]string{f.Kind, f.Service, f.Subject}] = f.Count
	}
	for _, f := range before.findings {
		assert.GreaterOrEqual(t, counts[[3]string{f.Kind, f.Service, f.Subject}], f.Count, "findings %s of %s %s", f.Kind, f.Service, f.Subject)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tracesift/tracesift/internal/query"
)

// freePort returns a port free now, below the kernel's ephemeral range
// (32768 and up): a port from that range, freed, could be taken as the local
// port of any process's next outgoing connection before the collector
// listens on it.
func freePort(t testing.TB) int {
	t.Helper()
	for range 1000 {
		port := 20000 + rand.IntN(12768)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("no free port between 20000 and 32767")
	return 0
}

// eventually polls cond until it holds or the deadline passes: the sampler
// and the store's queue decide asynchronously, so the test waits for the
// observable outcome rather than for a fixed time.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 60*time.Second, what, cond)
}

// eventuallyWithin is eventually with its own deadline.
func eventuallyWithin(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

type endpoints struct {
	grpc, http, query, metrics, health, loki string
	logDir                                   string // tailed by the filelog receiver
}

func startCollector(t testing.TB) endpoints { return startCollectorWithTokens(t, "") }

// startCollectorWithTokens starts the collector of startCollector with
// tracesift_auth guarding every server when tokens ("tenant=token,…") are
// given.
func startCollectorWithTokens(t testing.TB, tokens string) endpoints {
	t.Helper()
	ep := endpoints{
		grpc:    fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		http:    fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		query:   fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		metrics: fmt.Sprint(freePort(t)),
		health:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		loki:    fmt.Sprintf("127.0.0.1:%d", freePort(t)),
	}
	dir := t.TempDir()
	ep.logDir = filepath.Join(dir, "logs")
	require.NoError(t, os.MkdirAll(ep.logDir, 0o755))
	cfg := fmt.Sprintf(`
extensions:
  tracesift_auth: {tokens: %q}
  tracesift_store:
    embedded: {path: %q}
    retention: {traces: 2400h, logs: 9600h}
  tracesift_query:
    endpoint: %s
    max_query_window: 12000h # the backfill's 400 days of logs, searched at once
    auth: {authenticator: tracesift_auth}
  health_check:
    http: {endpoint: %s, status: {enabled: true, path: /}}
    component_health: {include_recoverable_errors: true, recovery_duration: 0s}
receivers:
  tracesift_otlp:
    protocols:
      grpc: {endpoint: %s, max_recv_msg_size_mib: 1, auth: {authenticator: tracesift_auth}}
      http: {endpoint: %s, max_request_body_size: 1048576, auth: {authenticator: tracesift_auth}}
    sampler: {decision_wait: 300ms, baseline_ratio: 0, num_shards: 2, analyze: {store: tracesift_store}, red: {interval: 1s}}
  file_log:
    include: [%q]
    start_at: beginning
    poll_interval: 20ms
    resource: {service.name: checkout-files}
  tracesift_loki: {endpoint: %s, auth: {authenticator: tracesift_auth}}
processors:
  tracesift_logs: {}
exporters:
  tracesift: {sending_queue: {batch: {flush_timeout: 200ms}}}
service:
  extensions: [tracesift_auth, tracesift_query, tracesift_store, health_check]
  pipelines:
    traces: {receivers: [tracesift_otlp], exporters: [tracesift]}
    logs: {receivers: [tracesift_otlp, tracesift_loki], processors: [tracesift_logs], exporters: [tracesift]}
    logs/files: {receivers: [file_log], processors: [tracesift_logs], exporters: [tracesift]}
  telemetry:
    logs: {level: warn}
    metrics:
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: %s}}}
`, tokens, filepath.Join(dir, "data"), ep.query, ep.health, ep.grpc, ep.http, filepath.Join(ep.logDir, "*.log"), ep.loki, ep.metrics)
	cfgPath := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))

	set := collectorSettings("test")
	set.ConfigProviderSettings = providerSettings("file:" + cfgPath)
	col, err := otelcol.NewCollector(set)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- col.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	eventually(t, "the query API and the health check", func() bool {
		select {
		case err := <-done:
			done <- err // for the cleanup, which waits for it
			t.Fatalf("collector stopped: %v", err)
		default:
		}
		for _, url := range []string{"http://" + ep.query + "/health", "http://" + ep.health + "/"} {
			resp, err := http.Get(url)
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return false
			}
		}
		return col.GetState() == otelcol.StateRunning
	})
	return ep
}

func getTrace(t testing.TB, ep endpoints, id string) (int, *query.Trace) {
	t.Helper()
	code, tr, err := fetchTrace(ep, id)
	require.NoError(t, err)
	return code, tr
}

// fetchTrace is getTrace for a caller that asks again on an error.
func fetchTrace(ep endpoints, id string) (int, *query.Trace, error) {
	resp, err := http.Get("http://" + ep.query + "/api/v1/traces/" + id)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, nil
	}
	var tr query.Trace
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, &tr, nil
}

// getJSON GETs path from the query API and decodes the body into v when
// the answer is 200.
func getJSON(t *testing.T, ep endpoints, path string, v any) int {
	t.Helper()
	resp, err := http.Get("http://" + ep.query + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	}
	return resp.StatusCode
}

// metric returns the sum of the Prometheus samples named name whose labels
// contain every one of labels.
func metric(t *testing.T, ep endpoints, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + ep.metrics + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name) || strings.HasPrefix(line, "#") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		var v float64
		fields := strings.Fields(line)
		_, err := fmt.Sscan(fields[len(fields)-1], &v)
		require.NoError(t, err)
		sum += v
	}
	return sum
}

func tracerProvider(t *testing.T, exp sdktrace.SpanExporter, service string) *sdktrace.TracerProvider {
	t.Helper()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service), semconv.HostName(service+"-host"))),
	)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

func TestEndToEnd(t *testing.T) {
	ep := startCollector(t)
	ctx := context.Background()

	grpcExp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(ep.grpc), otlptracegrpc.WithInsecure())
	require.NoError(t, err)
	httpExp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(ep.http), otlptracehttp.WithInsecure(), otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	require.NoError(t, err)
	frontend := tracerProvider(t, grpcExp, "frontend").Tracer("e2e")
	backend := tracerProvider(t, httpExp, "backend").Tracer("e2e")

	// A healthy, fast trace over HTTP: dropped, since the baseline is 0.
	_, healthy := backend.Start(ctx, "GET /health")
	healthyID := healthy.SpanContext().TraceID().String()
	healthy.End()

	// An error trace over gRPC: root and child from one service.
	rootCtx, root := frontend.Start(ctx, "GET /checkout", trace.WithSpanKind(trace.SpanKindServer))
	childCtx, child := frontend.Start(rootCtx, "call payments", trace.WithSpanKind(trace.SpanKindClient))
	child.SetStatus(codes.Error, "payment declined")
	child.End()
	root.SetStatus(codes.Error, "checkout failed")
	root.End()
	errorID := root.SpanContext().TraceID().String()

	eventually(t, "the error trace to be kept", func() bool {
		code, tr := getTrace(t, ep, errorID)
		return code == http.StatusOK && len(tr.Spans) == 2
	})
	eventually(t, "the healthy trace to be decided", func() bool {
		return metric(t, ep, "otelcol_tracesift_sampler_traces_decided", `decision="dropped"`) >= 1
	})

	t.Run("healthy trace not kept", func(t *testing.T) {
		code, _ := getTrace(t, ep, healthyID)
		assert.Equal(t, http.StatusNotFound, code)
	})

	var skewedIDs []string // the traces through a skewed host, once stored with their finding
	t.Run("every trace through a skewed host carries clock_skew", func(t *testing.T) {
		// Five failing traces from web-e2e calling a host whose clock runs
		// 300 ms ahead: the first four come before the estimate has its five
		// samples, and carry the finding all the same.
		skewedExp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(ep.http), otlptracehttp.WithInsecure())
		require.NoError(t, err)
		caller := tracerProvider(t, grpcExp, "shop").Tracer("e2e")
		callee := tracerProvider(t, skewedExp, "ledger").Tracer("e2e")
		var ids []string
		for i := range 5 {
			t0 := time.Now().Add(-time.Minute + time.Duration(i)*time.Second)
			rootCtx, root := caller.Start(ctx, "POST /buy", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(t0))
			callCtx, call := caller.Start(rootCtx, "POST /book", trace.WithSpanKind(trace.SpanKindClient),
				trace.WithTimestamp(t0.Add(10*time.Millisecond)))
			skew := 300 * time.Millisecond
			_, srv := callee.Start(callCtx, "POST /book", trace.WithSpanKind(trace.SpanKindServer),
				trace.WithTimestamp(t0.Add(15*time.Millisecond+skew)))
			srv.SetStatus(codes.Error, "ledger closed")
			srv.End(trace.WithTimestamp(t0.Add(105*time.Millisecond + skew)))
			call.SetStatus(codes.Error, "booking failed")
			call.End(trace.WithTimestamp(t0.Add(110 * time.Millisecond)))
			root.SetStatus(codes.Error, "purchase failed")
			root.End(trace.WithTimestamp(t0.Add(120 * time.Millisecond)))
			ids = append(ids, root.SpanContext().TraceID().String())
		}
		for _, id := range ids {
			// The writer stores a batch's findings right after its spans: a
			// read in between sees the spans alone.
			var skew []query.Finding
			eventually(t, "trace "+id+" with its clock_skew finding", func() bool {
				code, tr := getTrace(t, ep, id)
				if code != http.StatusOK || len(tr.Spans) != 3 {
					return false
				}
				skew = skew[:0]
				for _, f := range tr.Findings {
					if f.Kind == "clock_skew" {
						skew = append(skew, f)
					}
				}
				return len(skew) > 0
			})
			require.Len(t, skew, 1, "trace %s", id)
			assert.Equal(t, "shop-host → ledger-host", skew[0].Subject)
			assert.InDelta(t, 300, skew[0].Value, 1)
		}
		skewedIDs = ids
	})

	t.Run("Grafana's Jaeger data source reads them through the Jaeger API", func(t *testing.T) {
		require.NotEmpty(t, skewedIDs)
		type kv struct {
			Key   string
			Value any
		}
		type span struct {
			SpanID, OperationName, ProcessID string
			StartTime, Duration              uint64
			Tags                             []kv
			Warnings                         []string
		}
		type jtrace struct {
			TraceID   string
			Spans     []span
			Processes map[string]struct{ ServiceName string }
		}
		var one struct{ Data []jtrace }
		require.Equal(t, http.StatusOK, getJSON(t, ep, "/api/traces/"+skewedIDs[0], &one))
		require.Len(t, one.Data, 1)
		tr := one.Data[0]
		assert.Equal(t, skewedIDs[0], tr.TraceID)
		require.Len(t, tr.Spans, 3)
		var client, server span
		for _, s := range tr.Spans {
			switch tr.Processes[s.ProcessID].ServiceName + " " + s.OperationName {
			case "shop POST /book":
				client = s
			case "ledger POST /book":
				server = s
			}
		}
		require.NotEmpty(t, client.SpanID)
		require.NotEmpty(t, server.SpanID)
		// Corrected for the 300 ms skew: the server span sits inside its call.
		assert.GreaterOrEqual(t, server.StartTime, client.StartTime)
		assert.LessOrEqual(t, server.StartTime+server.Duration, client.StartTime+client.Duration)
		assert.Contains(t, server.Tags, kv{"error", true})
		assert.Contains(t, server.Tags, kv{"span.kind", "server"})
		assert.Contains(t, strings.Join(server.Warnings, "\n"), "clock skew: ledger-host's clock is +300ms")

		var found struct{ Data []jtrace }
		q := url.Values{"service": {"ledger"}, "operation": {"POST /book"}, "tags": {`{"error":"true"}`}, "limit": {"20"}}
		require.Equal(t, http.StatusOK, getJSON(t, ep, "/api/traces?"+q.Encode(), &found))
		var ids []string
		for _, tr := range found.Data {
			ids = append(ids, tr.TraceID)
		}
		assert.Subset(t, ids, skewedIDs, "a span of ledger named POST /book, not a root")

		var services struct{ Data []string }
		require.Equal(t, http.StatusOK, getJSON(t, ep, "/api/services", &services))
		assert.Subset(t, services.Data, []string{"shop", "ledger", "frontend"})
		var deps struct {
			Data []struct {
				Parent, Child string
				CallCount     int
			}
		}
		require.Equal(t, http.StatusOK, getJSON(t, ep, "/api/dependencies?endTs="+fmt.Sprint(time.Now().UnixMilli()), &deps))
		calls := map[string]int{}
		for _, d := range deps.Data {
			calls[d.Parent+" → "+d.Child] = d.CallCount
		}
		assert.Equal(t, len(skewedIDs), calls["shop → ledger"], "%v", deps.Data)
	})

	t.Run("RED counts the dropped traffic too", func(t *testing.T) {
		// The healthy trace was dropped, the error trace kept: both root
		// spans are requests, the error one an error.
		type group struct {
			Service, Operation, Key, Value string
			Requests, Errors               uint64
			ErrorRate                      float64
			P99Ms                          float64
		}
		read := func(service string) []group {
			var body struct{ Groups []group }
			code := getJSON(t, ep, "/api/v1/red?groupBy=operation&service="+service, &body)
			require.Equal(t, http.StatusOK, code)
			return body.Groups
		}
		eventually(t, "RED of both services", func() bool { return len(read("backend")) > 0 && len(read("frontend")) > 0 })
		assert.Equal(t, []group{{Service: "backend", Key: "operation", Value: "GET /health", Requests: 1,
			P99Ms: read("backend")[0].P99Ms}}, read("backend"))
		front := read("frontend")
		require.Len(t, front, 1, "the client span is not a request")
		assert.Equal(t, "GET /checkout", front[0].Value)
		assert.Equal(t, uint64(1), front[0].Requests)
		assert.Equal(t, uint64(1), front[0].Errors)
		assert.Equal(t, 1.0, front[0].ErrorRate)

		var cmp struct{ Failing, Healthy uint64 }
		require.Equal(t, http.StatusOK, getJSON(t, ep, "/api/v1/compare?service=frontend", &cmp))
		assert.Equal(t, uint64(1), cmp.Failing)
		assert.Zero(t, cmp.Healthy)
	})

	t.Run("span after the decision joins the kept trace", func(t *testing.T) {
		// The callee reports late, from another service, over HTTP.
		_, late := backend.Start(childCtx, "POST /pay", trace.WithSpanKind(trace.SpanKindServer))
		late.SetAttributes(attribute.String("payment.provider", "acme"))
		late.End()
		var tr *query.Trace
		eventually(t, "the late span", func() bool {
			var code int
			code, tr = getTrace(t, ep, errorID)
			return code == http.StatusOK && len(tr.Spans) == 3
		})
		byName := map[string]query.Span{}
		for _, s := range tr.Spans {
			byName[s.Name] = s
		}
		assert.Equal(t, "backend", byName["POST /pay"].Service)
		assert.Equal(t, "backend-host", byName["POST /pay"].Host)
		assert.Equal(t, child.SpanContext().SpanID().String(), byName["POST /pay"].ParentSpanID)
		assert.Equal(t, "ERROR", byName["call payments"].Status.Code)
		assert.Equal(t, "payment declined", byName["call payments"].Status.Message)
		assert.Equal(t, "client", byName["call payments"].Kind)
		assert.Equal(t, "frontend", byName["GET /checkout"].Service)

		// The analyzers ran on the trace when it was kept (before the late
		// span): the error started at "call payments".
		var origin *query.Finding
		for i, f := range tr.Findings {
			if f.Kind == "error_origin" {
				origin = &tr.Findings[i]
			}
		}
		require.NotNil(t, origin, "findings: %+v", tr.Findings)
		assert.Equal(t, []string{child.SpanContext().SpanID().String()}, origin.SpanIDs)
		assert.Equal(t, "frontend call payments", origin.Subject)
		assert.Contains(t, origin.Summary, "payment declined")
	})

	t.Run("logs joined in all three forms", func(t *testing.T) {
		lgExp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(ep.grpc), otlploggrpc.WithInsecure())
		require.NoError(t, err)
		lhExp, err := otlploghttp.New(ctx, otlploghttp.WithEndpoint(ep.http), otlploghttp.WithInsecure())
		require.NoError(t, err)
		res := resource.NewSchemaless(semconv.ServiceName("payments"))
		lpGRPC := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(lgExp)), sdklog.WithResource(res))
		lpHTTP := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(lhExp)), sdklog.WithResource(res))
		defer lpGRPC.Shutdown(ctx)
		defer lpHTTP.Shutdown(ctx)

		now := time.Now()
		emit := func(lp *sdklog.LoggerProvider, ctx context.Context, at time.Time, body string, attrs ...attribute.KeyValue) {
			var r otellog.Record
			r.SetTimestamp(at)
			r.SetBody(attribute.StringValue(body))
			r.SetSeverity(otellog.SeverityError)
			r.SetSeverityText("ERROR")
			r.AddAttributes(attrs...)
			lp.Logger("e2e").Emit(ctx, r)
		}
		spanHex := child.SpanContext().SpanID().String()
		// 1. the record's own trace context (OTel SDK bridge)
		emit(lpGRPC, childCtx, now.Add(3*time.Millisecond), "declined by acquirer")
		// 2. MDC attributes (an appender that maps MDC to attributes)
		emit(lpHTTP, ctx, now.Add(1*time.Millisecond), "retrying payment",
			attribute.String("traceId", errorID), attribute.String("spanId", spanHex))
		// 3. only in the text, as a Logback pattern with %X{traceId} prints it
		emit(lpGRPC, ctx, now.Add(2*time.Millisecond),
			fmt.Sprintf("2026-11-30 10:00:00.123 [exec-1] ERROR c.e.Pay traceId=%s spanId=%s - card expired", errorID, spanHex))

		var tr *query.Trace
		eventually(t, "three logs on the trace", func() bool {
			var code int
			code, tr = getTrace(t, ep, errorID)
			return code == http.StatusOK && len(tr.Logs) == 3
		})
		assert.Equal(t, "retrying payment", tr.Logs[0].Body, "logs in time order")
		assert.Contains(t, tr.Logs[1].Body, "card expired")
		assert.Equal(t, "declined by acquirer", tr.Logs[2].Body)
		for _, l := range tr.Logs {
			assert.Equal(t, errorID, l.TraceID)
			assert.Equal(t, spanHex, l.SpanID)
			assert.Equal(t, "payments", l.Service)
			assert.Equal(t, "ERROR", l.SeverityText)
		}
	})

	t.Run("log file tailed by the filelog receiver", func(t *testing.T) {
		spanHex := child.SpanContext().SpanID().String()
		// The layout's own time is read (tracesift_logs' text patterns).
		stamp := time.Now().UTC().Format("2006-01-02 15:04:05.000")
		line := fmt.Sprintf("%s [exec-2] WARN c.e.Checkout [traceId=%s spanId=%s] - from the log file\n",
			stamp, errorID, spanHex)
		require.NoError(t, os.WriteFile(filepath.Join(ep.logDir, "checkout.log"), []byte(line), 0o600))
		var found *query.Log
		eventually(t, "the file's line on the trace", func() bool {
			code, tr := getTrace(t, ep, errorID)
			if code != http.StatusOK {
				return false
			}
			for i, l := range tr.Logs {
				if strings.Contains(l.Body, "from the log file") {
					found = &tr.Logs[i]
					return true
				}
			}
			return false
		})
		assert.Equal(t, "checkout-files", found.Service)
		assert.Equal(t, spanHex, found.SpanID)
		assert.Equal(t, "WARN", found.SeverityText, "read from the layout")
		assert.Equal(t, "exec-2", found.Attributes["thread.name"])
		assert.Equal(t, stamp, time.Unix(0, int64(found.TimeUnixNano)).UTC().Format("2006-01-02 15:04:05.000"))
	})

	t.Run("logs over the Loki push API and the lines endpoint", func(t *testing.T) {
		spanHex := child.SpanContext().SpanID().String()
		ns := fmt.Sprint(time.Now().UnixNano())
		push := fmt.Sprintf(`{"streams":[{"stream":{"service_name":"payments-loki","level":"error"},
			"values":[[%q,"payment retry traceId=%s spanId=%s (via loki)"]]}]}`, ns, errorID, spanHex)
		resp, err := http.Post("http://"+ep.loki+"/loki/api/v1/push", "application/json", strings.NewReader(push))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)

		line := fmt.Sprintf(`{"msg":"ledger updated (via lines)","level":"info","trace_id":%q,"span_id":%q,"order":{"id":42}}`,
			errorID, spanHex)
		resp, err = http.Post("http://"+ep.loki+"/api/v1/logs/lines?service=ledger", "application/x-ndjson",
			strings.NewReader(line+"\n"))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)

		byBody := map[string]query.Log{}
		eventually(t, "both lines on the trace", func() bool {
			code, tr := getTrace(t, ep, errorID)
			if code != http.StatusOK {
				return false
			}
			for _, l := range tr.Logs {
				byBody[l.Body] = l
			}
			_, a := byBody[fmt.Sprintf("payment retry traceId=%s spanId=%s (via loki)", errorID, spanHex)]
			_, b := byBody["ledger updated (via lines)"]
			return a && b
		})
		viaLoki := byBody[fmt.Sprintf("payment retry traceId=%s spanId=%s (via loki)", errorID, spanHex)]
		assert.Equal(t, "payments-loki", viaLoki.Service)
		assert.Equal(t, "error", viaLoki.SeverityText)
		assert.Equal(t, spanHex, viaLoki.SpanID)
		viaLines := byBody["ledger updated (via lines)"]
		assert.Equal(t, "ledger", viaLines.Service)
		assert.Equal(t, "42", viaLines.Attributes["order.id"])
		assert.Equal(t, spanHex, viaLines.SpanID)
	})

	t.Run("a backfill over many days does not stop ingestion", func(t *testing.T) {
		// Three Loki pushes of 150 lines, one line a day back, as a file_log
		// backfill or a client with a bad clock sends them: more day
		// partitions than one insert may write. Retention is 400 days for
		// logs and 100 for traces, so the oldest are counted as expired.
		now := time.Now()
		const days = 450
		for p := range 3 {
			var values []string
			for d := p * 150; d < (p+1)*150; d++ {
				values = append(values, fmt.Sprintf(`[%q,"backfilled line %d"]`, fmt.Sprint(now.Add(-time.Duration(d)*24*time.Hour).UnixNano()), d))
			}
			push := `{"streams":[{"stream":{"service_name":"backfill"},"values":[` + strings.Join(values, ",") + `]}]}`
			resp, err := http.Post("http://"+ep.loki+"/loki/api/v1/push", "application/json", strings.NewReader(push))
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusNoContent, resp.StatusCode)
		}
		// Error traces, one a day back, in one request.
		var spans []string
		ids := make([]string, 150)
		for d := range ids {
			ids[d] = fmt.Sprintf("bf%030x", d+1)
			start := now.Add(-time.Duration(d) * 24 * time.Hour).UnixNano()
			spans = append(spans, fmt.Sprintf(`{"traceId":%q,"spanId":"00000000000000%02x","name":"GET /old","kind":2,`+
				`"startTimeUnixNano":"%d","endTimeUnixNano":"%d","status":{"code":2}}`, ids[d], d+1, start, start+1e6))
		}
		body := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"backfill"}}]},` +
			`"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}`
		resp, err := http.Post("http://"+ep.http+"/v1/traces", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)

		// A line sent afterwards is stored, and so is every backfilled one.
		spanHex := child.SpanContext().SpanID().String()
		fresh := fmt.Sprintf(`{"streams":[{"stream":{"service_name":"after-backfill"},"values":[[%q,"after the backfill traceId=%s spanId=%s"]]}]}`,
			fmt.Sprint(time.Now().UnixNano()), errorID, spanHex)
		resp, err = http.Post("http://"+ep.loki+"/loki/api/v1/push", "application/json", strings.NewReader(fresh))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		// The backfill writes a part in each of ~450 day partitions: ~50 s
		// under -race on a quiet machine, more with the suite around it.
		eventuallyWithin(t, 3*time.Minute, "the line after the backfill on the trace", func() bool {
			code, tr := getTrace(t, ep, errorID)
			if code != http.StatusOK {
				return false
			}
			for _, l := range tr.Logs {
				if l.Service == "after-backfill" {
					return true
				}
			}
			return false
		})
		q := url.Values{"service": {"backfill"}, "limit": {"1000"},
			"start": {fmt.Sprint(now.Add(-(days + 1) * 24 * time.Hour).UnixNano())}, "end": {fmt.Sprint(now.Add(time.Minute).UnixNano())}}
		var found struct{ Logs []query.LogMatch }
		eventually(t, "every backfilled line within retention", func() bool {
			resp, err := http.Get("http://" + ep.query + "/api/v1/logs?" + q.Encode())
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&found))
			return len(found.Logs) == 400
		})
		assert.Equal(t, float64(days-400), metric(t, ep, "otelcol_tracesift_store_records_expired", `signal="logs"`))
		for d, id := range ids {
			if d < 100 {
				eventually(t, "the backfilled trace "+id, func() bool {
					code, _ := getTrace(t, ep, id)
					return code == http.StatusOK
				})
			}
		}
		eventually(t, "the expired spans counted", func() bool {
			return metric(t, ep, "otelcol_tracesift_store_records_expired", `signal="traces"`) == 50
		})
		code, _ := getTrace(t, ep, ids[100])
		assert.Equal(t, http.StatusNotFound, code, "past retention")
		assert.Zero(t, metric(t, ep, "otelcol_exporter_send_failed_log_records"))
		assert.Zero(t, metric(t, ep, "otelcol_exporter_send_failed_spans"))
	})

	t.Run("OTLP/JSON over HTTP", func(t *testing.T) {
		const id = "5b8efff798038103d269b633813fc60c"
		start := time.Now().UnixNano()
		body := fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"shop"}}]},
			"scopeSpans":[{"spans":[{"traceId":%q,"spanId":"eee19b7ec3c1b174","name":"GET /cart","kind":2,
			"startTimeUnixNano":"%d","endTimeUnixNano":"%d",
			"attributes":[{"key":"http.response.status_code","value":{"intValue":"504"}}]}]}]}]}`, id, start, start+5e6)
		resp, err := http.Post("http://"+ep.http+"/v1/traces", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var tr *query.Trace
		eventually(t, "the timeout trace sent as JSON", func() bool {
			var code int
			code, tr = getTrace(t, ep, id)
			return code == http.StatusOK
		})
		require.Len(t, tr.Spans, 1)
		assert.Equal(t, uint64(start), tr.Spans[0].StartTimeUnixNano)
		assert.Equal(t, uint64(5e6), tr.Spans[0].DurationNano)
		assert.Equal(t, "504", tr.Spans[0].Attributes["http.response.status_code"])
		assert.Equal(t, "UNSET", tr.Spans[0].Status.Code, "kept as a timeout, not an error")
	})

	t.Run("malformed and unknown ids", func(t *testing.T) {
		for _, id := range []string{"xyz", strings.ToUpper(errorID), errorID[:16], strings.Repeat("0", 32)} {
			code, _ := getTrace(t, ep, id)
			assert.Equal(t, http.StatusBadRequest, code, id)
		}
		code, _ := getTrace(t, ep, "0123456789abcdef0123456789abcdef")
		assert.Equal(t, http.StatusNotFound, code)
	})

	t.Run("bad OTLP input", func(t *testing.T) {
		post := func(body []byte, contentType string) (int, string) {
			resp, err := http.Post("http://"+ep.http+"/v1/traces", contentType, bytes.NewReader(body))
			require.NoError(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		code, _ := post([]byte("\xff\xfe not protobuf"), "application/x-protobuf")
		assert.Equal(t, http.StatusBadRequest, code)
		code, _ = post([]byte(`{"resourceSpans": [`), "application/json")
		assert.Equal(t, http.StatusBadRequest, code)
		code, _ = post(bytes.Repeat([]byte("a"), 2<<20), "application/x-protobuf")
		assert.Equal(t, http.StatusRequestEntityTooLarge, code)

		conn, err := grpc.NewClient(ep.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer conn.Close()
		td := ptrace.NewTraces()
		s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetName(strings.Repeat("x", 2<<20))
		_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		assert.Equal(t, grpccodes.ResourceExhausted, status.Code(err), "%v", err)

		// The collector still serves the kept trace afterwards.
		code, _ = getTrace(t, ep, errorID)
		assert.Equal(t, http.StatusOK, code)
	})
}

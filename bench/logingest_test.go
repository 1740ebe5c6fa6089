package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/protobuf/encoding/protowire"
)

// BenchmarkLogIngest runs the collector with its logs pipeline as shipped
// (the tracesift_logs processor linking and parsing every line, the
// embedded ClickHouse storing it in 100 000-line inserts) and sends it 1000-line requests of Logback-style
// lines from 4 connections, first over the Loki push API (snappy protobuf),
// then over OTLP/HTTP (protobuf), TRACESIFT_BENCH_LOG_DURATION (20 s) each
// after a 3 s warm-up. It reports accepted lines/s and lines per server
// CPU-second for each path.
func BenchmarkLogIngest(b *testing.B) {
	window := 20 * time.Second
	if v := os.Getenv("TRACESIFT_BENCH_LOG_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("TRACESIFT_BENCH_LOG_DURATION=%q: want a positive duration", v)
		}
		window = d
	}
	bin := buildBinary(b, "tracesift")
	dir := b.TempDir()
	port := func() int {
		p, err := FreePort()
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	otlp, loki, query, metrics := port(), port(), port(), port()
	// TRACESIFT_BENCH_PPROF as in BenchmarkCollectorVsReference.
	pprofExt, pprofName := "", ""
	if addr := os.Getenv("TRACESIFT_BENCH_PPROF"); addr != "" {
		pprofExt, pprofName = fmt.Sprintf("  pprof: {endpoint: %s}\n", addr), ", pprof"
	}
	cfg := fmt.Sprintf(`extensions:
  tracesift_store: {embedded: {path: %q}}
  tracesift_query: {endpoint: 127.0.0.1:%d}
%sreceivers:
  tracesift_otlp:
    protocols: {http: {endpoint: 127.0.0.1:%d}}
  tracesift_loki: {endpoint: 127.0.0.1:%d}
processors:
  tracesift_logs: {}
exporters:
  tracesift: {}
  tracesift/logs: {sending_queue: {batch: {min_size: 100000, flush_timeout: 2s}}}
service:
  extensions: [tracesift_store, tracesift_query%s]
  pipelines:
    traces: {receivers: [tracesift_otlp], exporters: [tracesift]}
    logs: {receivers: [tracesift_otlp, tracesift_loki], processors: [tracesift_logs], exporters: [tracesift/logs]}
  telemetry:
    metrics: {readers: [{pull: {exporter: {prometheus: {host: 127.0.0.1, port: %d}}}}]}
`, filepath.Join(dir, "data"), query, pprofExt, otlp, loki, pprofName, metrics)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	srv, err := StartServer("tracesift", bin, filepath.Join(dir, "server.log"), serverEnv(), "--config", cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Kill()
	if err := srv.WaitReady(2*time.Minute, func() bool {
		return HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/health", query))
	}); err != nil {
		b.Fatalf("%v\n%s", err, srv.LogTail(20))
	}

	const linesPerRequest = 1000
	paths := []struct {
		name, url, contentType string
		body                   []byte
	}{
		{"loki push (protobuf)", fmt.Sprintf("http://127.0.0.1:%d/loki/api/v1/push", loki), "application/x-protobuf",
			lokiPush(linesPerRequest)},
		{"OTLP/HTTP logs", fmt.Sprintf("http://127.0.0.1:%d/v1/logs", otlp), "application/x-protobuf",
			otlpLogs(b, linesPerRequest)},
	}
	for b.Loop() {
		fmt.Printf("log ingestion, %d-line requests, 4 connections, %s each:\n", linesPerRequest, window)
		for _, p := range paths {
			send(p.url, p.contentType, p.body, 3*time.Second) // warm-up
			cpu0, err := ProcCPU(srv.PID())
			if err != nil {
				b.Fatal(err)
			}
			reqs := send(p.url, p.contentType, p.body, window)
			cpu1, err := ProcCPU(srv.PID())
			if err != nil {
				b.Fatal(err)
			}
			lines := float64(reqs * linesPerRequest)
			perSec, perCPU := lines/window.Seconds(), lines/(cpu1-cpu0).Seconds()
			fmt.Printf("  %-22s %9.0f lines/s  %9.0f lines per server CPU-second\n", p.name, perSec, perCPU)
			b.ReportMetric(perSec, metricName(p.name)+"-lines/s")
			b.ReportMetric(perCPU, metricName(p.name)+"-lines/cpu-s")
		}
	}
	if err := srv.Stop(time.Minute); err != nil {
		b.Fatal(err)
	}
}

// send posts body from 4 connections for d and returns the requests
// accepted (2xx).
func send(url, contentType string, body []byte, d time.Duration) int64 {
	var ok atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", contentType)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode/100 == 2 && ctx.Err() == nil {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return ok.Load()
}

var benchServices = []string{"frontend", "checkout", "inventory", "payments"}

// logLine is the i-th line of the load: a Logback layout with MDC ids on
// three lines in ten.
func logLine(i int, now time.Time) string {
	ts := now.UTC().Format("2006-01-02 15:04:05.000")
	msg := fmt.Sprintf(logTemplates[i%len(logTemplates)], 1000+i, i%700)
	if i%10 < 3 {
		return fmt.Sprintf("%s [http-nio-8080-exec-%d] INFO  c.e.shop.Service traceId=%032x spanId=%016x - %s", ts, i%8, i+1, i+1, msg)
	}
	return fmt.Sprintf("%s [http-nio-8080-exec-%d] INFO  c.e.shop.Service - %s", ts, i%8, msg)
}

// lokiPush is a snappy-compressed logproto.PushRequest: one stream per
// service.
func lokiPush(lines int) []byte {
	now := time.Now()
	var req []byte
	per := lines / len(benchServices)
	for s, svc := range benchServices {
		var stream []byte
		stream = protowire.AppendTag(stream, 1, protowire.BytesType)
		stream = protowire.AppendString(stream, fmt.Sprintf(`{service_name=%q, host="%s-1"}`, svc, svc))
		for i := range per {
			var ts []byte
			ts = protowire.AppendTag(ts, 1, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(now.Unix()))
			ts = protowire.AppendTag(ts, 2, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(now.Nanosecond()))
			var entry []byte
			entry = protowire.AppendTag(entry, 1, protowire.BytesType)
			entry = protowire.AppendBytes(entry, ts)
			entry = protowire.AppendTag(entry, 2, protowire.BytesType)
			entry = protowire.AppendString(entry, logLine(s*per+i, now))
			stream = protowire.AppendTag(stream, 2, protowire.BytesType)
			stream = protowire.AppendBytes(stream, entry)
		}
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, stream)
	}
	return snappy.Encode(nil, req)
}

// otlpLogs is the same lines as an OTLP ExportLogsServiceRequest.
func otlpLogs(b *testing.B, lines int) []byte {
	now := time.Now()
	ld := plog.NewLogs()
	per := lines / len(benchServices)
	for s, svc := range benchServices {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", svc)
		rl.Resource().Attributes().PutStr("host.name", svc+"-1")
		lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
		for i := range per {
			lr := lrs.AppendEmpty()
			lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(now))
			lr.Body().SetStr(logLine(s*per+i, now))
		}
	}
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	return body
}

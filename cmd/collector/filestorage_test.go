package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileStorageConfig is an all-in-one whose store exporter queues in
// file_storage and whose file_log keeps its offsets there. The batch's
// flush timeout comes from FS_FLUSH, so that a first run can hold
// everything in the queue and a second one store it.
const fileStorageConfig = `
extensions:
  file_storage: {directory: %q}
  tracesift_store: {embedded: {path: %q}}
  tracesift_query: {endpoint: %s}
  health_check: {endpoint: "${env:TRACESIFT_HEALTH_ENDPOINT}"}
receivers:
  tracesift_otlp:
    protocols:
      grpc: {endpoint: %s}
      http: {endpoint: %s}
    sampler: {decision_wait: 300ms, baseline_ratio: 0}
  tracesift_loki: {endpoint: %s}
  file_log:
    include: [%q]
    start_at: beginning
    poll_interval: 20ms
    storage: file_storage
    resource: {service.name: fs-files}
processors:
  tracesift_logs: {}
exporters:
  tracesift:
    sending_queue:
      storage: file_storage
      batch: {flush_timeout: "${env:FS_FLUSH}"}
service:
  extensions: [file_storage, tracesift_store, tracesift_query, health_check]
  pipelines:
    traces: {receivers: [tracesift_otlp], exporters: [tracesift]}
    logs: {receivers: [tracesift_otlp, tracesift_loki, file_log], processors: [tracesift_logs], exporters: [tracesift]}
  telemetry:
    metrics:
      readers:
        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: "${env:TRACESIFT_METRICS_PORT}"}}}
`

// With file_storage, what the store exporter's queue held when the
// collector was killed (SIGKILL) is stored after a restart, and file_log
// resumes from its checkpoint instead of reading its files again.
func TestFileStorageSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it")
	}
	b := buildBinary(t)
	dir := t.TempDir()
	for _, d := range []string{"queue", "logs"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	ep := endpoints{
		grpc:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		http:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		query: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		loki:  fmt.Sprintf("127.0.0.1:%d", freePort(t)),
	}
	cfg := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, fileStorageConfig, filepath.Join(dir, "queue"), filepath.Join(dir, "data"),
		ep.query, ep.grpc, ep.http, ep.loki, filepath.Join(dir, "logs", "*.log")), 0o600))
	appendLines := func(file string, lines ...string) {
		f, err := os.OpenFile(filepath.Join(dir, "logs", file), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		require.NoError(t, err)
		_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	appendLines("a.log", "a line 0", "a line 1", "a line 2")

	// First run: nothing reaches the store within the hour, so everything
	// below is only in the queue when the process is killed.
	p := b.newProc("file-storage", []string{"--config", cfg}, "FS_FLUSH=1h")
	p.launch()
	ep.metrics, ep.health = p.metrics, p.health
	c := &cluster{builtBinary: b, gateway: ep.http, query: ep.query}
	traces := c.sendTraces(0, 10, 10) // an error and a slow one kept: 6 spans, 1 log line
	pushLoki(t, ep, "fs-loki", "queued", 5)
	queued := func(dataType string) float64 {
		return metric(t, ep, "otelcol_exporter_queue_size", `exporter="tracesift"`, `data_type="`+dataType+`"`)
	}
	eventually(t, "the kept spans and the log lines in the queue", func() bool {
		return queued("traces") == 6 && queued("logs") == 3+5+1
	})
	// A file that appears after a.log was read is read in a later poll, so
	// once its line is queued, a.log's offsets have been saved.
	appendLines("b.log", "b line 0")
	eventually(t, "b.log's line in the queue", func() bool { return queued("logs") == 3+5+1+1 })
	for _, g := range traces {
		code, _ := getTrace(t, ep, g.id.String())
		require.Equal(t, http.StatusNotFound, code, "trace %s stored before the kill", g.id)
	}
	require.Empty(t, searchLogs(t, ep, "fs-loki"))
	require.Empty(t, searchLogs(t, ep, "fs-files"))

	p.kill()
	appendLines("a.log", "a line 3", "a line 4")
	p.env = append(p.env, "FS_FLUSH=100ms") // the last value of a variable wins
	p.launch()

	c.checkKept(traces)
	eventually(t, "the Loki lines and a.log's new lines", func() bool {
		return len(searchLogs(t, ep, "fs-loki")) == 5 && len(searchLogs(t, ep, "fs-files")) >= 6
	})
	count := map[string]int{}
	for _, l := range searchLogs(t, ep, "fs-files") {
		count[l.Body]++
	}
	for i := range 5 {
		assert.Equal(t, 1, count[fmt.Sprint("a line ", i)], "a line %d, read once across the restart", i)
	}
	// b.log's offset may have been saved or not when the process died.
	assert.GreaterOrEqual(t, count["b line 0"], 1)
}

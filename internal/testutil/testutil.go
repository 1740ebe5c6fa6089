// Package testutil holds the helpers that the components' tests share:
// loading a component's configuration as the Collector does, and reading
// its self-metrics.
package testutil

import (
	"bytes"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// LoadConfig unmarshals the section id of testdata/file over the factory's
// default config and validates it, as the collector does.
func LoadConfig(t testing.TB, file string, id component.ID, f component.Factory) (component.Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", file))
	require.NoError(t, err)
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := f.CreateDefaultConfig()
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

// MetricSum is the value of the int64 sum name with exactly attrs; 0 when
// it has no such point.
func MetricSum(t testing.TB, tel *componenttest.Telemetry, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is %T", name, m.Data)
	want := attribute.NewSet(attrs...)
	for _, dp := range sum.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value
		}
	}
	return 0
}

// Counter is the value of the int64 sum name with exactly attrs; 0 when the
// metric or the point is not there yet.
func Counter(t testing.TB, tel *componenttest.Telemetry, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	if _, err := tel.GetMetric(name); err != nil {
		return 0
	}
	return MetricSum(t, tel, name, attrs...)
}

// Post sends body to url with the given Content-Type (none when empty) and
// Content-Encoding (when not empty), and returns the response with its body
// read.
func Post(t testing.TB, client *http.Client, url, contentType, contentEncoding string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if contentEncoding != "" {
		req.Header.Set("Content-Encoding", contentEncoding)
	}
	return Do(t, client, req)
}

// Do sends req and returns the response with its body read.
func Do(t testing.TB, client *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp, b.Bytes()
}

// DiscardWriter is a reusable http.ResponseWriter that keeps only the
// status code, for benchmarks of handlers.
type DiscardWriter struct {
	H    http.Header
	Code int
}

func (w *DiscardWriter) Header() http.Header         { return w.H }
func (w *DiscardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *DiscardWriter) WriteHeader(code int)        { w.Code = code }

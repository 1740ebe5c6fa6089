// Package testutil holds the helpers that the components' tests share:
// loading a component's configuration as the Collector does, and reading
// its self-metrics.
package testutil

import (
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
func LoadConfig(t *testing.T, file string, id component.ID, f component.Factory) (component.Config, error) {
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
func MetricSum(t *testing.T, tel *componenttest.Telemetry, name string, attrs ...attribute.KeyValue) int64 {
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

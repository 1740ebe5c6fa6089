package loki

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/tracesift/tracesift/internal/receiver/loki/internal/metadata"
)

// loadConfig unmarshals the section of testdata/config.yaml named name over
// the default config and validates it, as the collector does.
func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "tracesift_loki", f.Type().String())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsStability())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))

	_, err := f.CreateLogs(t.Context(), testSettings(), &struct{ component.Config }{}, nil)
	assert.ErrorContains(t, err, "unexpected config type")
	_, err = f.CreateLogs(t.Context(), testSettings(), testConfig(), nil)
	assert.ErrorContains(t, err, "nil next consumer")
	_, err = f.CreateTraces(t.Context(), testSettings(), testConfig(), nil)
	assert.Error(t, err, "logs only")
}

func TestDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, "localhost:3100", cfg.ServerConfig.NetAddr.Endpoint)
	assert.Equal(t, int64(16<<20), cfg.ServerConfig.MaxRequestBodySize)
	assert.Equal(t, 65536, cfg.MaxLineBytes)
	assert.False(t, cfg.ServerConfig.TLS.HasValue())
	assert.Zero(t, cfg.ServerConfig.WriteTimeout)
	assert.Equal(t, time.Minute, cfg.ServerConfig.ReadTimeout, "a stalled upload is cut off")
	require.NoError(t, confmap.Validate(cfg))
}

func TestLoadConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		cfg, err := loadConfig(t, "")
		require.NoError(t, err)
		assert.Equal(t, createDefaultConfig(), cfg)
	})
	t.Run("custom", func(t *testing.T) {
		cfg, err := loadConfig(t, "custom")
		require.NoError(t, err)
		assert.Equal(t, "0.0.0.0:13100", cfg.ServerConfig.NetAddr.Endpoint)
		assert.Equal(t, int64(8<<20), cfg.ServerConfig.MaxRequestBodySize)
		assert.Equal(t, 16384, cfg.MaxLineBytes)
		assert.True(t, cfg.ServerConfig.IncludeMetadata, "confighttp keys sit at the top level")
	})

	invalid := []struct {
		name    string
		wantErr []string
	}{
		{"zero_sizes", []string{
			"`max_request_body_size` must be positive (default 16777216), got 0",
			"`max_line_bytes` must be positive (default 65536), got 0",
		}},
		{"negative_line", []string{"`max_line_bytes` must be positive (default 65536), got -5"}},
		{"no_endpoint", []string{"`endpoint` must not be empty"}},
		{"unknown_key", []string{"max_line_byte"}},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(t, tt.name)
			require.Error(t, err)
			t.Logf("%v", err)
			for _, want := range tt.wantErr {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

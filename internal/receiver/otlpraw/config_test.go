package otlpraw

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

	"github.com/tracesift/tracesift/internal/receiver/otlpraw/internal/metadata"
	"github.com/tracesift/tracesift/internal/tailsampler"
)

// loadConfig unmarshals the section of testdata/config.yaml named name over
// the default config and validates it, as the collector does.
func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := newFactory(nil).CreateDefaultConfig().(*Config)
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestFactory(t *testing.T) {
	f := newFactory(nil)
	assert.Equal(t, "tracesift_otlp", f.Type().String())
	assert.Equal(t, component.StabilityLevelDevelopment, f.TracesStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsStability())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))
}

func TestDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	// Like the Collector's otlp receiver: a protocol runs when configured.
	assert.False(t, cfg.Protocols.GRPC.HasValue())
	assert.False(t, cfg.Protocols.HTTP.HasValue())
	assert.Equal(t, *tailsampler.NewFactory().CreateDefaultConfig().(*tailsampler.Config), cfg.Sampler)

	g := cfg.Protocols.GRPC.GetOrInsertDefault()
	assert.Equal(t, "localhost:4317", g.NetAddr.Endpoint)
	assert.Equal(t, 16, g.MaxRecvMsgSizeMiB)
	h := cfg.Protocols.HTTP.GetOrInsertDefault()
	assert.Equal(t, "localhost:4318", h.ServerConfig.NetAddr.Endpoint)
	assert.Equal(t, int64(16<<20), h.ServerConfig.MaxRequestBodySize)
	assert.Equal(t, URLPath("/v1/traces"), h.TracesURLPath)
	assert.Equal(t, URLPath("/v1/logs"), h.LogsURLPath)
	assert.False(t, h.ServerConfig.TLS.HasValue())
	assert.Equal(t, time.Minute, h.ServerConfig.ReadTimeout, "a stalled upload is cut off")
	require.NoError(t, confmap.Validate(cfg))
}

func TestLoadConfig(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		cfg, err := loadConfig(t, "")
		require.NoError(t, err)
		want := createDefaultConfig().(*Config)
		want.Protocols.GRPC.GetOrInsertDefault()
		want.Protocols.HTTP.GetOrInsertDefault()
		assert.Equal(t, want, cfg)
	})

	t.Run("custom", func(t *testing.T) {
		cfg, err := loadConfig(t, "custom")
		require.NoError(t, err)
		g := cfg.Protocols.GRPC.Get()
		require.NotNil(t, g)
		assert.Equal(t, "0.0.0.0:14317", g.NetAddr.Endpoint)
		assert.Equal(t, 32, g.MaxRecvMsgSizeMiB)
		assert.Equal(t, 512<<10, g.ReadBufferSize, "unset keys keep their defaults")
		h := cfg.Protocols.HTTP.Get()
		require.NotNil(t, h)
		assert.Equal(t, "0.0.0.0:14318", h.ServerConfig.NetAddr.Endpoint)
		assert.Equal(t, int64(8<<20), h.ServerConfig.MaxRequestBodySize)
		assert.Equal(t, URLPath("/otlp/v1/traces"), h.TracesURLPath)
		assert.Equal(t, URLPath("/otlp/v1/logs"), h.LogsURLPath)

		want := *tailsampler.NewFactory().CreateDefaultConfig().(*tailsampler.Config)
		want.NumShards = 4
		want.DecisionWait = 5 * time.Second
		want.BaselineRatio = 0.05
		want.MaxBufferedBytes = 64 << 20
		want.KeepErrors = false
		want.AdaptiveSlow.Quantile = 0.95
		slow, off := 10*time.Minute, false
		want.Services = map[string]tailsampler.ServiceRules{
			"batch-export": {SlowThreshold: &slow, AdaptiveSlow: &off},
		}
		assert.Equal(t, want, cfg.Sampler)
	})

	t.Run("grpc_only", func(t *testing.T) {
		cfg, err := loadConfig(t, "grpc_only")
		require.NoError(t, err)
		assert.True(t, cfg.Protocols.GRPC.HasValue())
		assert.False(t, cfg.Protocols.HTTP.HasValue())
	})

	t.Run("http_disabled", func(t *testing.T) {
		cfg, err := loadConfig(t, "http_disabled")
		require.NoError(t, err)
		assert.True(t, cfg.Protocols.GRPC.HasValue())
		assert.False(t, cfg.Protocols.HTTP.HasValue())
	})

	invalid := []struct {
		name    string
		wantErr []string
	}{
		{"no_protocols", []string{"`protocols`: at least one of `grpc` and `http` must be configured"}},
		{"all_disabled", []string{"`protocols`: at least one of `grpc` and `http` must be configured"}},
		// confmap prefixes the section to the first line of the sampler's
		// joined errors only; each line names its key within the section.
		{"bad_sampler", []string{
			"sampler: `decision_wait` must be positive, got 0s",
			"`baseline_ratio` must be in [0, 1], got 2",
			"`adaptive_slow::quantile` must be in (0, 1), got 1",
		}},
		{"unknown_sampler_key", []string{"sampler", "decision_wiat"}},
		{"zero_sizes", []string{
			"`protocols::grpc::max_recv_msg_size_mib` must be positive (default 16), got 0",
			"`protocols::http::max_request_body_size` must be positive (default 16777216), got 0",
		}},
		{"same_paths", []string{"`protocols::http::traces_url_path` and `protocols::http::logs_url_path` must differ"}},
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

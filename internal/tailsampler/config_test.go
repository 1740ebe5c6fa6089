package tailsampler

import (
	"math"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/tracesift/tracesift/internal/clockskew"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/tailsampler/internal/metadata"
)

func TestCreateDefaultConfig(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "tracesift_sampler", f.Type().String())
	assert.Equal(t, component.StabilityLevelDevelopment, f.TracesStability())

	cfg := f.CreateDefaultConfig()
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, &Config{
		NumShards:              0,
		DecisionWait:           10 * time.Second,
		SlowThreshold:          time.Second,
		BaselineRatio:          0.01,
		DecisionCacheSize:      100000,
		ShardQueueSize:         64,
		MaxWait:                30 * time.Second,
		MaxBufferedBytes:       512 << 20,
		BufferCompression:      true,
		MaxTraceBytes:          16 << 20,
		MaxSpansPerTrace:       20000,
		KeepErrors:             true,
		KeepTimeouts:           true,
		KeepSlow:               true,
		KeepRetryAmplification: 27,
		KeepClockSkew:          true,
		AdaptiveSlow: AdaptiveSlowConfig{
			Enabled: true, Quantile: 0.99, MinSamples: 100, MinDuration: 10 * time.Millisecond,
			Window: 5 * time.Minute, MaxRoutes: 2000,
		},
		BaselineMaxPerSecond: 100,
		Analyze: AnalyzeConfig{
			Enabled: true, FanoutThreshold: 50, MinRepeatedCalls: 5,
			Skew: clockskew.Config{Window: 5 * time.Minute, MinSamples: 5, Threshold: 100 * time.Millisecond,
				MaxPairs: 10000, MaxSamples: 256},
		},
		RED: red.Config{Enabled: true, Interval: 10 * time.Second, MaxSeries: 10000},
	}, cfg)
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	typ := metadata.Type
	tests := []struct {
		id      component.ID
		want    *Config
		wantErr []string // YAML keys the error must name
	}{
		{id: component.NewID(typ), want: createDefaultConfig()},
		{
			id: component.NewIDWithName(typ, "custom"),
			want: &Config{
				NumShards:              4,
				DecisionWait:           30 * time.Second,
				SlowThreshold:          500 * time.Millisecond,
				BaselineRatio:          0.05,
				DecisionCacheSize:      2000,
				ShardQueueSize:         16,
				MaxWait:                time.Minute,
				MaxBufferedBytes:       64 << 20,
				MaxTraceBytes:          1 << 20,
				MaxSpansPerTrace:       500,
				KeepErrors:             false,
				KeepTimeouts:           true,
				KeepSlow:               true,
				KeepRetryAmplification: 9,
				KeepClockSkew:          false,
				AdaptiveSlow: AdaptiveSlowConfig{
					Enabled: true, Quantile: 0.95, MinSamples: 50, MinDuration: 0,
					Window: time.Minute, MaxRoutes: 100,
				},
				BaselineMaxPerSecond: 5,
				Analyze: AnalyzeConfig{
					Enabled: true, Store: component.MustNewID("tracesift_store"), FanoutThreshold: 20, MinRepeatedCalls: 5,
					Skew: clockskew.Config{Window: 5 * time.Minute, MinSamples: 5, Threshold: 250 * time.Millisecond,
						MaxPairs: 10000, MaxSamples: 256},
				},
				RED: red.Config{Enabled: true, Interval: 30 * time.Second, MaxSeries: 500, Dimensions: []string{"http.route", "user.tier"}},
				Services: map[string]ServiceRules{
					"batch-export": {SlowThreshold: ptr(10 * time.Minute), AdaptiveSlow: ptr(false), BaselineRatio: ptr(0.0)},
					"checkout":     {BaselineMaxPerSecond: ptr(50.0)},
				},
			},
		},
		{id: component.NewIDWithName(typ, "negative_shards"), wantErr: []string{"`num_shards`"}},
		{id: component.NewIDWithName(typ, "zero_wait"), wantErr: []string{"`decision_wait` must be positive"}},
		{id: component.NewIDWithName(typ, "negative_slow"), wantErr: []string{"`slow_threshold` must be positive"}},
		{id: component.NewIDWithName(typ, "ratio_above_one"), wantErr: []string{"`baseline_ratio` must be in [0, 1]"}},
		{id: component.NewIDWithName(typ, "ratio_negative"), wantErr: []string{"`baseline_ratio`"}},
		{id: component.NewIDWithName(typ, "zero_cache"), wantErr: []string{"`decision_cache_size` must be positive"}},
		{id: component.NewIDWithName(typ, "zero_queue"), wantErr: []string{"`shard_queue_size` must be positive"}},
		{id: component.NewIDWithName(typ, "several_errors"), wantErr: []string{"`decision_wait`", "`shard_queue_size`"}},
		{id: component.NewIDWithName(typ, "max_wait_below_decision_wait"), wantErr: []string{"`max_wait` (5s) must be at least `decision_wait` (10s)"}},
		{id: component.NewIDWithName(typ, "bad_rules"), wantErr: []string{
			"`adaptive_slow::quantile`", "`adaptive_slow::min_samples`", "`adaptive_slow::window`", "`adaptive_slow::max_routes`",
			"`baseline_max_per_second`", "`services::batch::slow_threshold`", "`services::batch::baseline_ratio`"}},
		{id: component.NewIDWithName(typ, "bad_analyze"), wantErr: []string{
			"`analyze::fanout_threshold`", "`analyze::min_repeated_calls`",
			"`skew_threshold`", "`skew_window`",
			"`keep_retry_amplification` must be 0 (off) or at least 2",
			"`red::interval` must be at least 1s", "`red::max_series` must be at least 1", "`red::dimensions`: at most 6 of them and 12 with the defaults"}},
		{id: component.NewIDWithName(typ, "tiny_buffer"), wantErr: []string{"`max_buffered_bytes` must be at least 2097152", "`max_trace_bytes`", "`max_spans_per_trace`"}},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			cfg := NewFactory().CreateDefaultConfig()
			require.NoError(t, sub.Unmarshal(cfg))

			err = confmap.Validate(cfg)
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				assert.Equal(t, tt.want, cfg)
				return
			}
			require.Error(t, err)
			for _, key := range tt.wantErr {
				assert.Contains(t, err.Error(), key)
			}
		})
	}
}

func TestValidateInvalid(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantKey string
	}{
		{"negative shards", func(c *Config) { c.NumShards = -3 }, "`num_shards`"},
		{"zero decision wait", func(c *Config) { c.DecisionWait = 0 }, "`decision_wait`"},
		{"negative decision wait", func(c *Config) { c.DecisionWait = -time.Second }, "`decision_wait`"},
		{"zero slow threshold", func(c *Config) { c.SlowThreshold = 0 }, "`slow_threshold`"},
		{"ratio above one", func(c *Config) { c.BaselineRatio = 1.0001 }, "`baseline_ratio`"},
		{"ratio negative", func(c *Config) { c.BaselineRatio = -0.5 }, "`baseline_ratio`"},
		{"ratio NaN", func(c *Config) { c.BaselineRatio = math.NaN() }, "`baseline_ratio`"},
		{"zero cache", func(c *Config) { c.DecisionCacheSize = 0 }, "`decision_cache_size`"},
		{"negative queue", func(c *Config) { c.ShardQueueSize = -1 }, "`shard_queue_size`"},
		{"max wait below decision wait", func(c *Config) { c.MaxWait = time.Second }, "`max_wait`"},
		{"buffer below a MiB per shard", func(c *Config) { c.NumShards = 4; c.MaxBufferedBytes = 3 << 20 }, "`max_buffered_bytes`"},
		{"zero trace bytes", func(c *Config) { c.MaxTraceBytes = 0 }, "`max_trace_bytes`"},
		{"zero spans per trace", func(c *Config) { c.MaxSpansPerTrace = 0 }, "`max_spans_per_trace`"},
		{"memory limit below -1", func(c *Config) { c.GoMemoryLimit = -2 }, "`go_memory_limit`"},
		{"compression above the early-decision mark", func(c *Config) { c.BufferCompressionAbove = 0.9 }, "`buffer_compression_above`"},
		{"compression above a negative share", func(c *Config) { c.BufferCompressionAbove = -0.1 }, "`buffer_compression_above`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			tt.mutate(cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantKey)
		})
	}
}

func TestValidateBoundaries(t *testing.T) {
	for _, ratio := range []float64{0, 1} {
		cfg := createDefaultConfig()
		cfg.BaselineRatio = ratio
		assert.NoError(t, cfg.Validate(), "baseline_ratio %v", ratio)
	}
}

func TestDerivedSettings(t *testing.T) {
	cfg := createDefaultConfig()
	assert.Equal(t, runtime.NumCPU(), cfg.shards())
	cfg.NumShards = 3
	assert.Equal(t, 3, cfg.shards())

	cfg.DecisionCacheSize = 10
	assert.Equal(t, 3, cfg.cachePerShard(3))
	cfg.DecisionCacheSize = 2
	assert.Equal(t, 1, cfg.cachePerShard(3), "at least one decision per shard")

	for _, tt := range []struct{ wait, want time.Duration }{
		{10 * time.Second, time.Second},
		{2 * time.Second, 400 * time.Millisecond},
		{20 * time.Millisecond, 10 * time.Millisecond},
		{time.Millisecond, 10 * time.Millisecond},
	} {
		cfg.DecisionWait = tt.wait
		assert.Equal(t, tt.want, cfg.tickInterval(), "decision_wait %s", tt.wait)
	}

	assert.Equal(t, uint64(0), baselineThreshold(0))
	assert.Equal(t, uint64(1)<<56, baselineThreshold(1))
	assert.Equal(t, uint64(1)<<55, baselineThreshold(0.5))
}

func ptr[T any](v T) *T { return &v }

func TestGoMemoryLimit(t *testing.T) {
	cfg := createDefaultConfig()
	assert.Equal(t, int64(320<<20), cfg.goMemoryLimit(), "5/8 of 512 MiB")
	cfg.GoMemoryLimit = -1
	assert.Zero(t, cfg.goMemoryLimit())
	cfg.GoMemoryLimit = 3 << 30
	assert.Equal(t, int64(3<<30), cfg.goMemoryLimit())
}

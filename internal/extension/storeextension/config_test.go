package storeextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/tracesift/tracesift/internal/store"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		id   component.ID
		want *Config
	}{
		{component.NewID(Type), createDefaultConfig()},
		{component.NewIDWithName(Type, "server"), &Config{
			Database:         "traces_prod",
			Embedded:         EmbeddedConfig{Path: "./data"},
			ClickHouse:       ClickHouseConfig{DSN: "clickhouse://default:@localhost:9000"},
			LogWindow:        15 * time.Minute,
			MaxLogsPerTrace:  500,
			Retention:        RetentionConfig{Traces: 72 * time.Hour, Logs: 0},
			MaxSpansPerTrace: 2000,
			MaxQueryTime:     10 * time.Second,
			MaxQueryMemory:   store.DefaultMaxQueryMemory,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			require.NoError(t, confmap.Validate(cfg))
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"bad database", func(c *Config) { c.Database = "a-b; DROP" }, "`database`"},
		{"no store at all", func(c *Config) { c.Embedded.Path = "" }, "`embedded::path`"},
		{"negative window", func(c *Config) { c.LogWindow = -time.Second }, "`log_window`"},
		{"zero logs", func(c *Config) { c.MaxLogsPerTrace = 0 }, "`max_logs_per_trace`"},
		{"zero spans", func(c *Config) { c.MaxSpansPerTrace = 0 }, "`max_spans_per_trace`"},
		{"query time too short", func(c *Config) { c.MaxQueryTime = time.Millisecond }, "`max_query_time`"},
		{"query memory too small", func(c *Config) { c.MaxQueryMemory = 1 << 20 }, "`max_query_memory`"},
		{"negative retention", func(c *Config) { c.Retention.Logs = -time.Hour }, "`retention::logs`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
			tt.mutate(cfg)
			require.ErrorContains(t, cfg.Validate(), tt.wantErr)
		})
	}
	server := createDefaultConfig()
	server.Embedded.Path = ""
	server.ClickHouse.DSN = "clickhouse://localhost:9000"
	require.NoError(t, server.Validate(), "a server needs no data directory")
}

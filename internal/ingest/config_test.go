package ingest

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// loadSub unmarshals the section id of a testdata file over the factory's
// default config, as the collector does.
func loadSub(t *testing.T, file string, id component.ID, f component.Factory) (component.Config, error) {
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

func TestLogsConfig(t *testing.T) {
	f := NewLogsProcessorFactory()
	assert.Equal(t, "tracesift_logs", f.Type().String())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))

	tests := []struct {
		name    string
		want    *LogsConfig
		wantErr string
	}{
		{name: "", want: &LogsConfig{FromAttributes: true, FromBody: true, ParseText: true, TextPatterns: DefaultTextPatterns}},
		{name: "attributes_only", want: &LogsConfig{FromAttributes: true, FromBody: false, ParseText: true, TextPatterns: DefaultTextPatterns}},
		{name: "body_only", want: &LogsConfig{FromAttributes: false, FromBody: true, ParseText: true, TextPatterns: DefaultTextPatterns}},
		{name: "own_pattern", want: &LogsConfig{FromAttributes: true, FromBody: true, ParseText: true,
			TextPatterns: []string{`^(?P<level>[A-Z]+) (?P<time>\S+)`}}},
		{name: "no_text", want: &LogsConfig{FromAttributes: true, FromBody: true, ParseText: false, TextPatterns: DefaultTextPatterns}},
		{name: "bad_pattern", wantErr: "`text_patterns[0]`"},
		{name: "pattern_without_groups", wantErr: "neither a (?P<time>…) nor a (?P<level>…) group"},
		{name: "unknown_key", wantErr: "from_bodies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadSub(t, "logs_config.yaml", component.NewIDWithName(LogsProcessorType, tt.name), f)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestLimitsConfig(t *testing.T) {
	f := NewLimitsExtensionFactory()
	assert.Equal(t, "tracesift_limits", f.Type().String())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))

	tests := []struct {
		name    string
		want    *LimitsConfig
		wantErr string
	}{
		{name: "", want: &LimitsConfig{MaxRequestBodySize: 16 << 20}},
		{name: "4mib", want: &LimitsConfig{MaxRequestBodySize: 4 << 20}},
		{name: "zero", wantErr: "`max_request_body_size` must be positive, got 0"},
		{name: "negative", wantErr: "`max_request_body_size` must be positive, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadSub(t, "limits_config.yaml", component.NewIDWithName(LimitsExtensionType, tt.name), f)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

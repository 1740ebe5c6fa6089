package logsprocessor

import (
	"testing"

	"github.com/tracesift/tracesift/internal/processor/logsprocessor/internal/metadata"
	"github.com/tracesift/tracesift/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
)

func TestLogsConfig(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "tracesift_logs", f.Type().String())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))

	tests := []struct {
		name    string
		want    *Config
		wantErr string
	}{
		{name: "", want: &Config{FromAttributes: true, FromBody: true, ParseText: true, TextPatterns: DefaultTextPatterns}},
		{name: "attributes_only", want: &Config{FromAttributes: true, FromBody: false, ParseText: true, TextPatterns: DefaultTextPatterns}},
		{name: "body_only", want: &Config{FromAttributes: false, FromBody: true, ParseText: true, TextPatterns: DefaultTextPatterns}},
		{name: "own_pattern", want: &Config{FromAttributes: true, FromBody: true, ParseText: true,
			TextPatterns: []string{`^(?P<level>[A-Z]+) (?P<time>\S+)`}}},
		{name: "no_text", want: &Config{FromAttributes: true, FromBody: true, ParseText: false, TextPatterns: DefaultTextPatterns}},
		{name: "bad_pattern", wantErr: "`text_patterns[0]`"},
		{name: "pattern_without_groups", wantErr: "neither a (?P<time>…) nor a (?P<level>…) group"},
		{name: "unknown_key", wantErr: "from_bodies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := testutil.LoadConfig(t, "config.yaml", component.NewIDWithName(metadata.Type, tt.name), f)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

package limitsextension

import (
	"testing"

	"github.com/tracesift/tracesift/internal/extension/limitsextension/internal/metadata"
	"github.com/tracesift/tracesift/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
)

func TestLimitsConfig(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "tracesift_limits", f.Type().String())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))

	tests := []struct {
		name    string
		want    *Config
		wantErr string
	}{
		{name: "", want: &Config{MaxRequestBodySize: 16 << 20}},
		{name: "4mib", want: &Config{MaxRequestBodySize: 4 << 20}},
		{name: "zero", wantErr: "`max_request_body_size` must be positive, got 0"},
		{name: "negative", wantErr: "`max_request_body_size` must be positive, got -1"},
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

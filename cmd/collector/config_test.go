package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/otelcol"
)

// The binary must run with no file at all: the built-in configuration and
// the one shipped for the server deployment both have to be valid.
func TestShippedConfigsAreValid(t *testing.T) {
	t.Setenv("TRACESIFT_CLICKHOUSE_DSN", "clickhouse://default:@localhost:9000")
	for _, uris := range [][]string{{defaultConfigURI}, {"file:../../deploy/collector.yaml"},
		{defaultConfigURI, "file:../../deploy/examples/filelog.yaml"}} {
		t.Run(strings.Join(uris, "+"), func(t *testing.T) {
			set := collectorSettings("test")
			set.ConfigProviderSettings = providerSettings(uris...)
			col, err := otelcol.NewCollector(set)
			require.NoError(t, err)
			require.NoError(t, col.DryRun(context.Background()))
		})
	}
}

func TestUnknownBuiltinConfig(t *testing.T) {
	set := collectorSettings("test")
	set.ConfigProviderSettings = providerSettings("tracesift:nope")
	col, err := otelcol.NewCollector(set)
	require.NoError(t, err)
	err = col.DryRun(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown built-in configuration")
}

func TestHasConfigFlag(t *testing.T) {
	assert.True(t, hasConfigFlag([]string{"--config", "x.yaml"}))
	assert.True(t, hasConfigFlag([]string{"--config=x.yaml"}))
	assert.False(t, hasConfigFlag([]string{"--feature-gates=x"}))
}

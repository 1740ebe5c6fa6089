package main

import (
	"net/url"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The Jaeger data source that deploy/compose.yaml provisions in Grafana
// points at this binary's service and port there.
func TestComposeProvisionsTheJaegerDataSource(t *testing.T) {
	var ds struct {
		Datasources []struct{ Name, Type, URL string }
	}
	b, err := os.ReadFile("../../deploy/grafana/provisioning/datasources/jaeger.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &ds))
	require.Len(t, ds.Datasources, 1)
	assert.Equal(t, "jaeger", ds.Datasources[0].Type)
	u, err := url.Parse(ds.Datasources[0].URL)
	require.NoError(t, err)

	var compose struct {
		Services map[string]struct {
			Environment map[string]string
			Ports       []string
		}
	}
	b, err = os.ReadFile("../../deploy/compose.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &compose))
	svc, ok := compose.Services[u.Hostname()]
	require.True(t, ok, "compose has no service %q", u.Hostname())
	assert.Equal(t, "0.0.0.0:"+u.Port(), svc.Environment["TRACESIFT_QUERY_ENDPOINT"])
	_, ok = compose.Services["grafana"]
	assert.True(t, ok)
}

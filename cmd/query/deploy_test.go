package main

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// The data sources that deploy/compose.yaml provisions in Grafana (the
// tracesift plugin and Jaeger's) point at this binary's service and port
// there, and Grafana is given the plugin and allowed to load it.
func TestComposeProvisionsTheDataSources(t *testing.T) {
	for file, typ := range map[string]string{"jaeger.yaml": "jaeger", "tracesift.yaml": "tracesift-datasource"} {
		checkDataSource(t, file, typ)
	}
}

func checkDataSource(t *testing.T, file, typ string) {
	var ds struct {
		Datasources []struct{ Name, Type, URL string }
	}
	b, err := os.ReadFile("../../deploy/grafana/provisioning/datasources/" + file)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &ds))
	require.Len(t, ds.Datasources, 1)
	assert.Equal(t, typ, ds.Datasources[0].Type)
	u, err := url.Parse(ds.Datasources[0].URL)
	require.NoError(t, err)

	var compose struct {
		Services map[string]struct {
			Environment map[string]string
			Ports       []string
			Volumes     []string
		}
	}
	b, err = os.ReadFile("../../deploy/compose.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &compose))
	svc, ok := compose.Services[u.Hostname()]
	require.True(t, ok, "compose has no service %q", u.Hostname())
	assert.Equal(t, "0.0.0.0:"+u.Port(), svc.Environment["TRACESIFT_QUERY_ENDPOINT"])
	grafana, ok := compose.Services["grafana"]
	require.True(t, ok)
	if typ != "jaeger" {
		assert.Equal(t, typ, grafana.Environment["GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS"])
		assert.Contains(t, grafana.Volumes, "../grafana/tracesift-datasource/dist:/var/lib/grafana/plugins/"+typ+":ro")
		var plugin struct{ ID, Executable string }
		b, err := os.ReadFile("../../grafana/tracesift-datasource/src/plugin.json")
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &plugin))
		assert.Equal(t, typ, plugin.ID)
	}
}

// ClickHouse is reached over the compose network only, and the query
// service reads it as a user that may only SELECT from tracesift's database.
func TestComposeConfinesClickHouse(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Environment map[string]string
			Ports       []string
			Volumes     []string
		}
	}
	b, err := os.ReadFile("../../deploy/compose.yaml")
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &compose))
	ch := compose.Services["clickhouse"]
	assert.Empty(t, ch.Ports, "ClickHouse's ports are not published")
	assert.Contains(t, ch.Volumes, "./clickhouse/initdb:/docker-entrypoint-initdb.d:ro")
	assert.True(t, strings.HasPrefix(compose.Services["query"].Environment["TRACESIFT_CLICKHOUSE_DSN"], "clickhouse://tracesift_query:"),
		"the query service reads as tracesift_query")
	for _, svc := range []string{"collector", "query"} {
		assert.Equal(t, "${TRACESIFT_AUTH_TOKENS:-}", compose.Services[svc].Environment["TRACESIFT_AUTH_TOKENS"], svc)
	}
	script, err := os.ReadFile("../../deploy/clickhouse/initdb/query-user.sh")
	require.NoError(t, err)
	assert.Contains(t, string(script), "CREATE USER IF NOT EXISTS tracesift_query")
	assert.Contains(t, string(script), "readonly = 2")
	assert.Contains(t, string(script), "GRANT SELECT ON tracesift.* TO tracesift_query;")
	assert.NotContains(t, string(script), "GRANT ALL")
}

package dashboards

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/grafana/tracesift-datasource/pkg/plugin"
)

var update = flag.Bool("update", false, "rewrite the repository's dashboards/ from this code")

// dir is the repository's dashboards folder, which deploy/compose.yaml
// provisions.
const dir = "../../../dashboards"

// The JSON in dashboards/ is what this code builds: rewrite it with -update.
func TestDashboardsAreUpToDate(t *testing.T) {
	all, err := All()
	require.NoError(t, err)
	for name, d := range all {
		b, err := json.MarshalIndent(d, "", "  ")
		require.NoError(t, err)
		b = append(b, '\n')
		file := filepath.Join(dir, name)
		if *update {
			require.NoError(t, os.WriteFile(file, b, 0o644))
			continue
		}
		want, err := os.ReadFile(file)
		require.NoError(t, err, "go test ./dashboards -update writes it")
		assert.True(t, bytes.Equal(want, b), "%s is stale: go test ./dashboards -update", name)
	}
}

var varRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

// Each panel queries the data source with a query type it answers and a
// model it reads, names only variables its dashboard defines, and links to
// dashboards that exist.
func TestDashboardsHang(t *testing.T) {
	all, err := All()
	require.NoError(t, err)
	uids := map[string]bool{}
	for _, d := range all {
		uids[*d.Uid] = true
	}
	builtin := []string{"__value", "__url_time_range", "__from", "__to", "__interval"}
	for name, d := range all {
		b, err := json.Marshal(d)
		require.NoError(t, err)
		var doc struct {
			Templating struct{ List []struct{ Name string } }
			Panels     []struct {
				Type       string
				Title      string
				Targets    []json.RawMessage
				Datasource struct{ Type, UID string }
			}
		}
		require.NoError(t, json.Unmarshal(b, &doc))
		var vars []string
		for _, v := range doc.Templating.List {
			vars = append(vars, v.Name)
		}
		for _, m := range varRef.FindAllStringSubmatch(string(b), -1) {
			assert.True(t, slices.Contains(vars, m[1]) || slices.Contains(builtin, m[1]), "%s names $%s, not defined", name, m[1])
		}
		panels := 0
		for _, p := range doc.Panels {
			if p.Type == "row" {
				continue
			}
			panels++
			assert.Equal(t, plugin.ID, p.Datasource.Type, "%s: %s", name, p.Title)
			require.Len(t, p.Targets, 1, "%s: %s", name, p.Title)
			var target struct {
				QueryType string `json:"queryType"`
				plugin.QueryModel
			}
			dec := json.NewDecoder(bytes.NewReader(p.Targets[0]))
			require.NoError(t, dec.Decode(&target), "%s: %s", name, p.Title)
			assert.Contains(t, plugin.QueryTypes, target.QueryType, "%s: %s", name, p.Title)
		}
		assert.NotZero(t, panels, name)
		for _, m := range regexp.MustCompile(`/d/([a-z0-9-]+)/`).FindAllStringSubmatch(string(b), -1) {
			assert.True(t, uids[m[1]], "%s links to a dashboard %s that does not exist", name, m[1])
		}
	}
	assert.Len(t, uids, 4)
}

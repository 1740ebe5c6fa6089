// Package dashboards builds tracesift's troubleshooting dashboards as code
// (the Grafana Foundation SDK) on the tracesift data source; the JSON Grafana
// provisions is written into the repository's dashboards/ folder by the
// tests (go test ./dashboards -update), which also fail when it is stale.
package dashboards

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"

	"github.com/tracesift/tracesift/grafana/tracesift-datasource/pkg/plugin"
)

// Query is a panel's target: a query of the tracesift data source, as its
// query editor saves it.
type Query struct {
	RefID      string                `json:"refId"`
	QueryType  string                `json:"queryType"`
	Datasource *common.DataSourceRef `json:"datasource,omitempty"`
	plugin.QueryModel
}

var _ variants.Dataquery = Query{}

func (Query) ImplementsDataqueryVariant() {}

func (Query) DataqueryType() string { return plugin.ID }

// Validate checks the query type against those the data source answers.
func (q Query) Validate() error {
	if !slices.Contains(plugin.QueryTypes, q.QueryType) {
		return fmt.Errorf("query %s: unknown query type %q", q.RefID, q.QueryType)
	}
	return nil
}

func (q Query) Equals(other variants.Dataquery) bool { return reflect.DeepEqual(q, other) }

// query builds a Query (cog.Builder) on the dashboard's data source
// variable.
type query Query

func (q query) Build() (variants.Dataquery, error) {
	out := Query(q)
	if out.RefID == "" {
		out.RefID = "A"
	}
	out.Datasource = dsRef()
	return out, out.Validate()
}

func q(queryType string, m plugin.QueryModel) query {
	return query{QueryType: queryType, QueryModel: m}
}

// dsVar is the dashboards' data source variable: any tracesift data source.
const dsVar = "ds"

func dsRef() *common.DataSourceRef {
	typ, uid := plugin.ID, "${"+dsVar+"}"
	return &common.DataSourceRef{Type: &typ, Uid: &uid}
}

// Command gpx_tracesift is the backend of Grafana's tracesift data source: it
// answers Grafana's queries from tracesift's query API.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/tracesift/tracesift/grafana/tracesift-datasource/pkg/plugin"
)

func main() {
	if err := datasource.Manage(plugin.ID, plugin.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error(err.Error())
		os.Exit(1)
	}
}

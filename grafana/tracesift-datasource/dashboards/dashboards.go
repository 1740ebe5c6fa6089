package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/logs"
	"github.com/grafana/grafana-foundation-sdk/go/nodegraph"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"

	"github.com/tracesift/tracesift/grafana/tracesift-datasource/pkg/plugin"
)

// The dashboards' uids: links between them use these.
const (
	OverviewUID  = "tracesift-overview"
	ServiceUID   = "tracesift-service"
	TraceUID     = "tracesift-trace"
	ClockSkewUID = "tracesift-clock-skew"
)

// All are the dashboards by file name.
func All() (map[string]dashboard.Dashboard, error) {
	out := map[string]dashboard.Dashboard{}
	for name, b := range map[string]*dashboard.DashboardBuilder{
		"tracesift-overview.json":   overview(),
		"tracesift-service.json":    service(),
		"tracesift-trace.json":      trace(),
		"tracesift-clock-skew.json": clockSkew(),
	} {
		d, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = d
	}
	return out, nil
}

func base(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"tracesift"}).
		Editable().
		Time("now-1h", "now").
		Refresh("1m").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder(dsVar).Label("Data source").Type(plugin.ID)).
		// Every tracesift dashboard, a click away, with the time and variables kept.
		Link(dashboard.NewDashboardLinkBuilder("tracesift").Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"tracesift"}).AsDropdown(true).KeepTime(true).IncludeVars(true))
}

// variable is a query variable of the data source (services(),
// operations($service), instances($service)).
func variable(name, label, expr string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).Label(label).Datasource(*dsRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(expr)}).Definition(expr).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Sort(dashboard.VariableSortAlphabeticalAsc)
}

// toTrace links a field holding trace ids to the Trace dashboard (the data
// source's own link opens the trace in Explore).
func toTrace(field string) (string, []dashboard.DynamicConfigValue) {
	return field, []dashboard.DynamicConfigValue{{Id: "links", Value: []map[string]any{{
		"title": "Open in the Trace dashboard",
		"url":   "/d/" + TraceUID + "/trace?var-" + dsVar + "=${" + dsVar + "}&var-traceId=${__value.raw}&${__url_time_range}",
	}}}}
}

func tablePanel(title, desc string, target query, traceField string) *table.PanelBuilder {
	p := table.NewPanelBuilder().Title(title).Description(desc).Datasource(*dsRef()).WithTarget(target).
		Span(12).Height(8)
	if traceField != "" {
		p.OverrideByName(toTrace(traceField))
	}
	return p
}

// redPanel is one of RED's three figures (requests, errors, p99) of a RED
// query, the others filtered out by name; only selected groups when match
// is set (a regexp over the group values).
func redPanel(title, figure, unit string, target query, match string) *timeseries.PanelBuilder {
	pattern := ".* " + figure + "$"
	if match != "" {
		pattern = "(" + match + ") " + figure + "$"
	}
	return timeseries.NewPanelBuilder().Title(title).Datasource(*dsRef()).WithTarget(target).
		WithTransformation(dashboard.DataTransformerConfig{Id: "filterFieldsByName",
			Options: map[string]any{"include": map[string]any{"pattern": pattern}}}).
		Unit(unit).Span(8).Height(8).FillOpacity(10)
}

func findingsPanel(title, desc, kind string) *table.PanelBuilder {
	return tablePanel(title, desc, q("findings", plugin.QueryModel{Kind: kind, Service: "$service"}), "exampleTrace")
}

func overview() *dashboard.DashboardBuilder {
	red := q("red", plugin.QueryModel{Service: "$service", GroupBy: "operation"})
	return base(OverviewUID, "tracesift — overview",
		"Where requests fail or slow down: the service graph of the stored traces, RED on all traffic, findings across traces, error and slow traces, error logs").
		// Every service by default: the RED row repeats for each one chosen.
		WithVariable(variable("service", "Services", "services()").Multi(true).IncludeAll(true)).
		WithRow(dashboard.NewRowBuilder("Services")).
		WithPanel(nodegraph.NewPanelBuilder().Title("Service graph").
			Description("Calls between services in the stored traces: calls, p99 and errors per edge; a service's requests and error rate on all traffic").
			Datasource(*dsRef()).WithTarget(q("serviceGraph", plugin.QueryModel{})).Span(24).Height(12)).
		WithRow(dashboard.NewRowBuilder("What went wrong")).
		WithPanel(tablePanel("Findings", "What the analyzers found across traces, by kind, service and subject; the worst trace of each",
			q("findings", plugin.QueryModel{}), "exampleTrace")).
		WithPanel(tablePanel("Error traces", "Traces with an error span, newest first",
			q("search", plugin.QueryModel{ErrorsOnly: true, Limit: 20}), "traceID")).
		WithPanel(tablePanel("Slow traces", "Traces of a second or more, newest first",
			q("search", plugin.QueryModel{MinDuration: "1s", Limit: 20}), "traceID")).
		WithPanel(logs.NewPanelBuilder().Title("Error logs").Description("Log lines of severity ERROR; each links to its trace").
			Datasource(*dsRef()).WithTarget(q("logs", plugin.QueryModel{Severity: "ERROR", Limit: 100})).
			Span(12).Height(8).ShowTime(true).EnableLogDetails(true).WrapLogMessage(true)).
		WithRow(dashboard.NewRowBuilder("RED of $service, on all traffic").Repeat("service")).
		WithPanel(redPanel("Requests by operation", "requests", "short", red, "")).
		WithPanel(redPanel("Errors by operation", "errors", "short", red, "")).
		WithPanel(redPanel("p99 by operation", "p99", "ms", red, ""))
}

func service() *dashboard.DashboardBuilder {
	byOp := q("red", plugin.QueryModel{Service: "$service", Operation: "$operation", GroupBy: "operation"})
	byInstance := q("red", plugin.QueryModel{Service: "$service", Operation: "$operation", GroupBy: "instance"})
	return base(ServiceUID, "tracesift — service",
		"One service: RED per operation and per instance (outliers named), failing against healthy requests, and the resilience findings: slowest hops, retries, throttling, fail-fast, fallbacks, pools").
		WithVariable(variable("service", "Service", "services()")).
		WithVariable(variable("operation", "Operation", "operations($service)").IncludeAll(true).AllValue("")).
		WithVariable(variable("instance", "Instance", "instances($service)").Multi(true).IncludeAll(true).AllValue(".*")).
		WithRow(dashboard.NewRowBuilder("RED by operation, on all traffic")).
		WithPanel(redPanel("Requests", "requests", "short", byOp, "")).
		WithPanel(redPanel("Errors", "errors", "short", byOp, "")).
		WithPanel(redPanel("p99", "p99", "ms", byOp, "")).
		WithRow(dashboard.NewRowBuilder("RED by instance: one of them, or all?")).
		WithPanel(redPanel("Requests by instance", "requests", "short", byInstance, "${instance:regex}")).
		WithPanel(redPanel("Errors by instance", "errors", "short", byInstance, "${instance:regex}")).
		WithPanel(redPanel("p99 by instance", "p99", "ms", byInstance, "${instance:regex}")).
		WithPanel(findingsPanel("Instance outliers", "Instances whose error rate or p99 stands out from their peers'", "instance_outlier")).
		WithPanel(tablePanel("Failing vs healthy",
			"What the failing requests (errors, timeouts, slower than 1 s) have in common, most telling first: a canary version or a bad instance tops the list",
			q("compare", plugin.QueryModel{Service: "$service", Operation: "$operation"}), "")).
		WithRow(dashboard.NewRowBuilder("Why it is slow or failing")).
		WithPanel(findingsPanel("Slowest hops", "The span that took the most of each trace's time", "slowest_hop")).
		WithPanel(findingsPanel("Retry amplification", "Same-name sibling calls: retries, and how they multiply down the call tree", "retry_fanout")).
		WithPanel(findingsPanel("Retry budget", "Call edges retrying more than 10 % of their calls", "retry_budget")).
		WithPanel(findingsPanel("Throttling", "Calls answered 429 or RESOURCE_EXHAUSTED", "throttled")).
		WithPanel(findingsPanel("Fail-fast", "Calls refused at once: breakers open, bulkheads full, rate limiters", "fast_fail")).
		WithPanel(findingsPanel("Fallbacks", "Spans that succeeded although a call they made failed", "fallback")).
		WithPanel(findingsPanel("Pool exhaustion", "Connection and thread pools that ran dry", "pool_exhausted")).
		WithPanel(findingsPanel("Timeouts", "Where timeouts started", "timeout")).
		WithRow(dashboard.NewRowBuilder("Traces and logs of $service")).
		WithPanel(tablePanel("Traces", "Traces through $service (named $operation when one is chosen), newest first",
			q("search", plugin.QueryModel{Service: "$service", Operation: "$operation", Limit: 50}), "traceID")).
		WithPanel(logs.NewPanelBuilder().Title("Logs").Datasource(*dsRef()).
			WithTarget(q("logs", plugin.QueryModel{Service: "$service", Limit: 200})).
			Span(12).Height(8).ShowTime(true).EnableLogDetails(true).WrapLogMessage(true))
}

func trace() *dashboard.DashboardBuilder {
	return base(TraceUID, "tracesift — trace",
		"One trace by id: its spans on the skew-corrected timeline, its log lines on the spans they belong to, the findings as span warnings, the hosts' clock offsets as tags").
		WithVariable(dashboard.NewTextBoxVariableBuilder("traceId").Label("Trace ID")).
		WithPanel(dashboard.NewPanelBuilder().Type("traces").Title("Trace ${traceId}").Datasource(*dsRef()).
			WithTarget(q("trace", plugin.QueryModel{TraceID: "${traceId}"})).Span(24).Height(20)).
		WithPanel(logs.NewPanelBuilder().Title("Logs of the trace, in time order").Datasource(*dsRef()).
			WithTarget(q("logs", plugin.QueryModel{TraceID: "${traceId}", Limit: 1000})).
			Span(24).Height(10).ShowTime(true).EnableLogDetails(true).WrapLogMessage(true).
			SortOrder(common.LogsSortOrderAscending))
}

func clockSkew() *dashboard.DashboardBuilder {
	return base(ClockSkewUID, "tracesift — clock skew",
		"Host pairs whose clocks disagree by the skew threshold (100 ms) or more: beyond it, timing across the two hosts cannot be trusted").
		WithPanel(timeseries.NewPanelBuilder().Title("Clock offset by host pair").
			Description("clock(host B) − clock(host A), as the sampler estimated it from many traces' calls").
			Datasource(*dsRef()).WithTarget(q("clockSkew", plugin.QueryModel{})).
			WithTransformation(dashboard.DataTransformerConfig{Id: "filterFieldsByName",
				Options: map[string]any{"include": map[string]any{"pattern": "^clock"}}}).
			Unit("ms").Span(24).Height(10).ShowPoints(common.VisibilityModeAlways)).
		WithPanel(tablePanel("Traces with clock skew", "clock_skew findings by host pair: how often, how far, the worst trace",
			q("findings", plugin.QueryModel{Kind: "clock_skew"}), "exampleTrace").Span(24))
}

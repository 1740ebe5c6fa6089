package plugin

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// keyValue is a tag, a process tag or a log field of Grafana's trace view
// (TraceKeyValuePair in @grafana/data's types/trace.ts).
type keyValue struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// traceLog is a span log of the trace view (TraceLog: timestamp in ms).
type traceLog struct {
	Timestamp float64    `json:"timestamp"`
	Name      string     `json:"name,omitempty"`
	Fields    []keyValue `json:"fields"`
}

// reference is a span's link (TraceSpanReference; the parent is a field of
// its own).
type reference struct {
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only this file's own types are marshalled
	}
	return b
}

func kvs(m map[string]string) []keyValue {
	out := make([]keyValue, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, keyValue{Key: k, Value: m[k]})
	}
	return out
}

// ms is Unix nanoseconds (or a duration in nanoseconds) in milliseconds, as
// the trace view reads times, to the microsecond: a Unix time in µs is exact
// in a float64, in ns it is not.
func ms(ns uint64) float64 { return float64(ns/1000) / 1000 }

// traceLink links a field holding trace ids to this data source's trace
// query (Grafana's InternalDataLink): a click opens the trace.
func (d *Datasource) traceLink() data.DataLink {
	return data.DataLink{Title: "Trace ${__value.raw}", Internal: &data.InternalDataLink{
		DatasourceUID: d.uid, DatasourceName: d.name,
		Query: map[string]any{"queryType": queryTrace, "traceId": "${__value.raw}"}}}
}

// trace reads one trace: its spans on the skew-corrected timeline, each
// with its events and the trace's log lines as logs, the findings on it as
// warnings, and its host's clock offset as a tag.
func (d *Datasource) trace(ctx context.Context, q backend.DataQuery, m QueryModel) (data.Frames, error) {
	id := strings.ToLower(strings.TrimSpace(m.TraceID))
	if id == "" {
		return nil, badQuery("enter a trace id")
	}
	var t apiTrace
	if err := d.api.get(ctx, "/api/v1/traces/"+url.PathEscape(id), nil, &t); err != nil {
		return nil, err
	}
	// The fields Grafana's trace view reads by name (TraceSpanRow in
	// @grafana/data's types/trace.ts; startTime, duration and log
	// timestamps in milliseconds).
	f := data.NewFrame("trace",
		data.NewField("traceID", nil, []string{}),
		data.NewField("spanID", nil, []string{}),
		data.NewField("parentSpanID", nil, []string{}),
		data.NewField("operationName", nil, []string{}),
		data.NewField("serviceName", nil, []string{}),
		data.NewField("serviceTags", nil, []json.RawMessage{}),
		data.NewField("startTime", nil, []float64{}),
		data.NewField("duration", nil, []float64{}),
		data.NewField("logs", nil, []json.RawMessage{}),
		data.NewField("references", nil, []json.RawMessage{}),
		data.NewField("tags", nil, []json.RawMessage{}),
		data.NewField("kind", nil, []string{}),
		data.NewField("statusCode", nil, []int64{}),
		data.NewField("statusMessage", nil, []string{}),
		data.NewField("instrumentationLibraryName", nil, []string{}),
		data.NewField("instrumentationLibraryVersion", nil, []string{}),
		data.NewField("traceState", nil, []string{}),
		data.NewField("warnings", nil, []json.RawMessage{}),
		data.NewField("stackTraces", nil, []json.RawMessage{}),
	)
	f.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTrace})
	logs, warnings := map[string][]traceLog{}, map[string][]string{}
	root, has := "", make(map[string]bool, len(t.Spans))
	for _, s := range t.Spans {
		has[s.SpanID] = true
		if root == "" && s.ParentSpanID == "" {
			root = s.SpanID
		}
	}
	if root == "" && len(t.Spans) > 0 {
		root = t.Spans[0].SpanID
	}
	for _, l := range t.Logs {
		at := l.SpanID
		if !has[at] {
			at = root // a line of the trace but of no span it has
		}
		fields := []keyValue{{"event", "log"}}
		if l.SeverityText != "" {
			fields = append(fields, keyValue{"level", l.SeverityText})
		}
		fields = append(fields, keyValue{"message", l.Body})
		fields = append(fields, kvs(l.Attributes)...)
		logs[at] = append(logs[at], traceLog{Timestamp: ms(l.AdjustedTime), Name: "log", Fields: fields})
	}
	for _, fd := range t.Findings {
		w := fd.Kind + ": " + fd.Summary
		placed := false
		for _, sid := range fd.SpanIDs {
			if has[sid] {
				warnings[sid] = append(warnings[sid], w)
				placed = true
			}
		}
		if !placed && root != "" {
			warnings[root] = append(warnings[root], w)
		}
	}
	for _, s := range t.Spans {
		// Event times are raw: they move with their span's start.
		shift := int64(s.AdjustedStart) - int64(s.Start)
		spanLogs := []traceLog{}
		var stacks []string
		for _, e := range s.Events {
			spanLogs = append(spanLogs, traceLog{Timestamp: ms(uint64(int64(e.Time) + shift)), Name: e.Name,
				Fields: append([]keyValue{{"event", e.Name}}, kvs(e.Attributes)...)})
			if st := e.Attributes["exception.stacktrace"]; st != "" {
				stacks = append(stacks, st)
			}
		}
		spanLogs = append(spanLogs, logs[s.SpanID]...)
		slices.SortStableFunc(spanLogs, func(a, b traceLog) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		tags := kvs(s.Attributes)
		if s.Host != "" {
			tags = append(tags, keyValue{"host", s.Host})
		}
		if off := t.ClockOffsets[s.Host]; off != 0 && s.Host != "" {
			tags = append(tags, keyValue{"tracesift.clock_offset_ms", float64(off) / 1e6})
		}
		if s.Status.Code == "ERROR" {
			tags = append(tags, keyValue{"error", true}) // the trace view marks a span with it
		}
		refs := make([]reference, len(s.Links))
		for i, l := range s.Links {
			refs[i] = reference{TraceID: l.TraceID, SpanID: l.SpanID}
		}
		res := maps.Clone(s.Resource)
		delete(res, "service.name")
		f.AppendRow(s.TraceID, s.SpanID, s.ParentSpanID, s.Name, s.Service, raw(kvs(res)),
			ms(s.AdjustedStart), ms(s.DurationNano), raw(spanLogs), raw(refs), raw(tags),
			kindOf(s.Kind), statusCode(s.Status.Code), s.Status.Message, s.ScopeName, s.ScopeVersion, s.TraceState,
			raw(warnings[s.SpanID]), raw(stacks))
	}
	return data.Frames{f}, nil
}

// kindOf is the trace view's kind: "" for unspecified.
func kindOf(k string) string {
	if k == "unspecified" {
		return ""
	}
	return k
}

// statusCode is the OpenTelemetry code the trace view reads: 0 unset, 1 ok,
// 2 error.
func statusCode(code string) int64 {
	switch code {
	case "OK":
		return 1
	case "ERROR":
		return 2
	}
	return 0
}

// search lists the traces that match, newest first, each linked to its
// trace query.
func (d *Datasource) search(ctx context.Context, q backend.DataQuery, m QueryModel) (data.Frames, error) {
	p := timeParams(q.TimeRange.From, q.TimeRange.To)
	for k, v := range map[string]string{"service": m.Service, "operation": m.Operation,
		"minDuration": m.MinDuration, "maxDuration": m.MaxDuration} {
		if v != "" {
			p.Set(k, v)
		}
	}
	if m.ErrorsOnly {
		p.Set("status", "error")
	}
	if err := attributeParams(m.Attributes, p); err != nil {
		return nil, err
	}
	setLimit(m, p)
	var out struct{ Traces []apiTraceSummary }
	if err := d.api.get(ctx, "/api/v1/traces", p, &out); err != nil {
		return nil, err
	}
	f := data.NewFrame("traces",
		data.NewField("traceID", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Trace ID",
			Links: []data.DataLink{d.traceLink()}}),
		data.NewField("traceName", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Trace name"}),
		data.NewField("startTime", nil, []time.Time{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Start time"}),
		data.NewField("duration", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Duration", Unit: "ms"}),
		data.NewField("spans", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Spans"}),
		data.NewField("errors", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Error spans"}),
		data.NewField("services", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Services"}),
	)
	f.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTable})
	for _, s := range out.Traces {
		f.AppendRow(s.TraceID, s.RootService+": "+s.RootName, time.Unix(0, int64(s.Start)).UTC(), ms(s.DurationNano),
			s.SpanCount, s.ErrorCount, strings.Join(s.Services, ", "))
	}
	return data.Frames{f}, nil
}

// logs is the log search as a logs frame (Grafana's data plane "log-lines"
// contract: timestamp, body, severity, id, labels), each line linked to its
// trace when it has one.
func (d *Datasource) logs(ctx context.Context, q backend.DataQuery, m QueryModel) (data.Frames, error) {
	p := timeParams(q.TimeRange.From, q.TimeRange.To)
	for k, v := range map[string]string{"service": m.Service, "q": m.Words, "severity": m.Severity, "traceId": m.TraceID} {
		if v != "" {
			p.Set(k, v)
		}
	}
	if err := attributeParams(m.Attributes, p); err != nil {
		return nil, err
	}
	setLimit(m, p)
	var out struct{ Logs []apiLog }
	if err := d.api.get(ctx, "/api/v1/logs", p, &out); err != nil {
		return nil, err
	}
	f := data.NewFrame("logs",
		data.NewField("timestamp", nil, []time.Time{}),
		data.NewField("body", nil, []string{}),
		data.NewField("severity", nil, []string{}),
		data.NewField("id", nil, []string{}),
		data.NewField("labels", nil, []json.RawMessage{}),
		data.NewField("traceID", nil, []string{}).SetConfig(&data.FieldConfig{Links: []data.DataLink{d.traceLink()}}),
		data.NewField("spanID", nil, []string{}),
	)
	f.SetMeta(&data.FrameMeta{Type: data.FrameTypeLogLines, PreferredVisualization: data.VisTypeLogs})
	for i, l := range out.Logs {
		labels := map[string]string{"service": l.Service}
		if l.Host != "" {
			labels["host"] = l.Host
		}
		maps.Copy(labels, l.Attributes)
		f.AppendRow(time.Unix(0, int64(l.Time)).UTC(), l.Body, strings.ToLower(l.SeverityText),
			fmt.Sprintf("%d_%d", l.Time, i), raw(labels), l.TraceID, l.SpanID)
	}
	return data.Frames{f}, nil
}

// findings is the findings across traces as a table, the worst example
// trace of each linked to its trace query.
func (d *Datasource) findings(ctx context.Context, q backend.DataQuery, m QueryModel) (data.Frames, error) {
	p := timeParams(q.TimeRange.From, q.TimeRange.To)
	if m.Kind != "" {
		p.Set("kind", m.Kind)
	}
	if m.Service != "" {
		p.Set("service", m.Service)
	}
	setLimit(m, p)
	var out struct{ Findings []apiFindingSummary }
	if err := d.api.get(ctx, "/api/v1/findings", p, &out); err != nil {
		return nil, err
	}
	f := data.NewFrame("findings",
		data.NewField("kind", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Kind"}),
		data.NewField("service", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Service"}),
		data.NewField("subject", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Subject"}),
		data.NewField("count", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Count"}),
		data.NewField("traces", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Traces"}),
		data.NewField("p50", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Value p50"}),
		data.NewField("max", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Value max"}),
		data.NewField("lastSeen", nil, []time.Time{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Last seen"}),
		data.NewField("exampleTrace", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Worst trace",
			Links: []data.DataLink{d.traceLink()}}),
	)
	f.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTable})
	for _, s := range out.Findings {
		example := ""
		if len(s.ExampleTraceIDs) > 0 {
			example = s.ExampleTraceIDs[0]
		}
		f.AppendRow(s.Kind, s.Service, s.Subject, s.Count, s.Traces, s.P50Value, s.MaxValue,
			time.Unix(0, int64(s.LastSeen)).UTC(), example)
	}
	return data.Frames{f}, nil
}

// serviceGraph is the calls between services in the stored traces as
// Grafana's node graph reads them: a nodes frame (id, title, mainstat,
// secondarystat, arc__*) and an edges frame (id, source, target, mainstat,
// secondarystat, detail__*).
func (d *Datasource) serviceGraph(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	var out struct{ Dependencies []apiDependency }
	if err := d.api.get(ctx, "/api/v1/dependencies", timeParams(q.TimeRange.From, q.TimeRange.To), &out); err != nil {
		return nil, err
	}
	type node struct{ calls, errors int64 } // of the calls it received
	nodes := map[string]*node{}
	edges := data.NewFrame("edges",
		data.NewField("id", nil, []string{}),
		data.NewField("source", nil, []string{}),
		data.NewField("target", nil, []string{}),
		data.NewField("mainstat", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Calls"}),
		data.NewField("secondarystat", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "p99", Unit: "ms"}),
		data.NewField("detail__errors", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Errors"}),
		data.NewField("detail__errorRate", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Error rate",
			Unit: "percentunit"}),
	)
	edges.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeNodeGraph})
	for _, e := range out.Dependencies {
		edges.AppendRow(e.Parent+"--"+e.Child, e.Parent, e.Child, e.Calls, e.P99Ms, e.Errors, e.ErrorRate)
		for _, s := range []string{e.Parent, e.Child} {
			if nodes[s] == nil {
				nodes[s] = &node{}
			}
		}
		nodes[e.Child].calls += e.Calls
		nodes[e.Child].errors += e.Errors
	}
	// A service's own figures come from RED on all traffic (exact, whatever
	// was sampled) when it has RED in the window; else from the calls it
	// received in the stored traces, which lean towards errors.
	names := slices.Sorted(maps.Keys(nodes))
	red := d.redTotals(ctx, q, names)
	nf := data.NewFrame("nodes",
		data.NewField("id", nil, []string{}),
		data.NewField("title", nil, []string{}),
		data.NewField("subtitle", nil, []string{}),
		data.NewField("mainstat", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Requests"}),
		data.NewField("secondarystat", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Error rate",
			Unit: "percentunit"}),
		data.NewField("arc__errors", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Errors",
			Color: map[string]any{"mode": "fixed", "fixedColor": "red"}}),
		data.NewField("arc__ok", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "OK",
			Color: map[string]any{"mode": "fixed", "fixedColor": "green"}}),
		data.NewField("detail__tracedCalls", nil, []int64{}).SetConfig(&data.FieldConfig{
			DisplayNameFromDS: "Calls received in stored traces"}),
	)
	nf.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeNodeGraph})
	for i, s := range names {
		n := nodes[s]
		requests, errs, source := n.calls, n.errors, "stored traces"
		if t := red[i]; t.Requests > 0 {
			requests, errs, source = t.Requests, t.Errors, "all traffic"
		}
		rate, ok := 0.0, 1.0 // nothing counted: all green
		if requests > 0 {
			rate = float64(errs) / float64(requests)
			ok = 1 - rate
		}
		nf.AppendRow(s, s, source, requests, rate, rate, ok, n.calls)
	}
	return data.Frames{nf, edges}, nil
}

// maxREDNodes bounds the services whose RED a service graph reads, and
// redReaders how many it reads at once.
const (
	maxREDNodes = 100
	redReaders  = 8
)

// redTotals are the services' requests and errors on all traffic in the
// query's window (zero where a service has no RED or its read failed).
func (d *Datasource) redTotals(ctx context.Context, q backend.DataQuery, services []string) []apiREDGroup {
	out := make([]apiREDGroup, len(services))
	var wg sync.WaitGroup
	sem := make(chan struct{}, redReaders)
	for i, s := range services[:min(len(services), maxREDNodes)] {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			p := timeParams(q.TimeRange.From, q.TimeRange.To)
			p.Set("service", s)
			p.Set("groupBy", "operation")
			var red struct{ Groups []apiREDGroup }
			if d.api.get(ctx, "/api/v1/red", p, &red) != nil {
				return
			}
			for _, g := range red.Groups {
				out[i].Requests += g.Requests
				out[i].Errors += g.Errors
			}
		})
	}
	wg.Wait()
	return out
}

// red is a service's requests, errors and p99 over time on all traffic
// (GET /api/v1/red), one frame a group (by operation by default), labelled
// by it.
func (d *Datasource) red(ctx context.Context, q backend.DataQuery, m QueryModel) (data.Frames, error) {
	if m.Service == "" {
		return nil, badQuery("RED needs a service")
	}
	p := timeParams(q.TimeRange.From, q.TimeRange.To)
	p.Set("service", m.Service)
	if m.Operation != "" {
		p.Set("operation", m.Operation)
	}
	groupBy := cmp.Or(m.GroupBy, "operation")
	p.Set("groupBy", groupBy)
	p.Set("step", step(q).String())
	setLimit(m, p)
	var out struct{ Groups []apiREDGroup }
	if err := d.api.get(ctx, "/api/v1/red", p, &out); err != nil {
		return nil, err
	}
	frames := data.Frames{}
	for _, g := range out.Groups {
		labels := data.Labels{"service": g.Service, groupBy: g.Value}
		if g.Operation != "" && groupBy != "operation" {
			labels["operation"] = g.Operation
		}
		f := data.NewFrame(g.Value,
			data.NewField("time", nil, []time.Time{}),
			data.NewField("requests", labels, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: g.Value + " requests"}),
			data.NewField("errors", labels, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: g.Value + " errors"}),
			data.NewField("p99", labels, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: g.Value + " p99",
				Unit: "ms"}),
		)
		f.SetMeta(&data.FrameMeta{Type: data.FrameTypeTimeSeriesWide, PreferredVisualization: data.VisTypeGraph})
		for _, pt := range g.Points {
			f.AppendRow(time.Unix(0, int64(pt.Time)).UTC(), pt.Requests, pt.Errors, pt.P99Ms)
		}
		frames = append(frames, f)
	}
	return frames, nil
}

// compare sets a service's failing requests against its healthy ones along
// every dimension (GET /api/v1/compare), most telling first, as a table.
func (d *Datasource) compare(ctx context.Context, q backend.DataQuery, m QueryModel) (data.Frames, error) {
	if m.Service == "" {
		return nil, badQuery("the comparison needs a service")
	}
	p := timeParams(q.TimeRange.From, q.TimeRange.To)
	p.Set("service", m.Service)
	if m.Operation != "" {
		p.Set("operation", m.Operation)
	}
	if m.MinDuration != "" {
		p.Set("slow", m.MinDuration) // slower than this counts as failing
	}
	setLimit(m, p)
	var out apiCompare
	if err := d.api.get(ctx, "/api/v1/compare", p, &out); err != nil {
		return nil, err
	}
	share := func(name string) *data.FieldConfig {
		return &data.FieldConfig{DisplayNameFromDS: name, Unit: "percentunit"}
	}
	f := data.NewFrame("compare",
		data.NewField("key", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Dimension"}),
		data.NewField("value", nil, []string{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Value"}),
		data.NewField("failing", nil, []float64{}).SetConfig(share("Of the failing")),
		data.NewField("healthy", nil, []float64{}).SetConfig(share("Of the healthy")),
		data.NewField("lift", nil, []float64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Lift"}),
		data.NewField("failingCount", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Failing requests"}),
		data.NewField("healthyCount", nil, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Healthy requests"}),
	)
	f.SetMeta(&data.FrameMeta{PreferredVisualization: data.VisTypeTable,
		Custom: map[string]any{"failing": out.Failing, "healthy": out.Healthy}})
	for _, dim := range out.Dimensions {
		f.AppendRow(dim.Key, dim.Value, dim.Failing, dim.Healthy, dim.Lift, dim.FailingCount, dim.HealthyCount)
	}
	return data.Frames{f}, nil
}

// clockSkew is each skewed host pair's clock offset over time (GET
// /api/v1/clock-skew): a time series a pair, labelled by its hosts.
func (d *Datasource) clockSkew(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	var out struct{ Pairs []apiClockPair }
	if err := d.api.get(ctx, "/api/v1/clock-skew", timeParams(q.TimeRange.From, q.TimeRange.To), &out); err != nil {
		return nil, err
	}
	frames := data.Frames{}
	for _, pair := range out.Pairs {
		name := pair.HostA + " → " + pair.HostB
		labels := data.Labels{"host_a": pair.HostA, "host_b": pair.HostB}
		f := data.NewFrame(name,
			data.NewField("time", nil, []time.Time{}),
			data.NewField("offset", labels, []float64{}).SetConfig(&data.FieldConfig{
				DisplayNameFromDS: "clock(" + pair.HostB + ") − clock(" + pair.HostA + ")", Unit: "ms"}),
			data.NewField("samples", labels, []int64{}).SetConfig(&data.FieldConfig{DisplayNameFromDS: name + " samples"}),
		)
		f.SetMeta(&data.FrameMeta{Type: data.FrameTypeTimeSeriesWide, PreferredVisualization: data.VisTypeGraph})
		for _, pt := range pair.Points {
			f.AppendRow(time.Unix(0, int64(pt.Time)).UTC(), pt.OffsetMs, pt.Samples)
		}
		frames = append(frames, f)
	}
	return frames, nil
}

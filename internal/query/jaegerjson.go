package query

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// The types below are Jaeger's query JSON (jaeger-query's /api, the model of
// its UI), which Grafana's Jaeger data source reads: times and durations in
// microseconds as numbers, tags as typed key-values, processes by id.

type jaegerResponse struct {
	Data   any           `json:"data"`
	Total  int           `json:"total"`
	Limit  int           `json:"limit"`
	Offset int           `json:"offset"`
	Errors []jaegerError `json:"errors"` // null on success: older Grafana fails on any other value
}

type jaegerError struct {
	Code int    `json:"code,omitempty"`
	Msg  string `json:"msg"`
}

type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
	Warnings  []string                 `json:"warnings"`
}

type jaegerSpan struct {
	TraceID       string            `json:"traceID"`
	SpanID        string            `json:"spanID"`
	Flags         uint32            `json:"flags,omitempty"`
	OperationName string            `json:"operationName"`
	References    []jaegerReference `json:"references"`
	StartTime     uint64            `json:"startTime"` // µs
	Duration      uint64            `json:"duration"`  // µs
	Tags          []jaegerKeyValue  `json:"tags"`
	Logs          []jaegerLog       `json:"logs"`
	ProcessID     string            `json:"processID"`
	Warnings      []string          `json:"warnings"`
}

type jaegerReference struct {
	RefType string `json:"refType"` // CHILD_OF, FOLLOWS_FROM
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerProcess struct {
	ServiceName string           `json:"serviceName"`
	Tags        []jaegerKeyValue `json:"tags"`
}

type jaegerLog struct {
	Timestamp uint64           `json:"timestamp"` // µs
	Fields    []jaegerKeyValue `json:"fields"`
}

// jaegerKeyValue is a tag. The store keeps attribute values as text, so
// they are strings; error is a bool, as Jaeger writes it.
type jaegerKeyValue struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type jaegerDependency struct {
	Parent    string `json:"parent"`
	Child     string `json:"child"`
	CallCount uint64 `json:"callCount"`
}

func strTag(k, v string) jaegerKeyValue { return jaegerKeyValue{Key: k, Type: "string", Value: v} }

// strTags are m's entries as string tags, by key.
func strTags(m map[string]string) []jaegerKeyValue {
	out := make([]jaegerKeyValue, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, strTag(k, m[k]))
	}
	return out
}

// jaegerTraceID is a trace id as Jaeger writes it: 16 hex digits when its
// high half is zero, else 32.
func jaegerTraceID(id string) string {
	if len(id) == 32 && strings.TrimLeft(id[:16], "0") == "" {
		return id[16:]
	}
	return id
}

// jaegerTraceOf renders t as Jaeger's UI model does from OTLP: a process per
// distinct resource; span kind, status, scope and trace state as tags;
// events, and the trace's logs, as span logs; the findings as span warnings.
// Times are corrected for clock skew as in traceJSON, and a span whose host
// was corrected says so in a warning.
func jaegerTraceOf(t *model.Trace) jaegerTrace {
	v := viewOf(t)
	id := jaegerTraceID(t.TraceID)
	out := jaegerTrace{TraceID: id, Spans: make([]jaegerSpan, len(t.Spans)), Processes: map[string]jaegerProcess{}}
	processOf := map[string]string{} // a resource's key → its process id
	index := make(map[string]int, len(t.Spans))
	root := -1
	for i := range t.Spans {
		s := &t.Spans[i]
		index[s.SpanID] = i
		if root < 0 && s.ParentSpanID == "" {
			root = i
		}
		key := resourceKey(s)
		pid := processOf[key]
		if pid == "" {
			pid = fmt.Sprintf("p%d", len(processOf)+1)
			processOf[key] = pid
			res := maps.Clone(s.Resource)
			delete(res, "service.name")
			out.Processes[pid] = jaegerProcess{ServiceName: s.Service, Tags: strTags(res)}
		}
		out.Spans[i] = jaegerSpanOf(s, id, pid, v)
	}
	if root < 0 && len(t.Spans) > 0 {
		root = 0 // a trace whose root was not received: logs and warnings go to its first span
	}
	if root < 0 {
		return out
	}
	for i := range t.Logs {
		l := &t.Logs[i]
		at, ok := index[l.SpanID]
		if !ok {
			at = root
		}
		sp := &out.Spans[at]
		sp.Logs = append(sp.Logs, jaegerLogOf(l, v.adj.Time(l.Host, l.TimeUnixNano)))
	}
	for i := range out.Spans {
		slices.SortStableFunc(out.Spans[i].Logs, func(a, b jaegerLog) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	}
	for _, f := range v.findings {
		w := f.Kind + ": " + f.Summary
		placed := false
		for _, sid := range f.SpanIDs {
			if i, ok := index[sid]; ok {
				out.Spans[i].Warnings = append(out.Spans[i].Warnings, w)
				placed = true
			}
		}
		if !placed {
			out.Spans[root].Warnings = append(out.Spans[root].Warnings, w)
		}
	}
	return out
}

// resourceKey tells resources apart: the service and every entry.
func resourceKey(s *model.Span) string {
	var b strings.Builder
	b.WriteString(s.Service)
	for _, k := range slices.Sorted(maps.Keys(s.Resource)) {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(s.Resource[k])
	}
	return b.String()
}

func jaegerSpanOf(s *model.Span, traceID, pid string, v traceView) jaegerSpan {
	start := v.adj.Time(s.Host, s.StartUnixNano)
	out := jaegerSpan{TraceID: traceID, SpanID: s.SpanID, Flags: 1, OperationName: s.Name,
		References: []jaegerReference{}, StartTime: start / 1000, Duration: s.Duration() / 1000,
		Logs: make([]jaegerLog, 0, len(s.Events)), ProcessID: pid}
	if s.ParentSpanID != "" {
		out.References = append(out.References, jaegerReference{RefType: "CHILD_OF", TraceID: traceID, SpanID: s.ParentSpanID})
	}
	for _, l := range s.Links {
		out.References = append(out.References, jaegerReference{RefType: "FOLLOWS_FROM", TraceID: jaegerTraceID(l.TraceID),
			SpanID: l.SpanID})
	}
	// Tags in the order of the OpenTelemetry Collector's translation to
	// Jaeger: scope, attributes, kind, status, trace state.
	var tags []jaegerKeyValue
	if s.ScopeName != "" {
		tags = append(tags, strTag("otel.scope.name", s.ScopeName))
	}
	if s.ScopeVersion != "" {
		tags = append(tags, strTag("otel.scope.version", s.ScopeVersion))
	}
	tags = append(tags, strTags(s.Attributes)...)
	if k := s.Kind.String(); k != model.KindUnspecified.String() {
		tags = append(tags, strTag("span.kind", k))
	}
	switch s.StatusCode {
	case model.StatusOK:
		tags = append(tags, strTag("otel.status_code", "OK"))
	case model.StatusError:
		tags = append(tags, strTag("otel.status_code", "ERROR"), jaegerKeyValue{Key: "error", Type: "bool", Value: true})
	}
	if s.StatusMessage != "" {
		tags = append(tags, strTag("otel.status_description", s.StatusMessage))
	}
	if s.TraceState != "" {
		tags = append(tags, strTag("w3c.tracestate", s.TraceState))
	}
	out.Tags = tags
	for _, e := range s.Events {
		var fields []jaegerKeyValue
		if _, named := e.Attributes["event"]; e.Name != "" && !named {
			fields = append(fields, strTag("event", e.Name))
		}
		out.Logs = append(out.Logs, jaegerLog{Timestamp: v.adj.Time(s.Host, e.TimeUnixNano) / 1000,
			Fields: append(fields, strTags(e.Attributes)...)})
	}
	if off := v.offsets[s.Host]; off != 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("clock skew: %s's clock is %s off the root's host; "+
			"this span's times are corrected by %s", s.Host, signed(time.Duration(off)), signed(-time.Duration(off))))
	}
	return out
}

// signed is d with its sign, rounded to the microsecond: +300ms, -1.5s.
func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.Round(time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// jaegerLogOf is a log record as a span log: "event" log, its severity as
// level, its body as message, then its attributes.
func jaegerLogOf(l *model.Log, adjusted uint64) jaegerLog {
	fields := []jaegerKeyValue{strTag("event", "log")}
	if l.SeverityText != "" {
		fields = append(fields, strTag("level", l.SeverityText))
	}
	fields = append(fields, strTag("message", l.Body))
	for _, kv := range strTags(l.Attributes) {
		if kv.Key != "event" && kv.Key != "level" && kv.Key != "message" {
			fields = append(fields, kv)
		}
	}
	return jaegerLog{Timestamp: adjusted / 1000, Fields: fields}
}

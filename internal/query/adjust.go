package query

import (
	"slices"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/clockskew"
	"github.com/tracesift/tracesift/internal/store"
)

var kindOf = map[string]analyze.Kind{
	"internal": analyze.KindInternal, "server": analyze.KindServer, "client": analyze.KindClient,
	"producer": analyze.KindProducer, "consumer": analyze.KindConsumer,
}

// adjustTimes fills the adjusted times of t's spans and logs with the clock
// skew between their hosts, estimated from the trace's own cross-host calls
// (clockskew.AdjustTrace: a server span is centred in the client span that
// called it), and orders the logs by adjusted time. Raw times are untouched.
func adjustTimes(t *store.Trace) {
	if len(t.Spans) == 0 {
		return
	}
	at := analyze.Trace{TraceID: t.TraceID, Spans: make([]analyze.Span, len(t.Spans))}
	for i := range t.Spans {
		s := &t.Spans[i]
		at.Spans[i] = analyze.Span{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: kindOf[s.Kind],
			Service: s.Service, Host: s.Host, StartUnixNano: s.StartTimeUnixNano, EndUnixNano: s.EndTimeUnixNano}
	}
	adj := clockskew.AdjustTrace(&at)
	for i := range t.Spans {
		s := &t.Spans[i]
		s.AdjustedStartTimeUnixNano, s.AdjustedEndTimeUnixNano = adj.Spans[i].Start, adj.Spans[i].End
	}
	for i := range t.Logs {
		l := &t.Logs[i]
		l.AdjustedTimeUnixNano = adj.Time(l.Host, l.TimeUnixNano)
	}
	slices.SortStableFunc(t.Logs, func(a, b store.Log) int {
		switch {
		case a.AdjustedTimeUnixNano < b.AdjustedTimeUnixNano:
			return -1
		case a.AdjustedTimeUnixNano > b.AdjustedTimeUnixNano:
			return 1
		}
		return 0
	})
}

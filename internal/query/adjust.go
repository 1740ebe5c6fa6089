package query

import (
	"cmp"
	"slices"
	"time"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/clockskew"
	"github.com/tracesift/tracesift/internal/store"
)

var kindOf = map[string]analyze.Kind{
	"internal": analyze.KindInternal, "server": analyze.KindServer, "client": analyze.KindClient,
	"producer": analyze.KindProducer, "consumer": analyze.KindConsumer,
}

// adjustTimes fills the adjusted times of t's spans and logs, correcting the
// clock skew between their hosts, and orders the logs by adjusted time; raw
// times are untouched. The offsets are those stored when the trace was kept
// (the sampler's per-host-pair estimate over many traces, t.ClockOffsets);
// a trace stored without them is adjusted by its own cross-host calls
// (clockskew.AdjustTrace: a server span centred in the client span that
// called it), and t.ClockOffsets says what was used.
func adjustTimes(t *store.Trace) {
	if len(t.Spans) == 0 {
		return
	}
	if t.ClockOffsets == nil {
		t.ClockOffsets = map[string]int64{}
	}
	if len(t.ClockOffsets) == 0 {
		at := analyze.Trace{TraceID: t.TraceID, Spans: make([]analyze.Span, len(t.Spans))}
		for i := range t.Spans {
			s := &t.Spans[i]
			at.Spans[i] = analyze.Span{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: kindOf[s.Kind],
				Service: s.Service, Host: s.Host, StartUnixNano: s.StartTimeUnixNano, EndUnixNano: s.EndTimeUnixNano}
		}
		for _, h := range clockskew.AdjustTrace(&at).Hosts {
			if h.Offset != 0 {
				t.ClockOffsets[h.Host] = int64(h.Offset)
			}
		}
	}
	var adj clockskew.Adjustments
	for host, off := range t.ClockOffsets {
		adj.Hosts = append(adj.Hosts, clockskew.HostOffset{Host: host, Offset: time.Duration(off)})
	}
	for i := range t.Spans {
		s := &t.Spans[i]
		s.AdjustedStartTimeUnixNano, s.AdjustedEndTimeUnixNano = adj.Time(s.Host, s.StartTimeUnixNano), adj.Time(s.Host, s.EndTimeUnixNano)
	}
	for i := range t.Logs {
		l := &t.Logs[i]
		l.AdjustedTimeUnixNano = adj.Time(l.Host, l.TimeUnixNano)
	}
	slices.SortStableFunc(t.Logs, func(a, b store.Log) int {
		return cmp.Compare(a.AdjustedTimeUnixNano, b.AdjustedTimeUnixNano)
	})
}

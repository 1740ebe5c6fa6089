package query

import (
	"math"
	"slices"

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
	shift := func(host string, ts uint64) uint64 {
		off := t.ClockOffsets[host]
		switch {
		case off > 0 && uint64(off) > ts:
			return 0
		case off < 0 && ts > math.MaxUint64-uint64(-off):
			return math.MaxUint64
		}
		return uint64(int64(ts) - off)
	}
	for i := range t.Spans {
		s := &t.Spans[i]
		s.AdjustedStartTimeUnixNano, s.AdjustedEndTimeUnixNano = shift(s.Host, s.StartTimeUnixNano), shift(s.Host, s.EndTimeUnixNano)
	}
	for i := range t.Logs {
		l := &t.Logs[i]
		l.AdjustedTimeUnixNano = shift(l.Host, l.TimeUnixNano)
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

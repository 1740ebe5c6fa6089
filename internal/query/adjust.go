package query

import (
	"cmp"
	"slices"
	"time"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/clockskew"
	"github.com/tracesift/tracesift/internal/model"
)

// traceJSON is t as the API serves it, its spans' and logs' times also
// corrected for the clock skew between their hosts, the logs in adjusted
// time order; raw times are untouched. The offsets are those stored when the
// trace was kept (the sampler's per-host-pair estimate over many traces,
// t.ClockOffsets); a trace stored without them is adjusted by its own
// cross-host calls (clockskew.AdjustTrace: a server span centred in the
// client span that called it), and ClockOffsets says what was used.
func traceJSON(t *model.Trace) *Trace {
	offsets := t.ClockOffsets
	if len(offsets) == 0 {
		offsets = map[string]int64{}
		if len(t.Spans) > 0 {
			for _, h := range clockskew.AdjustTrace(t).Hosts {
				if h.Offset != 0 {
					offsets[h.Host] = int64(h.Offset)
				}
			}
		}
	}
	var adj clockskew.Adjustments
	for host, off := range offsets {
		adj.Hosts = append(adj.Hosts, clockskew.HostOffset{Host: host, Offset: time.Duration(off)})
	}
	out := &Trace{TraceID: t.TraceID, Spans: make([]Span, len(t.Spans)), Logs: make([]Log, len(t.Logs)),
		Findings: make([]Finding, len(t.Findings)), ClockOffsets: offsets}
	for i := range t.Spans {
		out.Spans[i] = spanJSON(&t.Spans[i], adj.Time)
	}
	for i := range t.Logs {
		l := &t.Logs[i]
		out.Logs[i] = logJSON(l, adj.Time(l.Host, l.TimeUnixNano))
	}
	slices.SortStableFunc(out.Logs, func(a, b Log) int {
		return cmp.Compare(a.AdjustedTimeUnixNano, b.AdjustedTimeUnixNano)
	})
	for i := range t.Findings {
		out.Findings[i] = findingJSON(&t.Findings[i])
	}
	// Skew the sampler's estimate found only after the trace was decided.
	for _, f := range clockskew.StoredFindings(t) {
		out.Findings = append(out.Findings, findingJSON(&f))
	}
	// Pools that ran dry, told by the trace's logs only.
	for _, f := range analyze.LogPoolFindings(t) {
		out.Findings = append(out.Findings, findingJSON(&f))
	}
	return out
}

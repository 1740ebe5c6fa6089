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
// corrected for the clock skew between their hosts (traceView), the logs in
// adjusted time order; raw times are untouched. Brief spans leave out their
// details (SpanBrief).
func traceJSON(t *model.Trace, brief bool) any {
	v := viewOf(t)
	if brief {
		return traceOf(t, v, spanBrief)
	}
	return traceOf(t, v, spanJSON)
}

func traceOf[S Span | SpanBrief](t *model.Trace, v traceView, span func(*model.Span, func(string, uint64) uint64) S) *TraceOf[S] {
	out := &TraceOf[S]{TraceID: t.TraceID, Spans: make([]S, len(t.Spans)), Logs: make([]Log, len(t.Logs)),
		Findings: make([]Finding, len(v.findings)), ClockOffsets: v.offsets, Truncated: t.Truncated}
	for i := range t.Spans {
		out.Spans[i] = span(&t.Spans[i], v.adj.Time)
	}
	for i := range t.Logs {
		l := &t.Logs[i]
		out.Logs[i] = logJSON(l, v.adj.Time(l.Host, l.TimeUnixNano))
	}
	slices.SortStableFunc(out.Logs, func(a, b Log) int {
		return cmp.Compare(a.AdjustedTimeUnixNano, b.AdjustedTimeUnixNano)
	})
	for i := range v.findings {
		out.Findings[i] = findingJSON(&v.findings[i])
	}
	return out
}

// traceView is what every rendering of a trace shows besides its spans and
// logs: the clock offsets its times are corrected by, and all its findings.
type traceView struct {
	// offsets are those stored when the trace was kept (the sampler's
	// per-host-pair estimate over many traces, t.ClockOffsets); a trace
	// stored without them is adjusted by its own cross-host calls
	// (clockskew.AdjustTrace: a server span centred in the client span that
	// called it).
	offsets  map[string]int64
	adj      clockskew.Adjustments
	findings []model.Finding
}

func viewOf(t *model.Trace) traceView {
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
	v := traceView{offsets: offsets, findings: slices.Clone(t.Findings)}
	for host, off := range offsets {
		v.adj.Hosts = append(v.adj.Hosts, clockskew.HostOffset{Host: host, Offset: time.Duration(off)})
	}
	// Skew the sampler's estimate found only after the trace was decided.
	v.findings = append(v.findings, clockskew.StoredFindings(t)...)
	// Pools that ran dry, told by the trace's logs only.
	v.findings = append(v.findings, analyze.LogPoolFindings(t)...)
	return v
}

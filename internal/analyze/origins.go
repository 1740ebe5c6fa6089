package analyze

import (
	"strings"

	"github.com/tracesift/tracesift/internal/model"
)

// Origin marks.
const (
	markSelf  uint8 = 1 // the span has the property
	markBelow uint8 = 2 // a descendant has it
)

// origins returns, by start, the spans marked markSelf in marks with no
// marked descendant; marks gets markBelow filled in.
func (ix *index) origins(marks []uint8) []int32 {
	for k := len(ix.pre) - 1; k >= 0; k-- {
		i := ix.pre[k]
		if p := ix.parent[i]; p >= 0 && marks[i] != 0 {
			marks[p] |= markBelow
		}
	}
	out := ix.scratch[:0]
	for _, i := range ix.pre {
		if marks[i] == markSelf {
			out = append(out, i)
		}
	}
	ix.sortByStart(out)
	ix.scratch = out
	return out
}

// ancestorsMarked counts the ancestors of i marked markSelf and returns the
// topmost one (-1 when none).
func (ix *index) ancestorsMarked(i int32, marks []uint8) (int, int32) {
	n, top := 0, int32(-1)
	for p := ix.parent[i]; p >= 0; p = ix.parent[p] {
		if marks[p]&markSelf != 0 {
			n++
			top = p
		}
	}
	return n, top
}

// markWhere marks the spans that have a property (markSelf) and reports
// whether any has.
func (ix *index) markWhere(has func(*model.Span) bool) ([]uint8, bool) {
	marks := sized(ix.marks, ix.n)
	ix.marks = marks
	any := false
	for _, i := range ix.pre {
		if has(ix.span(i)) {
			marks[i] = markSelf
			any = true
		}
	}
	return marks, any
}

// timeouts appends to out where timeouts started, one finding per origin (at most
// Options.MaxOrigins, by start time). A span timed out when its HTTP status
// is 504 or 408, its gRPC status is DEADLINE_EXCEEDED, its error.type, an
// exception event's exception.type or exception.message, or its status
// message names a timeout or a deadline ("timeout", "timed out",
// "deadline", any case). An origin is a span that timed out none of whose
// descendants did: the deepest timeout of its branch — the CLIENT span
// whose callee never reported (no child span from another service or of
// kind SERVER), or the span below which nothing timed out. Value is the
// span's duration in milliseconds; service is its service.
func (ix *index) timeouts(out []model.Finding, opts Options) []model.Finding {
	marks, ok := ix.markWhere(func(s *model.Span) bool { c, _ := s.TimedOut(); return c != model.NotTimedOut })
	if !ok {
		return out
	}
	origins := ix.origins(marks)
	for k, i := range origins[:min(len(origins), opts.MaxOrigins)] {
		s := ix.span(i)
		var b strings.Builder
		b.WriteString("timeout started at ")
		b.WriteString(spanLabel(s))
		b.WriteString(": timed out after ")
		b.WriteString(fmtDur(ix.dur(i)))
		b.WriteString(" (")
		b.WriteString(timeoutReason(s))
		b.WriteString(")")
		if (s.Kind == model.KindClient || s.Kind == model.KindProducer) && dbSystem(s) == "" { // databases never report
			callee := int32(-1)
			for _, c := range ix.children(i) {
				if cs := ix.span(c); cs.Kind == model.KindServer || cs.Kind == model.KindConsumer || cs.Service != "" && cs.Service != s.Service {
					callee = c
					break
				}
			}
			if callee < 0 {
				b.WriteString("; its callee never reported")
				if p := attrPeer(s).String(); p != "" {
					b.WriteString(" (" + clip(p, 80) + ")")
				}
			} else {
				b.WriteString("; its callee " + spanLabel(ix.span(callee)) + " did not time out (took " + fmtDur(ix.dur(callee)) + ")")
			}
		}
		if n, top := ix.ancestorsMarked(i, marks); n > 0 {
			b.WriteString("; it propagated up " + plural(n, "span", "spans") + " to " + spanLabel(ix.span(top)))
		}
		out = append(out, ix.originFinding(KindTimeout, "timeout", i, k, len(origins), &b))
	}
	return out
}

// originFinding is the finding about origin i, the k-th of n, whose summary
// b holds so far; value is the span's duration in ms.
func (ix *index) originFinding(kind, what string, i int32, k, n int, b *strings.Builder) model.Finding {
	if n > 1 {
		b.WriteString(" (" + itoa(k+1) + " of " + itoa(n) + " " + what + " origins)")
	}
	s := ix.span(i)
	return model.Finding{Kind: kind, SpanIDs: []string{s.SpanID}, Service: s.Service, Value: ms(ix.dur(i)), Summary: b.String()}
}

// errorOrigins appends to out where errors started, one finding per origin (at most
// Options.MaxOrigins, by start time): a span with status ERROR none of whose
// descendants has status ERROR — the root cause rather than the failures it
// caused upstream. Value is the span's duration in milliseconds; service is
// its service; the summary quotes the status message, else the exception
// (type: message), else error.type or the HTTP/gRPC status.
func (ix *index) errorOrigins(out []model.Finding, opts Options) []model.Finding {
	marks, ok := ix.markWhere(func(s *model.Span) bool { return s.StatusCode == model.StatusError })
	if !ok {
		return out
	}
	origins := ix.origins(marks)
	for k, i := range origins[:min(len(origins), opts.MaxOrigins)] {
		s := ix.span(i)
		var b strings.Builder
		b.WriteString("error started at ")
		b.WriteString(spanLabel(s))
		if txt := errorText(s); txt != "" {
			b.WriteString(": ")
			b.WriteString(txt)
		}
		n, top := ix.ancestorsMarked(i, marks)
		switch {
		case n > 0:
			b.WriteString("; it propagated up " + plural(n, "span", "spans") + " to " + spanLabel(ix.span(top)))
		case ix.parent[i] >= 0:
			b.WriteString("; no caller failed because of it")
		}
		out = append(out, ix.originFinding(KindErrorOrigin, "error", i, k, len(origins), &b))
	}
	return out
}

package analyze

import (
	"slices"
	"strings"

	"github.com/tracesift/tracesift/internal/model"
)

// linkedConsumer reports whether s is a messaging consumer linked to its
// producer rather than parented by it.
func linkedConsumer(s *model.Span) bool {
	if len(s.Links) == 0 {
		return false
	}
	return s.Kind == model.KindConsumer || s.Attributes["messaging.system"] != ""
}

// brokenPropagation appends to out broken trace context, in up to two findings:
//
//   - spans whose parent span id is set but whose parent never arrived
//     (lost, or context propagated wrongly): value is how many, spanIds are
//     them by start (capped at Options.MaxSpanIDs), service is the service
//     with most of them;
//   - more than one root span (spans without a parent span id): value is how
//     many, spanIds are them by start, service is the service of the first
//     one that is not the trace root (the one that started a new root
//     instead of continuing the context).
//
// A messaging consumer (kind CONSUMER, or with messaging.system set) that
// has a link is expected to be linked rather than parented and is counted
// in neither.
func (ix *index) brokenPropagation(out []model.Finding, opts Options) []model.Finding {
	var orphans, roots []int32
	for _, i := range ix.tops {
		s := ix.span(i)
		switch {
		case linkedConsumer(s):
		case ix.flags[i]&flagOrphan != 0:
			orphans = append(orphans, i)
		case ix.flags[i]&flagTrueRoot != 0:
			roots = append(roots, i)
		}
	}
	if len(orphans) > 0 {
		svc := mostCommonService(ix, orphans)
		ids, cut := spanIDs(ix, orphans, opts.MaxSpanIDs)
		var b strings.Builder
		b.WriteString(plural(len(orphans), "span names a parent", "spans name a parent"))
		b.WriteString(" that never arrived (")
		b.WriteString(spanLabel(ix.span(orphans[0])))
		if len(orphans) > 1 {
			b.WriteString(", …")
		}
		b.WriteString("): spans were lost or trace context was not propagated")
		if ix.root >= 0 && ix.flags[ix.root]&flagTrueRoot == 0 {
			b.WriteString("; the trace has no root span")
		}
		b.WriteString(cut)
		out = append(out, model.Finding{
			Kind:    KindBrokenPropagation,
			SpanIDs: ids,
			Service: svc,
			Value:   float64(len(orphans)),
			Summary: b.String(),
		})
	}
	if len(roots) > 1 {
		other := roots[0]
		if other == ix.root {
			other = roots[1]
		}
		ids, cut := spanIDs(ix, roots, opts.MaxSpanIDs)
		var b strings.Builder
		b.WriteString("trace has " + itoa(len(roots)) + " root spans (")
		for k, i := range roots[:min(len(roots), 3)] {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(spanLabel(ix.span(i)))
		}
		if len(roots) > 3 {
			b.WriteString(", …")
		}
		b.WriteString("): ")
		b.WriteString(spanLabel(ix.span(other)))
		b.WriteString(" started a new root instead of continuing the incoming trace context")
		b.WriteString(cut)
		out = append(out, model.Finding{
			Kind:    KindBrokenPropagation,
			SpanIDs: ids,
			Service: ix.span(other).Service,
			Value:   float64(len(roots)),
			Summary: b.String(),
		})
	}
	return out
}

// fanout appends to out entry spans — SERVER and CONSUMER spans, and top-level
// spans — that made at least Options.FanoutThreshold downstream calls:
// CLIENT and PRODUCER spans below them, not counting those below the next
// entry span down. Value is the count, spanIds the entry span, service its
// service. Findings are by the entry span's start.
func (ix *index) fanout(out []model.Finding, opts Options) []model.Finding {
	owner := sized(ix.scratch, ix.n) // nearest entry span strictly above
	counts := sized(ix.counts, ix.n)
	ix.scratch, ix.counts = owner, counts
	flagged := false
	for _, i := range ix.pre {
		p := ix.parent[i]
		if p < 0 {
			owner[i] = -1
			continue
		}
		if ix.isEntry(p) {
			owner[i] = p
		} else {
			owner[i] = owner[p]
		}
		if e := owner[i]; e >= 0 && ix.isCall(i) {
			counts[e]++
			flagged = flagged || int(counts[e]) >= opts.FanoutThreshold
		}
	}
	if !flagged {
		return out
	}
	var entries []int32
	for _, i := range ix.pre {
		if int(counts[i]) >= opts.FanoutThreshold {
			entries = append(entries, i)
		}
	}
	ix.sortByStart(entries)
	for _, e := range entries {
		// The most frequent call (kind, name, peer) of the entry.
		var calls []int32
		for _, i := range ix.pre[ix.prePos[e]+1:] {
			if ix.depth[i] <= ix.depth[e] {
				break
			}
			if owner[i] == e && ix.isCall(i) {
				calls = append(calls, i)
			}
		}
		peers := make([]peerID, ix.n)
		for _, c := range calls {
			peers[c] = attrPeer(ix.span(c))
		}
		slices.SortFunc(calls, func(a, b int32) int {
			if c := strings.Compare(ix.span(a).Name, ix.span(b).Name); c != 0 {
				return c
			}
			if c := peers[a].compare(peers[b]); c != 0 {
				return c
			}
			return int(a - b)
		})
		most, mostAt := 0, 0
		for lo := 0; lo < len(calls); {
			hi := lo + 1
			for hi < len(calls) && ix.span(calls[hi]).Name == ix.span(calls[lo]).Name && peers[calls[hi]] == peers[calls[lo]] {
				hi++
			}
			if hi-lo > most {
				most, mostAt = hi-lo, lo
			}
			lo = hi
		}
		s := ix.span(e)
		summary := spanLabel(s) + " made " + itoa(int(counts[e])) + " downstream calls (threshold " + itoa(opts.FanoutThreshold) + ")"
		if most > 1 {
			c := calls[mostAt]
			what := clip(ix.span(c).Name, 80)
			if p := peers[c].String(); p != "" {
				what = clip(p, 80) + " " + what
			}
			summary += "; " + itoa(most) + " of them are " + what
		}
		out = append(out, model.Finding{
			Kind:    KindFanout,
			SpanIDs: []string{s.SpanID},
			Service: s.Service,
			Value:   float64(counts[e]),
			Summary: summary,
		})
	}
	return out
}

// mostCommonService is the service of most of spans (sorted by start); ties
// go to the service that comes first.
func mostCommonService(ix *index, spans []int32) string {
	byService := slices.Clone(spans)
	slices.SortStableFunc(byService, func(a, b int32) int {
		return strings.Compare(ix.span(a).Service, ix.span(b).Service)
	})
	best, bestN, bestFirst := "", 0, len(spans)
	for lo := 0; lo < len(byService); {
		svc := ix.span(byService[lo]).Service
		hi := lo + 1
		for hi < len(byService) && ix.span(byService[hi]).Service == svc {
			hi++
		}
		first := slices.Index(spans, byService[lo]) // stable: the run's earliest
		if hi-lo > bestN || hi-lo == bestN && first < bestFirst {
			best, bestN, bestFirst = svc, hi-lo, first
		}
		lo = hi
	}
	return best
}

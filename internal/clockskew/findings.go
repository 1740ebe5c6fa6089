package clockskew

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/model"
)

// Findings returns one clock_skew finding per host pair called across in t
// whose ESTIMATE (over the window, with at least MinSamples samples, never
// this trace's observation alone) is at least Threshold either way. obs is
// PairOffsets(t), computed when nil. Call it after Observe(now, obs) so that
// the trace counts too.
//
// A finding is oriented by the pair's first observation in obs (its parent
// is the caller, its child the callee):
//
//   - Value is clock(callee host) − clock(caller host) in milliseconds:
//     positive when the callee's clock is ahead;
//   - SpanIDs are the child spans of every call between the two hosts in
//     this trace, either way, in obs order;
//   - Service is the callee's service; Subject is "caller host → callee host";
//   - Summary names both hosts and services, callee first.
//
// Findings come in the order of their pair's first observation.
func (e *Estimator) Findings(t *model.Trace, obs []Observation) []model.Finding {
	if obs == nil {
		obs = PairOffsets(t)
	}
	var out []model.Finding
	var seen map[Pair]struct{}
	if len(obs) > linearLookupMax {
		seen = make(map[Pair]struct{})
	}
	for i := range obs {
		o := &obs[i]
		if !o.usable() {
			continue
		}
		p := o.Pair()
		if seen != nil {
			if _, dup := seen[p]; dup {
				continue
			}
			seen[p] = struct{}{}
		} else if seenBefore(obs[:i], p) {
			continue
		}
		var ids []string
		var evidence *Observation // the call of the pair lying farthest outside its parent
		for j := i; j < len(obs); j++ {
			if obs[j].usable() && obs[j].Pair() == p {
				ids = append(ids, obs[j].ChildSpanID)
				if evidence == nil || obs[j].Outside > evidence.Outside {
					evidence = &obs[j]
				}
			}
		}
		off, _, ok := e.Estimate(o.From, o.To)
		text := ""
		if !ok || (off < e.cfg.Threshold && off > -e.cfg.Threshold) {
			// No estimate says so (yet); a call lying outside its parent by
			// more than the threshold does.
			if evidence.Outside <= e.cfg.Threshold {
				continue
			}
			off = evidence.Offset
			if evidence.From != o.From {
				off = -off
			}
			text = "; seen in this trace alone: a server span lies " + formatMillis(evidence.Outside) +
				" ms outside the call that made it"
		}
		out = append(out, model.Finding{
			Kind:    analyze.KindClockSkew,
			SpanIDs: ids,
			Service: o.ToService,
			Subject: o.From + " → " + o.To,
			Value:   float64(off) / float64(time.Millisecond),
			Summary: summary(o, off) + text,
		})
	}
	return out
}

func seenBefore(obs []Observation, p Pair) bool {
	for j := range obs {
		if obs[j].usable() && obs[j].Pair() == p {
			return true
		}
	}
	return false
}

// summary reads "host db-1 (payments) clock is 240 ms ahead of host web-1
// (checkout); ...", off being clock(o.To) − clock(o.From).
func summary(o *Observation, off time.Duration) string {
	dir := " ms ahead of host "
	if off < 0 {
		dir = " ms behind host "
		off = -off
	}
	return "host " + o.To + " (" + o.ToService + ") clock is " + formatMillis(off) + dir +
		o.From + " (" + o.FromService + "); cross-host timing and log order between them are corrected by this offset"
}

// formatMillis renders a non-negative duration in milliseconds to a tenth:
// 240 for 240.04 ms, 240.5 for 240.46 ms.
func formatMillis(d time.Duration) string {
	return strconv.FormatFloat(math.Round(float64(d)/float64(time.Millisecond/10))/10, 'f', -1, 64)
}

// StoredFindings are the clock_skew findings t gets from estimates stored
// after it was kept (t.SkewedPairs): one for each skewed host pair it
// crosses that none of t.Findings names, as Findings would have raised had
// the estimate had its samples when the trace was decided.
func StoredFindings(t *model.Trace) []model.Finding {
	if len(t.SkewedPairs) == 0 {
		return nil
	}
	have := map[Pair]bool{}
	for _, f := range t.Findings {
		if f.Kind != analyze.KindClockSkew {
			continue
		}
		if from, to, ok := strings.Cut(f.Subject, " → "); ok {
			p, _ := PairOf(from, to)
			have[p] = true
		}
	}
	obs := PairOffsets(t)
	var out []model.Finding
	for i := range obs {
		o := &obs[i]
		p := o.Pair()
		if !o.usable() || have[p] {
			continue
		}
		have[p] = true
		var est *model.ClockPair
		for k := range t.SkewedPairs {
			if sp := &t.SkewedPairs[k]; sp.A == p.A && sp.B == p.B {
				est = sp
			}
		}
		if est == nil {
			continue
		}
		off := time.Duration(est.OffsetNanos) // clock(B) − clock(A)
		if o.From != p.A {
			off = -off
		}
		var ids []string
		for j := i; j < len(obs); j++ {
			if obs[j].usable() && obs[j].Pair() == p {
				ids = append(ids, obs[j].ChildSpanID)
			}
		}
		dir := " ms ahead of host "
		if off < 0 {
			dir = " ms behind host "
		}
		out = append(out, model.Finding{Kind: analyze.KindClockSkew, SpanIDs: ids, Service: o.ToService,
			Subject: o.From + " → " + o.To, Value: float64(off) / float64(time.Millisecond),
			Summary: "host " + o.To + " (" + o.ToService + ") clock is " + formatMillis(max(off, -off)) + dir + o.From +
				" (" + o.FromService + "), as estimated over " + strconv.Itoa(est.Samples) +
				" traces around this one's time (after it was kept): cross-host timing between them cannot be trusted"})
	}
	return out
}

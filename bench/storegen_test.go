package bench

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/clockskew"
	"github.com/tracesift/tracesift/internal/model"
)

// storeTemplates is how many batches storeGen builds and then rewrites in
// turn. Building the attributes of every span anew would cost as much CPU
// as the insert it feeds (see CycleTraces); what a template repeats every
// storeTemplates batches (a client address, a port, a body size) is drawn
// from a small set anyway, and what should not repeat is rewritten per batch.
const storeTemplates = 4

// storeGen makes the spans of BenchmarkStore: the traces of the tracing load
// (load.go: 10 spans over 4 services, 10 attributes each, 1 % error, 1 %
// slow), batchSpans at a time, as one ptrace.Traces per batch with the 500-span
// resource blocks an SDK exports. Batch b's traces start, at random, in the
// b-th of equal slices of [start, end − 3 s), so the load covers the range in
// time order, as a live store receives it.
//
// Each batch rewrites a template: every trace gets a new random trace id, a
// new start and its duration scaled by 0.9–1.1 (slow traces stay ≥ 1 s,
// healthy ones < 1 s); every span id (and parent id) is XORed with a new key;
// the render span's app.order.id gets a new, unique order number.
type storeGen struct {
	rng        *rand.Rand
	templates  []*storeTemplate
	start      int64 // Unix ns
	step       int64 // each batch's slice of the range, ns
	batches    int   // made so far
	orders     int   // order numbers given out
	batchSpans int

	// sample is a uniform sample (reservoir) of the trace ids made, needles
	// one of order ids with their traces, each the only trace with it.
	sample, needles []string
	needleTraces    []string
	sampleSize      int
	tracesSeen      int
}

type storeTemplate struct {
	td    ptrace.Traces
	parts []templatePart // one per resource block of td
	// Per trace slot of the template.
	durs   []time.Duration
	ids    []pcommon.TraceID
	starts []int64
	scales []float64
}

type templatePart struct {
	spans ptrace.SpanSlice
	refs  []spanRef // slot: the template's trace slot; from, to: unscaled
}

// newStoreGen prepares batches of batchSpans spans (a multiple of
// CycleTraces × SpansPerTrace) for batches batches over [start, end).
func newStoreGen(seed uint64, batchSpans, batches int, start, end time.Time, sampleSize int) (*storeGen, error) {
	const cycleSpans = CycleTraces * SpansPerTrace
	if batchSpans <= 0 || batchSpans%cycleSpans != 0 {
		return nil, fmt.Errorf("batch of %d spans: want a positive multiple of %d", batchSpans, cycleSpans)
	}
	// Traces end up to 2.5 s × 1.1 after they start.
	usable := end.Sub(start) - 3*time.Second
	if batches <= 0 || usable <= 0 {
		return nil, fmt.Errorf("%d batches over %s: want some batches over more than 3 s", batches, end.Sub(start))
	}
	g := &storeGen{rng: rand.New(rand.NewPCG(seed, 0x5703e)), start: start.UnixNano(),
		step: max(1, usable.Nanoseconds()/int64(batches)), batchSpans: batchSpans, sampleSize: sampleSize}
	cycles := batchSpans / cycleSpans
	for t := range min(storeTemplates, batches) {
		tpl := &storeTemplate{td: ptrace.NewTraces()}
		for c := range cycles {
			// Every cycle of every template is its own worker: its own
			// random stream and host names.
			gen := NewGenerator(t*cycles+c, seed)
			for _, r := range gen.requests {
				rs := tpl.td.ResourceSpans().AppendEmpty()
				r.req.Traces().ResourceSpans().At(0).CopyTo(rs)
				refs := make([]spanRef, len(r.refs))
				for i, ref := range r.refs {
					refs[i] = ref
					refs[i].slot += int32(c * CycleTraces)
				}
				tpl.parts = append(tpl.parts, templatePart{spans: rs.ScopeSpans().At(0).Spans(), refs: refs})
			}
			for _, s := range gen.slots {
				tpl.durs = append(tpl.durs, s.dur)
			}
		}
		n := len(tpl.durs)
		tpl.ids, tpl.starts, tpl.scales = make([]pcommon.TraceID, n), make([]int64, n), make([]float64, n)
		g.templates = append(g.templates, tpl)
	}
	return g, nil
}

// next returns the next batch. It stays valid until storeTemplates more
// calls, the last of which rewrites it: a loader may hold storeTemplates − 1
// batches while it makes the next.
func (g *storeGen) next() ptrace.Traces {
	t := g.templates[g.batches%len(g.templates)]
	from := g.start + int64(g.batches)*g.step
	g.batches++
	for s := range t.ids {
		binary.BigEndian.PutUint64(t.ids[s][:8], g.rng.Uint64())
		binary.BigEndian.PutUint64(t.ids[s][8:], g.rng.Uint64()|1)
		t.starts[s] = from + g.rng.Int64N(g.step)
		t.scales[s] = 0.9 + 0.2*g.rng.Float64()
		g.sampleTrace(t.ids[s])
	}
	var key [8]byte
	binary.BigEndian.PutUint64(key[:], g.rng.Uint64())
	for _, p := range t.parts {
		for i, ref := range p.refs {
			span := p.spans.At(i)
			start, scale := t.starts[ref.slot], t.scales[ref.slot]
			span.SetTraceID(t.ids[ref.slot])
			span.SetStartTimestamp(pcommon.Timestamp(start + int64(float64(ref.from)*scale)))
			span.SetEndTimestamp(pcommon.Timestamp(start + int64(float64(ref.to)*scale)))
			span.SetSpanID(xorID(span.SpanID(), key))
			if !span.ParentSpanID().IsEmpty() {
				span.SetParentSpanID(xorID(span.ParentSpanID(), key))
			}
			if v, ok := span.Attributes().Get("app.order.id"); ok {
				g.orders++
				order := fmt.Sprintf("ord-%09d", g.orders)
				v.SetStr(order)
				if i, ok := g.reservoir(len(g.needles), g.orders); ok {
					if i == len(g.needles) {
						g.needles, g.needleTraces = append(g.needles, ""), append(g.needleTraces, "")
					}
					g.needles[i], g.needleTraces[i] = order, span.TraceID().String()
				}
			}
		}
	}
	return t.td
}

func (g *storeGen) sampleTrace(id pcommon.TraceID) {
	g.tracesSeen++
	if i, ok := g.reservoir(len(g.sample), g.tracesSeen); ok {
		if i == len(g.sample) {
			g.sample = append(g.sample, "")
		}
		g.sample[i] = id.String()
	}
}

// reservoir says where the seen-th item goes in a uniform sample of
// g.sampleSize that holds have items: appended (have), in place of another,
// or nowhere.
func (g *storeGen) reservoir(have, seen int) (int, bool) {
	if have < g.sampleSize {
		return have, true
	}
	j := g.rng.IntN(seen)
	return j, j < g.sampleSize
}

// storeExtras makes what the pipeline stores beside a batch's spans, by
// BenchmarkStore's rule: for each server span two log lines of its service
// and host, one with the span's trace and span id a millisecond after it
// starts and one without a trace (the services' other logs); for each trace
// its slowest-hop finding (on the root) and one clock offset (the host of
// its first server span below the root), both at the trace's start as the
// sampler writes them. Numbers in the lines come from the span ids, so a
// replayed batch makes the same lines.
func storeExtras(td ptrace.Traces) (plog.Logs, []model.Finding, []model.ClockOffset) {
	ld := plog.NewLogs()
	var findings []model.Finding
	var offsets []model.ClockOffset
	offsetDone := map[pcommon.TraceID]bool{}
	for _, rs := range td.ResourceSpans().All() {
		rl := ld.ResourceLogs().AppendEmpty()
		rs.Resource().CopyTo(rl.Resource())
		service, host := "", ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = v.Str()
		}
		if v, ok := rs.Resource().Attributes().Get("host.name"); ok {
			host = v.Str()
		}
		records := rl.ScopeLogs().AppendEmpty().LogRecords()
		for _, span := range rs.ScopeSpans().At(0).Spans().All() {
			id := span.SpanID()
			n := int(binary.BigEndian.Uint32(id[:4]) % 100_000_000)
			if span.ParentSpanID().IsEmpty() {
				findings = append(findings, model.Finding{TraceID: span.TraceID().String(),
					TimeUnixNano: uint64(span.StartTimestamp()), Kind: "slowest_hop", SpanIDs: []string{id.String()},
					Service: service, Subject: service + " " + span.Name(),
					Value:   float64(span.EndTimestamp()-span.StartTimestamp()) / 1e6,
					Summary: fmt.Sprintf("%s %s took most of the trace", service, span.Name())})
			} else if span.Kind() == ptrace.SpanKindServer && !offsetDone[span.TraceID()] {
				offsetDone[span.TraceID()] = true
				offsets = append(offsets, model.ClockOffset{TraceID: span.TraceID().String(),
					Host: host, OffsetNanos: int64(n%10_000_000) - 5_000_000, Source: clockskew.SourceEstimate.String()})
			}
			if span.Kind() != ptrace.SpanKindServer {
				continue
			}
			for traced := range 2 {
				lr := records.AppendEmpty()
				lr.SetTimestamp(span.StartTimestamp() + pcommon.Timestamp(time.Millisecond))
				lr.SetSeverityText("INFO")
				lr.SetSeverityNumber(plog.SeverityNumberInfo)
				lr.Body().SetStr(fmt.Sprintf(logTemplates[(n+traced)%len(logTemplates)], n+traced, n%3000))
				if traced == 0 {
					lr.SetTraceID(span.TraceID())
					lr.SetSpanID(id)
				}
			}
		}
	}
	starts := make(map[string]uint64, len(findings)) // of each trace: its root's
	for _, f := range findings {
		starts[f.TraceID] = f.TimeUnixNano
	}
	for i := range offsets {
		offsets[i].TimeUnixNano = starts[offsets[i].TraceID]
	}
	return ld, findings, offsets
}

// storeSkewedPair is the one pair of hosts with skewed clocks in
// BenchmarkStore's store, two hosts of worker 0: the traces of that worker (1
// in 20 at 50 000 spans a batch: 4 templates of 5 workers) are read with the
// pair's latest estimate in their window, as a trace through a skewed host is.
var storeSkewedPair = [2]string{"checkout-node-0", "payments-node-0"}

// storeSkewedPairs is the estimates of storeSkewedPair from start to end, as
// the sampler stores them: one a minute.
func storeSkewedPairs(start, end time.Time) []model.ClockPair {
	var out []model.ClockPair
	for at := start; at.Before(end); at = at.Add(time.Minute) {
		out = append(out, model.ClockPair{TimeUnixNano: uint64(at.UnixNano()), A: storeSkewedPair[0],
			B: storeSkewedPair[1], OffsetNanos: 250e6, Samples: 50})
	}
	return out
}

func xorID(id pcommon.SpanID, key [8]byte) pcommon.SpanID {
	for i := range id {
		id[i] ^= key[i]
	}
	return id
}

// TestStoreGen checks BenchmarkStore's batches: whole 10-span traces with
// their parent links, ids that never repeat (templates are reused from the
// fifth batch on), times inside the range and in batch order, the slow and
// error shares of the load, unique order ids; and what storeExtras makes of
// them: storeTracedLines lines of each trace as many without one, a finding
// and a clock offset a trace.
func TestStoreGen(t *testing.T) {
	const batchSpans, batches = CycleTraces * SpansPerTrace, storeTemplates + 2
	end := time.Now()
	start := end.Add(-time.Minute)
	g, err := newStoreGen(3, batchSpans, batches, start, end, 100)
	require.NoError(t, err)

	traceIDs := map[string]bool{}
	spanIDs := map[pcommon.SpanID]bool{}
	orders := map[string]string{} // order id → its trace
	var slow, failed int
	lastStart := int64(0)
	for b := range batches {
		td := g.next()
		require.Equal(t, batchSpans, td.SpanCount(), "batch %d", b)
		type traceInfo struct {
			spans, roots int
			ids          map[pcommon.SpanID]bool
			parents      []pcommon.SpanID
			first, last  pcommon.Timestamp
			error        bool
			skewedHosts  int // spans on a host of storeSkewedPair
		}
		traces := map[pcommon.TraceID]*traceInfo{}
		for _, rs := range td.ResourceSpans().All() {
			for _, span := range rs.ScopeSpans().At(0).Spans().All() {
				ti := traces[span.TraceID()]
				if ti == nil {
					ti = &traceInfo{ids: map[pcommon.SpanID]bool{}, first: span.StartTimestamp()}
					traces[span.TraceID()] = ti
				}
				ti.spans++
				ti.ids[span.SpanID()] = true
				if host, _ := rs.Resource().Attributes().Get("host.name"); slices.Contains(storeSkewedPair[:], host.Str()) {
					ti.skewedHosts++
				}
				require.False(t, spanIDs[span.SpanID()], "span id repeated")
				spanIDs[span.SpanID()] = true
				if span.ParentSpanID().IsEmpty() {
					ti.roots++
				} else {
					ti.parents = append(ti.parents, span.ParentSpanID())
				}
				ti.first, ti.last = min(ti.first, span.StartTimestamp()), max(ti.last, span.EndTimestamp())
				ti.error = ti.error || span.Status().Code() == ptrace.StatusCodeError
				if v, ok := span.Attributes().Get("app.order.id"); ok {
					require.NotContains(t, orders, v.Str(), "order id repeated")
					orders[v.Str()] = span.TraceID().String()
				}
			}
		}
		require.Len(t, traces, CycleTraces)
		ld, findings, offsets := storeExtras(td)
		traced := map[pcommon.TraceID]int{}
		for _, rl := range ld.ResourceLogs().All() {
			for _, lr := range rl.ScopeLogs().At(0).LogRecords().All() {
				if !lr.TraceID().IsEmpty() {
					require.NotNil(t, traces[lr.TraceID()], "a line of a trace not in the batch")
					traced[lr.TraceID()]++
				}
			}
		}
		require.Len(t, traced, CycleTraces)
		for _, n := range traced {
			require.Equal(t, storeTracedLines, n)
		}
		require.Equal(t, 2*storeTracedLines*CycleTraces, ld.LogRecordCount())
		require.Len(t, findings, CycleTraces)
		require.Len(t, offsets, CycleTraces)
		for _, f := range findings { // at the trace's start, as the sampler writes them
			id, _ := hex.DecodeString(f.TraceID)
			require.EqualValues(t, traces[pcommon.TraceID(id)].first, f.TimeUnixNano, "the finding's time")
		}
		for _, o := range offsets {
			id, _ := hex.DecodeString(o.TraceID)
			require.EqualValues(t, traces[pcommon.TraceID(id)].first, o.TimeUnixNano, "the clock offset's time")
		}
		batchFirst := int64(^uint64(0) >> 1)
		throughSkew := 0
		for id, ti := range traces {
			require.False(t, traceIDs[id.String()], "trace id repeated")
			traceIDs[id.String()] = true
			require.Equal(t, SpansPerTrace, ti.spans)
			require.Equal(t, 1, ti.roots)
			for _, p := range ti.parents {
				require.True(t, ti.ids[p], "a parent outside its trace")
			}
			require.GreaterOrEqual(t, int64(ti.first), start.UnixNano())
			require.Less(t, int64(ti.last), end.UnixNano())
			if time.Duration(ti.last-ti.first) >= time.Second {
				slow++
			}
			if ti.error {
				failed++
			}
			batchFirst = min(batchFirst, int64(ti.first))
			if ti.skewedHosts >= 2 {
				throughSkew++
			}
		}
		// A template here is one worker's cycle: the first is worker 0's.
		if b%storeTemplates == 0 {
			require.Equal(t, CycleTraces, throughSkew, "batch %d: every trace through the skewed pair", b)
		} else {
			require.Zero(t, throughSkew, "batch %d", b)
		}
		require.Greater(t, batchFirst, lastStart, "batch %d starts before the one before it", b)
		lastStart = batchFirst
	}
	require.Equal(t, batches*CycleTraces/classPeriod, slow)
	require.Equal(t, batches*CycleTraces/classPeriod, failed)
	require.Len(t, g.sample, 100)
	for _, id := range g.sample {
		require.True(t, traceIDs[id])
	}
	require.Len(t, g.needles, 100)
	for i, o := range g.needles {
		require.Equal(t, orders[o], g.needleTraces[i])
	}
}

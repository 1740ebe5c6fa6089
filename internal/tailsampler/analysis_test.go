package tailsampler

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tailsampler/internal/metadata"
)

// storeHost is a host with a tracesift_store extension, for analyze::store.
type storeHost struct{ component.Host }

type fakeStore struct{ component.Component }

func (fakeStore) Writer() *store.Writer { return nil }

func (h storeHost) GetExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{component.MustNewID("tracesift_store"): fakeStore{}}
}

// checkoutTrace is a frontend request on host web-1 whose call to payments
// (host pay-1, its clock skew ahead) is retried twice after errors.
func checkoutTrace(n uint64, skew time.Duration) ptrace.Traces {
	td := ptrace.NewTraces()
	at := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(specEpoch.Add(d)) }
	front := td.ResourceSpans().AppendEmpty()
	front.Resource().Attributes().PutStr("service.name", "frontend")
	front.Resource().Attributes().PutStr("host.name", "web-1")
	fs := front.ScopeSpans().AppendEmpty().Spans()
	pay := td.ResourceSpans().AppendEmpty()
	pay.Resource().Attributes().PutStr("service.name", "payments")
	pay.Resource().Attributes().PutStr("host.name", "pay-1")
	ps := pay.ScopeSpans().AppendEmpty().Spans()

	root := fs.AppendEmpty()
	root.SetTraceID(tid(n))
	root.SetSpanID(sid(1))
	root.SetName("GET /checkout")
	root.SetKind(ptrace.SpanKindServer)
	root.SetStartTimestamp(at(0))
	root.SetEndTimestamp(at(400 * time.Millisecond))
	for a := range uint64(3) {
		call := fs.AppendEmpty()
		call.SetTraceID(tid(n))
		call.SetSpanID(sid(10 + a))
		call.SetParentSpanID(sid(1))
		call.SetName("POST /charge")
		call.SetKind(ptrace.SpanKindClient)
		call.Attributes().PutStr("peer.service", "payments")
		start := time.Duration(a) * 120 * time.Millisecond
		call.SetStartTimestamp(at(start + 10*time.Millisecond))
		call.SetEndTimestamp(at(start + 110*time.Millisecond))
		server := ps.AppendEmpty()
		server.SetTraceID(tid(n))
		server.SetSpanID(sid(20 + a))
		server.SetParentSpanID(sid(10 + a))
		server.SetName("POST /charge")
		server.SetKind(ptrace.SpanKindServer)
		server.SetStartTimestamp(at(start + 20*time.Millisecond + skew))
		server.SetEndTimestamp(at(start + 100*time.Millisecond + skew))
		if a < 2 {
			call.Status().SetCode(ptrace.StatusCodeError)
			server.Status().SetCode(ptrace.StatusCodeError)
			server.Status().SetMessage("card processor unavailable")
		}
	}
	return td
}

// The findings and clock offsets of every kept trace go down the pipeline
// with its spans, in a resource of their own that the store's writer reads.
func TestKeptTracesAreAnalyzed(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))

	for n := uint64(1); n <= 6; n++ {
		h.consume(checkoutTrace(n, 300*time.Millisecond))
		h.decideAfterWait()
		h.clock.Advance(time.Second)
	}
	// A minute on, a kept trace carries the skewed pair's estimate for the
	// store (traces decided before it matured get the finding when read).
	h.clock.Advance(time.Minute)
	h.consume(checkoutTrace(7, 300*time.Millisecond))
	h.decideAfterWait()
	// A late span of trace 1 is stored but not analyzed on its own.
	late := request(t, "frontend", spanSpec{trace: 1, span: 99, parent: 1, dur: time.Millisecond})
	h.consume(late)
	h.barrier()
	require.NoError(t, h.p.Shutdown(context.Background()))

	var rows []model.Finding
	var clocks []model.ClockOffset
	var pairs []model.ClockPair
	for _, td := range h.sink.AllTraces() {
		a := store.AnalysisOf(td)
		rows, clocks, pairs = append(rows, a.Findings...), append(clocks, a.Clocks...), append(pairs, a.Pairs...)
		for i := range td.ResourceSpans().Len() {
			if rs := td.ResourceSpans().At(i); store.IsAnalysis(rs) {
				assert.Equal(t, 1, td.ResourceSpans().Len()-i, "the analysis resource comes last")
			}
		}
	}
	byTrace := map[string]map[string][]model.Finding{}
	for _, r := range rows {
		if byTrace[r.TraceID] == nil {
			byTrace[r.TraceID] = map[string][]model.Finding{}
		}
		byTrace[r.TraceID][r.Kind] = append(byTrace[r.TraceID][r.Kind], r)
	}
	require.Len(t, byTrace, 7)
	first := tid(1)
	one := byTrace[hex.EncodeToString(first[:])]
	require.Len(t, one[analyze.KindRetryFanout], 1)
	retry := one[analyze.KindRetryFanout][0]
	assert.Equal(t, 3.0, retry.Value)
	assert.Equal(t, "frontend → payments POST /charge", retry.Subject)
	assert.Equal(t, uint64(specEpoch.UnixNano()), retry.TimeUnixNano, "stamped with the trace's start")
	require.Len(t, one[analyze.KindErrorOrigin], 2, "both failed attempts, each from the callee")
	assert.Equal(t, "payments", one[analyze.KindErrorOrigin][0].Service)
	assert.Empty(t, one[analyze.KindBrokenPropagation], "the late span was not analyzed as a trace of its own")
	// One trace does not make an estimate, but its server spans lie 290 ms
	// outside the calls that made them: evidence on its own.
	require.Len(t, one[analyze.KindClockSkew], 1)
	assert.Contains(t, one[analyze.KindClockSkew][0].Summary, "seen in this trace alone: a server span lies 290 ms outside")
	require.Len(t, one[analyze.KindSlowestHop], 1)
	assert.Contains(t, one[analyze.KindSlowestHop][0].Summary, "(25% of the trace)",
		"timing judged on corrected clocks: 100 ms of a 400 ms trace, not of the 700 ms the skewed clock suggests")

	// From the fifth trace on, the host pair's estimate has its samples.
	last := tid(6)
	skew := byTrace[hex.EncodeToString(last[:])][analyze.KindClockSkew]
	require.Len(t, skew, 1)
	assert.InDelta(t, 300, skew[0].Value, 1)
	assert.Equal(t, "web-1 → pay-1", skew[0].Subject)
	assert.EqualValues(t, 7, h.counter("otelcol_tracesift_sampler_findings", attribute.String("kind", analyze.KindRetryFanout)))

	// Every trace crossing the pair stored pay-1's offset for the query API:
	// the trace's own calls at first, the estimate once it has its samples.
	byTraceClock := map[string]model.ClockOffset{}
	for _, c := range clocks {
		assert.Equal(t, "pay-1", c.Host)
		byTraceClock[c.TraceID] = c
	}
	require.Len(t, byTraceClock, 7)
	c6 := byTraceClock[hex.EncodeToString(last[:])]
	assert.InDelta(t, float64(300*time.Millisecond), float64(c6.OffsetNanos), float64(time.Millisecond))
	assert.Equal(t, "estimate", c6.Source)
	require.Len(t, pairs, 1, "the skewed pair, once a minute")
	assert.Equal(t, "pay-1", pairs[0].A)
	assert.Equal(t, "web-1", pairs[0].B)
	assert.InDelta(t, float64(-300*time.Millisecond), float64(pairs[0].OffsetNanos), float64(time.Millisecond))
	assert.GreaterOrEqual(t, pairs[0].Samples, 5)
}

// Without analyze::store the findings are only counted: nothing but the
// kept spans goes down the pipeline, whatever exporter is there.
func TestFindingsStayWithoutAStore(t *testing.T) {
	h := newHarness(t, testConfig())
	h.consume(checkoutTrace(1, 0))
	h.decideAfterWait()
	require.NoError(t, h.p.Shutdown(context.Background()))
	require.Equal(t, 7, h.sink.SpanCount())
	for _, td := range h.sink.AllTraces() {
		a := store.AnalysisOf(td)
		assert.Empty(t, a.Findings)
		assert.Empty(t, a.Clocks)
	}
	assert.Positive(t, h.counter("otelcol_tracesift_sampler_findings", attribute.String("kind", analyze.KindRetryFanout)))
}

func TestAnalyzeStoreMustBeAStoreExtension(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	p, err := newSampler(processortest.NewNopSettings(metadata.Type), cfg, new(consumertest.TracesSink))
	require.NoError(t, err)
	err = p.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "`analyze::store`: extension \"tracesift_store\" is not configured")
	require.NoError(t, p.Shutdown(context.Background()))

}

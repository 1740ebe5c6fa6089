package tailsampler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
)

func TestCallCounts(t *testing.T) {
	var c callCounts
	for range 3 {
		c.add(nameHash([]byte("SELECT")), 1)
	}
	c.add(nameHash([]byte("GET")), 1)
	assert.Equal(t, 3, c.max())
	var d callCounts
	d.add(nameHash([]byte("SELECT")), 9)
	for _, n := range []string{"a", "b", "c", "d"} {
		d.add(nameHash([]byte(n)), 1) // fills, then replaces only what has fewer calls
	}
	c.merge(&d)
	assert.Equal(t, 12, c.max(), "counts of one name add up across chunks")

	var full callCounts
	for i, n := range []string{"a", "b", "c", "d"} {
		full.add(nameHash([]byte(n)), uint32(i+2))
	}
	full.add(nameHash([]byte("e")), 1)
	assert.Equal(t, 5, full.max(), "a newcomer with fewer calls does not evict")
	full.add(nameHash([]byte("f")), 7)
	assert.Equal(t, 7, full.max(), "one with more replaces the least frequent")
}

func TestHostSet(t *testing.T) {
	var h hostSet
	for _, n := range []string{"a", "b", "a", "", "c", "d", "e"} {
		h.add(hostHash([]byte(n)))
	}
	assert.Equal(t, hostSet{hostHash([]byte("a")), hostHash([]byte("b")), hostHash([]byte("c")), hostHash([]byte("d"))}, h)
	assert.Equal(t, pairKey(1, 2), pairKey(2, 1))
	assert.Zero(t, hostHash(nil))
}

// healthyCalls is a healthy trace whose root calls the same thing n times.
func healthyCalls(n uint64, calls int) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("service.name", "orders")
	at := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(specEpoch.Add(d)) }
	root := spans.AppendEmpty()
	root.SetTraceID(tid(n))
	root.SetSpanID(sid(1))
	root.SetName("GET /orders")
	root.SetKind(ptrace.SpanKindServer)
	root.SetStartTimestamp(at(0))
	root.SetEndTimestamp(at(50 * time.Millisecond))
	for i := range calls {
		c := spans.AppendEmpty()
		c.SetTraceID(tid(n))
		c.SetSpanID(sid(uint64(10 + i)))
		c.SetParentSpanID(sid(1))
		c.SetName("SELECT order_items")
		c.SetKind(ptrace.SpanKindClient)
		c.SetStartTimestamp(at(time.Duration(i) * time.Millisecond))
		c.SetEndTimestamp(at(time.Duration(i)*time.Millisecond + 500*time.Microsecond))
	}
	return td
}

func TestKeepRetryAmplification(t *testing.T) {
	cfg := testConfig()
	cfg.KeepRetryAmplification = 5
	h := newHarness(t, cfg)
	h.consume(healthyCalls(1, 4))
	h.consume(healthyCalls(2, 3))
	h.consume(healthyCalls(2, 0)) // two more calls of trace 2, in another request
	tail := healthyCalls(2, 2)
	tail.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return s.Kind() == ptrace.SpanKindServer })
	for i := range tail.ResourceSpans().At(0).ScopeSpans().At(0).Spans().Len() {
		tail.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(i).SetSpanID(sid(uint64(50 + i)))
	}
	h.consume(tail)
	h.decideAfterWait()
	spans, _ := keptSpans(h.sink)
	assert.NotContains(t, spans, tid(1), "4 calls: below the amplification")
	require.Contains(t, spans, tid(2), "5 calls over two requests")
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_traces_decided", attribute.String("reason", "retry_fanout")))
}

// Once the estimator knows web-1 and pay-1 disagree, a healthy trace across
// them is kept; one that stays on one host is not.
func TestKeepClockSkew(t *testing.T) {
	cfg := testConfig()
	cfg.KeepClockSkew = true
	h := newHarness(t, cfg)
	for n := uint64(1); n <= 6; n++ { // error traces: kept and analyzed
		h.consume(checkoutTrace(n, 300*time.Millisecond))
		h.decideAfterWait()
		h.clock.Advance(time.Second)
	}
	healthy := checkoutTrace(100, 300*time.Millisecond)
	for _, rs := range healthy.ResourceSpans().All() {
		for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
			sp.Status().SetCode(ptrace.StatusCodeUnset)
		}
	}
	h.consume(healthy)
	h.consume(healthyCalls(101, 1))
	h.decideAfterWait()
	spans, _ := keptSpans(h.sink)
	assert.Contains(t, spans, tid(100), "crosses the skewed pair")
	assert.NotContains(t, spans, tid(101))
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_traces_decided", attribute.String("reason", "clock_skew")))
}

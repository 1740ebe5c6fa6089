package tailsampler

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/otlpwire"
)

// ruleSpan builds a span for the rule tables: attrs go on the span, events
// are (name, attrs) pairs.
type ruleSpan struct {
	status  ptrace.StatusCode
	message string
	attrs   map[string]any
	events  []ruleEvent
}

type ruleEvent struct {
	name  string
	attrs map[string]any
}

func (rs ruleSpan) build(t testing.TB) ptrace.Span {
	t.Helper()
	span := ptrace.NewSpan()
	span.Status().SetCode(rs.status)
	span.Status().SetMessage(rs.message)
	require.NoError(t, span.Attributes().FromRaw(rs.attrs))
	for _, e := range rs.events {
		ev := span.Events().AppendEmpty()
		ev.SetName(e.name)
		require.NoError(t, ev.Attributes().FromRaw(e.attrs))
	}
	return span
}

// addScanned folds spans into c the way every span goes: encoded, scanned
// by otlpwire, then folded.
func addScanned(t testing.TB, c *traceChunk, spans ...ptrace.Span) {
	t.Helper()
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for i, span := range spans {
		s := ss.Spans().AppendEmpty()
		span.CopyTo(s)
		s.SetTraceID(c.id)
		s.SetSpanID(pcommon.SpanID{byte(i + 1)})
	}
	req, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	r := otlpwire.Request{Mark: timeoutMarks}
	require.NoError(t, otlpwire.Scan(req, &r))
	for i := range r.Spans {
		c.addSpan(&r.Spans[i], "svc", 0)
	}
}

// scannedReason is the reason a chunk records for span.
func scannedReason(t testing.TB, span ptrace.Span) Reason {
	t.Helper()
	c := newTraceChunk(pcommon.TraceID{1}, 0)
	addScanned(t, &c, span)
	return c.reason
}

func TestSpanReason(t *testing.T) {
	exc := func(attrs map[string]any) []ruleEvent { return []ruleEvent{{name: "exception", attrs: attrs}} }
	tests := []struct {
		name string
		span ruleSpan
		want Reason
	}{
		{"healthy", ruleSpan{attrs: map[string]any{"http.response.status_code": 200, "http.route": "/a"}}, ReasonNone},
		{"status ok with 200", ruleSpan{status: ptrace.StatusCodeOk}, ReasonNone},
		{"status error", ruleSpan{status: ptrace.StatusCodeError}, ReasonError},
		{"error with non-timeout message", ruleSpan{status: ptrace.StatusCodeError, message: "connection refused"}, ReasonError},
		{"http 500 is an error, not a timeout", ruleSpan{status: ptrace.StatusCodeError, attrs: map[string]any{"http.response.status_code": 500}}, ReasonError},

		{"http.response.status_code 504 int", ruleSpan{attrs: map[string]any{"http.response.status_code": 504}}, ReasonTimeout},
		{"http.response.status_code 408 int", ruleSpan{attrs: map[string]any{"http.response.status_code": 408}}, ReasonTimeout},
		{"http.response.status_code 504 string", ruleSpan{attrs: map[string]any{"http.response.status_code": "504"}}, ReasonTimeout},
		{"http.status_code 504 int", ruleSpan{attrs: map[string]any{"http.status_code": 504}}, ReasonTimeout},
		{"http.status_code 408 string", ruleSpan{attrs: map[string]any{"http.status_code": "408"}}, ReasonTimeout},
		{"http.status_code 503 is not a timeout", ruleSpan{attrs: map[string]any{"http.status_code": 503}}, ReasonNone},
		{"504 under another key is ignored", ruleSpan{attrs: map[string]any{"app.code": 504}}, ReasonNone},

		{"grpc DEADLINE_EXCEEDED int", ruleSpan{attrs: map[string]any{"rpc.grpc.status_code": 4}}, ReasonTimeout},
		{"grpc DEADLINE_EXCEEDED string", ruleSpan{attrs: map[string]any{"rpc.grpc.status_code": "4"}}, ReasonTimeout},
		{"grpc UNAVAILABLE", ruleSpan{attrs: map[string]any{"rpc.grpc.status_code": 14}}, ReasonNone},

		{"error.type java SocketTimeoutException", ruleSpan{attrs: map[string]any{"error.type": "java.net.SocketTimeoutException"}}, ReasonTimeout},
		{"error.type context.DeadlineExceeded", ruleSpan{attrs: map[string]any{"error.type": "context.DeadlineExceeded"}}, ReasonTimeout},
		{"error.type TIMEDOUT", ruleSpan{attrs: map[string]any{"error.type": "ETIMEDOUT"}}, ReasonTimeout},
		{"error.type other", ruleSpan{attrs: map[string]any{"error.type": "java.io.IOException"}}, ReasonNone},
		{"exception.type on span", ruleSpan{attrs: map[string]any{"exception.type": "System.TimeoutException"}}, ReasonTimeout},
		{"exception event exception.type", ruleSpan{events: exc(map[string]any{"exception.type": "java.util.concurrent.TimeoutException"})}, ReasonTimeout},
		{"exception event error.type", ruleSpan{events: exc(map[string]any{"error.type": "deadline_exceeded"})}, ReasonTimeout},
		{"exception event, other type", ruleSpan{events: exc(map[string]any{"exception.type": "NullPointerException"})}, ReasonNone},
		{"non-exception event is ignored", ruleSpan{events: []ruleEvent{{name: "log", attrs: map[string]any{"exception.type": "TimeoutException"}}}}, ReasonNone},
		{"status code on event is ignored", ruleSpan{events: exc(map[string]any{"http.status_code": 504})}, ReasonNone},
		{"timeout word in another attribute is ignored", ruleSpan{attrs: map[string]any{"db.statement": "SET lock_timeout = 1"}}, ReasonNone},

		{"status message timed out", ruleSpan{status: ptrace.StatusCodeError, message: "Read timed out"}, ReasonTimeout},
		{"status message deadline", ruleSpan{status: ptrace.StatusCodeError, message: "context deadline exceeded"}, ReasonTimeout},
		{"status message Timeout upper case", ruleSpan{status: ptrace.StatusCodeError, message: "Upstream TIMEOUT after 30s"}, ReasonTimeout},

		// Both ERROR and a timeout: the more specific reason wins.
		{"error and 504", ruleSpan{status: ptrace.StatusCodeError, attrs: map[string]any{"http.response.status_code": int64(504)}}, ReasonTimeout},
		{"error and exception event timeout", ruleSpan{status: ptrace.StatusCodeError, events: exc(map[string]any{"exception.type": "SocketTimeoutException"})}, ReasonTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, scannedReason(t, tt.span.build(t)))
		})
	}
}

// Precedence across spans of one trace: error, then timeout, whichever order
// they arrive in.
func TestTraceReasonPrecedence(t *testing.T) {
	errSpan := ruleSpan{status: ptrace.StatusCodeError}.build(t)
	timeoutSpan := ruleSpan{attrs: map[string]any{"http.status_code": 504}}.build(t)
	healthy := ruleSpan{}.build(t)

	for _, order := range [][]ptrace.Span{
		{errSpan, timeoutSpan, healthy},
		{timeoutSpan, errSpan},
		{healthy, timeoutSpan, errSpan},
	} {
		c := newTraceChunk(pcommon.TraceID{1}, 0)
		addScanned(t, &c, order...)
		assert.Equal(t, ReasonError, c.reason)
	}

	c := newTraceChunk(pcommon.TraceID{1}, 0)
	addScanned(t, &c, healthy, timeoutSpan, healthy)
	assert.Equal(t, ReasonTimeout, c.reason)
}

func idWithRandom(r uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[8:], r&(1<<56-1))
	id[0] = 0xab // the non-random part must not matter
	id[8] = 0xcd
	return id
}

func TestDecide(t *testing.T) {
	const slow = time.Second
	all, none := baselineThreshold(1), baselineThreshold(0)
	id := idWithRandom(12345)
	rules := func(baseline uint64, mutate ...func(*ruleSet)) *ruleSet {
		rs := &ruleSet{keepErrors: true, keepTimeouts: true, keepSlow: true, adaptive: true, slow: slow, baseline: baseline}
		for _, m := range mutate {
			m(rs)
		}
		return rs
	}
	noErrors := func(rs *ruleSet) { rs.keepErrors = false }
	noTimeouts := func(rs *ruleSet) { rs.keepTimeouts = false }
	noSlow := func(rs *ruleSet) { rs.keepSlow = false }
	noAdaptive := func(rs *ruleSet) { rs.adaptive = false }
	retries := func(n int) func(*ruleSet) { return func(rs *ruleSet) { rs.retryAmplification = n } }
	skew := func(rs *ruleSet) { rs.keepSkew = true }
	errFacts := traceFacts{known: ReasonError, hasError: true}
	timeoutFacts := traceFacts{known: ReasonTimeout, hasTimeout: true}
	errorTimeoutSpan := traceFacts{known: ReasonTimeout, hasError: true, hasTimeout: true}
	tests := []struct {
		name  string
		facts traceFacts
		rules *ruleSet
		want  Reason
	}{
		{"error", errFacts, rules(none), ReasonError},
		{"error beats slow", traceFacts{known: ReasonError, hasError: true, e2e: time.Hour}, rules(all), ReasonError},
		{"error and another timeout span: error", traceFacts{known: ReasonError, hasError: true, hasTimeout: true}, rules(none), ReasonError},
		{"timeout", timeoutFacts, rules(none), ReasonTimeout},
		{"timeout beats slow", traceFacts{known: ReasonTimeout, hasTimeout: true, e2e: time.Hour}, rules(all), ReasonTimeout},
		{"errors off", errFacts, rules(none, noErrors), ReasonNone},
		{"errors off, timeout still kept", traceFacts{known: ReasonError, hasError: true, hasTimeout: true}, rules(none, noErrors), ReasonTimeout},
		{"timeouts off", timeoutFacts, rules(none, noTimeouts), ReasonNone},
		{"timeouts off, an ERROR timeout span is still an error", errorTimeoutSpan, rules(none, noTimeouts), ReasonError},
		{"slow exactly at threshold", traceFacts{e2e: slow}, rules(none), ReasonSlow},
		{"just under threshold", traceFacts{e2e: slow - time.Nanosecond}, rules(none), ReasonNone},
		{"slow rule off", traceFacts{e2e: time.Hour}, rules(none, noSlow), ReasonNone},
		{"slow beats slow for route", traceFacts{e2e: 2 * slow, slowForRoute: true}, rules(none), ReasonSlow},
		{"slow for route", traceFacts{e2e: 300 * time.Millisecond, slowForRoute: true}, rules(none), ReasonSlowRoute},
		{"adaptive off", traceFacts{e2e: 300 * time.Millisecond, slowForRoute: true}, rules(none, noAdaptive), ReasonNone},
		{"repeated calls at the amplification", traceFacts{repeatedCalls: 27}, rules(none, retries(27)), ReasonRetries},
		{"repeated calls below it", traceFacts{repeatedCalls: 26}, rules(none, retries(27)), ReasonNone},
		{"amplification rule off", traceFacts{repeatedCalls: 1000}, rules(none), ReasonNone},
		{"slow for route beats repeated calls", traceFacts{slowForRoute: true, repeatedCalls: 30}, rules(none, retries(27)), ReasonSlowRoute},
		{"repeated calls beat skew", traceFacts{repeatedCalls: 30, skewed: true}, rules(none, retries(27), skew), ReasonRetries},
		{"skewed host pair", traceFacts{skewed: true}, rules(none, skew), ReasonClockSkew},
		{"skew rule off", traceFacts{skewed: true}, rules(none), ReasonNone},
		{"skew beats baseline", traceFacts{skewed: true}, rules(all, skew), ReasonClockSkew},
		{"slow beats baseline", traceFacts{e2e: 2 * slow}, rules(all), ReasonSlow},
		{"baseline 1 keeps", traceFacts{}, rules(all), ReasonBaseline},
		{"baseline 0 drops", traceFacts{}, rules(none), ReasonNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.facts.id = id
			assert.Equal(t, tt.want, decide(tt.facts, tt.rules))
		})
	}
}

func TestBaselineKeep(t *testing.T) {
	all, none := baselineThreshold(1), baselineThreshold(0)
	extremes := []pcommon.TraceID{idWithRandom(0), idWithRandom(1<<56 - 1), {}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for _, id := range extremes {
		assert.True(t, baselineKeep(id, all), "ratio 1 keeps %s", id)
		assert.False(t, baselineKeep(id, none), "ratio 0 keeps none, not %s", id)
	}

	// The boundary sits exactly at ratio × 2^56 of the last 7 bytes.
	half := baselineThreshold(0.5)
	assert.True(t, baselineKeep(idWithRandom(1<<55-1), half))
	assert.False(t, baselineKeep(idWithRandom(1<<55), half))

	// Only the last 7 bytes count.
	a, b := idWithRandom(42), idWithRandom(42)
	b[0], b[8] = 0x00, 0x77
	assert.Equal(t, baselineKeep(a, half), baselineKeep(b, half))

	// Deterministic: the same id always gets the same answer, and the kept
	// fraction matches the ratio on random ids.
	rng := rand.New(rand.NewPCG(1, 2))
	q := baselineThreshold(0.25)
	kept := 0
	const n = 20000
	for range n {
		var id pcommon.TraceID
		binary.BigEndian.PutUint64(id[:8], rng.Uint64())
		binary.BigEndian.PutUint64(id[8:], rng.Uint64())
		k := baselineKeep(id, q)
		require.Equal(t, k, baselineKeep(id, q))
		if k {
			kept++
		}
	}
	assert.InDelta(t, 0.25, float64(kept)/n, 0.02)
}

func TestDecisionCacheEvictsOldest(t *testing.T) {
	c := newDecisionCache(2)
	a, b, d := pcommon.TraceID{1}, pcommon.TraceID{2}, pcommon.TraceID{3}
	at := time.Unix(1_700_000_000, 0)
	c.put(a, true, whyOnTime, at, -1)
	c.put(b, false, whyMemory, at, -1)
	c.put(b, true, whyMemory, at.Add(time.Second), -1) // an update takes no new slot
	got, ok := c.get(b)
	assert.True(t, ok)
	assert.Equal(t, decision{kept: true, why: whyMemory, at: at.Add(time.Second).UnixNano(), through: -1}, got)
	_, ok = c.get(a)
	assert.True(t, ok)

	c.put(d, false, whyOnTime, at, -1)
	_, ok = c.get(a)
	assert.False(t, ok, "oldest decision forgotten")
	_, ok = c.get(b)
	assert.True(t, ok)

	// Remembering why a trace was decided costs no memory: it shares kept's
	// padding.
	assert.EqualValues(t, 24, unsafe.Sizeof(decision{}))
}

func TestShardOfIsStableAndSpreads(t *testing.T) {
	seen := make(map[int]int)
	for i := range 1000 {
		var id pcommon.TraceID
		// Ids from a 64-bit tracer: upper half zero, sequential.
		binary.BigEndian.PutUint64(id[8:], uint64(i))
		s := shardOf(id, 4)
		require.Equal(t, s, shardOf(id, 4))
		seen[s]++
	}
	require.Len(t, seen, 4)
	for s, n := range seen {
		assert.Greater(t, n, 150, "shard %d", s)
	}
}

package analyze

import (
	"slices"
	"strings"

	"github.com/tracesift/tracesift/internal/model"
)

// The resilience analyzers say what the degradation and circuit-breaking
// practice needs to see in a trace: calls a dependency throttled, calls a
// breaker, bulkhead or rate limiter failed fast, degraded answers served
// despite a failed call, and pools that ran dry.

// fastFailMax is the longest a call may take to count as failed fast by its
// shape alone (an error, no callee span).
const fastFailMax = 2_000_000 // 2 ms

// fastFailTypes are exception types (substrings) of breakers, bulkheads and
// rate limiters refusing a call: Resilience4j, Sentinel, Hystrix, Polly.
var fastFailTypes = []struct{ needle, what string }{
	{"CallNotPermittedException", "circuit breaker open"},
	{"BulkheadFullException", "bulkhead full"},
	{"RequestNotPermitted", "rate limiter refused"},
	{"DegradeException", "circuit breaker open"},
	{"FlowException", "rate limiter refused"},
	{"SystemBlockException", "system protection refused"},
	{"BlockException", "blocked by a flow rule"},
	{"HystrixRuntimeException", "circuit breaker or thread pool refused"},
	{"BrokenCircuitException", "circuit breaker open"},
	{"BulkheadRejectedException", "bulkhead full"},
	{"RateLimiterRejectedException", "rate limiter refused"},
}

// poolExhaustedTexts name a connection or thread pool that ran dry, in an
// exception type or message or a status message.
var poolExhaustedTexts = []string{
	"Connection is not available, request timed out", // HikariCP
	"SQLTransientConnectionException",
	"RejectedExecutionException",
	"ConnectionPoolTimeoutException",      // Apache HttpClient
	"Timeout waiting for connection",      // Apache HttpClient, Lettuce
	"Cannot get a connection, pool error", // DBCP
	"PoolExhaustedException",
	"pool exhausted",
	"Could not get a resource from the pool", // Jedis
	"connection pool timeout",
	"too many clients already", // PostgreSQL
}

// failed is failed(span i), computed once.
func (ix *index) failed(i int32) bool {
	if ix.failure[i] == 0 {
		ix.failure[i] = 1
		if failed(ix.span(i)) {
			ix.failure[i] = 2
		}
	}
	return ix.failure[i] == 2
}

// anyFailed reports whether some kept span failed: the resilience analyzers
// have nothing to say of a trace where none did.
func (ix *index) anyFailed() bool {
	if ix.anyFailure == 0 {
		ix.anyFailure = 1
		for _, i := range ix.pre {
			if ix.failed(i) {
				ix.anyFailure = 2
				break
			}
		}
	}
	return ix.anyFailure == 2
}

// callee names what call span i called: its peer (peer.service,
// server.address, ...), else the service of its callee's span, else its name.
func (ix *index) callee(i int32) string {
	if p := attrPeer(ix.span(i)); p != (peerID{}) {
		return p.String()
	}
	if svc := ix.calleeService(i); svc != "" {
		return svc
	}
	return ix.span(i).Name
}

// spanIDs are the ids of the first n of spans.
func (ix *index) spanIDs(spans []int32, n int) []string {
	ids := make([]string, 0, min(len(spans), n))
	for _, i := range spans[:min(len(spans), n)] {
		ids = append(ids, ix.span(i).SpanID)
	}
	return ids
}

// edge is a call edge: the caller's service and the callee.
type edge struct{ caller, callee string }

// edgeFindings appends one finding of kind per edge of calls (in the order
// each edge first occurs), its value the number of calls, described by
// what(edge, its calls).
func (ix *index) edgeFindings(out []model.Finding, kind string, calls []int32, opts Options,
	what func(e edge, calls []int32) string) []model.Finding {
	var order []edge
	by := map[edge][]int32{}
	for _, c := range calls {
		e := edge{ix.span(c).Service, ix.callee(c)}
		if _, ok := by[e]; !ok {
			order = append(order, e)
		}
		by[e] = append(by[e], c)
	}
	for _, e := range order {
		cs := by[e]
		out = append(out, model.Finding{Kind: kind, SpanIDs: ix.spanIDs(cs, opts.MaxSpanIDs), Service: e.caller, Value: float64(len(cs)),
			Summary: what(e, cs)})
	}
	return out
}

// throttleStatus says whether span s was answered "too many requests": HTTP
// 429 or gRPC RESOURCE_EXHAUSTED; "" when not.
func throttleStatus(s *model.Span) string {
	if httpStatus(s) == 429 {
		return "HTTP 429"
	}
	if v := s.Attributes[attrGRPCStatus]; v == "8" || strings.EqualFold(v, "RESOURCE_EXHAUSTED") {
		return "gRPC RESOURCE_EXHAUSTED"
	}
	return ""
}

// throttled reports calls answered 429 or RESOURCE_EXHAUSTED: on the call
// span, or on the callee's server span when the call does not say.
func (ix *index) throttled(out []model.Finding, opts Options) []model.Finding {
	if !ix.anyFailed() { // a 429 is a failure
		return out
	}
	var calls []int32
	status := map[int32]string{}
	for _, i := range ix.pre {
		if !ix.isCall(i) {
			continue
		}
		st := throttleStatus(ix.span(i))
		if st == "" {
			for _, c := range ix.children(i) {
				if ix.span(c).Kind == model.KindServer {
					if st = throttleStatus(ix.span(c)); st != "" {
						break
					}
				}
			}
		}
		if st != "" {
			calls = append(calls, i)
			status[i] = st
		}
	}
	return ix.edgeFindings(out, KindThrottled, calls, opts, func(e edge, cs []int32) string {
		return e.caller + " → " + e.callee + ": " + plural(len(cs), "call", "calls") + " throttled (" + status[cs[0]] +
			"); the callee sheds load: back off, or raise its limit"
	})
}

// fastFailCause says why call span i failed fast: a breaker's, bulkhead's or
// rate limiter's exception, or the shape alone (an error in under
// fastFailMax with no callee span, to a service rather than a database); ""
// when it did not.
func (ix *index) fastFailCause(i int32) string {
	if !ix.failed(i) {
		return ""
	}
	s := ix.span(i)
	for k := range s.Events {
		e := &s.Events[k]
		if e.Name != model.ExceptionEvent {
			continue
		}
		for _, t := range fastFailTypes {
			if strings.Contains(e.Attributes[attrExcType], t.needle) {
				return t.what + " (" + clip(e.Attributes[attrExcType], 80) + ")"
			}
		}
	}
	for _, t := range fastFailTypes {
		if strings.Contains(s.Attributes[attrErrorType], t.needle) || strings.Contains(s.StatusMessage, t.needle) {
			return t.what
		}
	}
	// By shape: a database never reports a span, so its calls are not
	// judged by one.
	if ix.dur(i) <= fastFailMax && len(ix.children(i)) == 0 && dbSystem(s) == "" {
		return "no callee span"
	}
	return ""
}

// fastFail reports client calls that failed without reaching the callee.
func (ix *index) fastFail(out []model.Finding, opts Options) []model.Finding {
	if !ix.anyFailed() {
		return out
	}
	var calls []int32
	cause := map[int32]string{}
	for _, i := range ix.pre {
		if ix.span(i).Kind != model.KindClient {
			continue
		}
		if c := ix.fastFailCause(i); c != "" {
			calls = append(calls, i)
			cause[i] = c
		}
	}
	return ix.edgeFindings(out, KindFastFail, calls, opts, func(e edge, cs []int32) string {
		return e.caller + " → " + e.callee + ": " + plural(len(cs), "call", "calls") + " failed fast in " + fmtDur(ix.dur(cs[0])) +
			" without reaching it: " + cause[cs[0]]
	})
}

// fallback reports spans that succeeded although a call they made failed
// and was not retried to success: an answer served degraded.
func (ix *index) fallback(out []model.Finding, opts Options) []model.Finding {
	if !ix.anyFailed() {
		return out
	}
	for _, p := range ix.pre {
		if ix.failed(p) {
			continue
		}
		kids := ix.children(p)
		var failedCalls []int32
		for k, c := range kids {
			if !ix.isCall(c) || !ix.failed(c) {
				continue
			}
			retried := false // a later call of the same name and peer that succeeded
			for _, d := range kids[k+1:] {
				if ix.isCall(d) && ix.sameCall(c, d) && !ix.failed(d) {
					retried = true
					break
				}
			}
			if !retried {
				failedCalls = append(failedCalls, c)
			}
		}
		if len(failedCalls) == 0 {
			continue
		}
		s := ix.span(p)
		ids := []string{s.SpanID}
		var deps []string
		for _, c := range failedCalls {
			if len(ids) < opts.MaxSpanIDs {
				ids = append(ids, ix.span(c).SpanID)
			}
			if d := ix.callee(c); !slices.Contains(deps, d) {
				deps = append(deps, d)
			}
		}
		out = append(out, model.Finding{Kind: KindFallback, SpanIDs: ids, Service: s.Service, Value: float64(len(failedCalls)),
			Summary: s.Service + " " + clip(s.Name, 80) + " answered although " + clip(strings.Join(deps, ", "), 160) +
				" failed (" + plural(len(failedCalls), "call", "calls") + "): a degraded answer or a fallback"})
	}
	return out
}

// poolNeedles are poolExhaustedTexts in lower case, for containsFold.
var poolNeedles = func() []string {
	out := make([]string, len(poolExhaustedTexts))
	for i, t := range poolExhaustedTexts {
		out[i] = strings.ToLower(t)
	}
	return out
}()

// LogPoolFindings are the pool_exhausted findings the trace's logs show for
// services its spans have none of: one per service, naming its lines' spans.
func LogPoolFindings(t *model.Trace) []model.Finding {
	have := map[string]bool{}
	for _, f := range t.Findings {
		if f.Kind == KindPoolExhausted {
			have[f.Service] = true
		}
	}
	var out []model.Finding
	at := map[string]int{}
	for _, l := range t.Logs {
		if l.Service == "" || have[l.Service] || !namesPool(l.Body) {
			continue
		}
		i, ok := at[l.Service]
		if !ok {
			i = len(out)
			at[l.Service] = i
			out = append(out, model.Finding{TraceID: t.TraceID, Kind: KindPoolExhausted, SpanIDs: []string{},
				Service: l.Service, Subject: l.Service + " logs",
				Summary: l.Service + ": a pool ran dry, as its log says: " + clip(l.Body, 160)})
		}
		f := &out[i]
		f.Value++
		if l.SpanID != "" && !slices.Contains(f.SpanIDs, l.SpanID) && len(f.SpanIDs) < defaultMaxSpanIDs {
			f.SpanIDs = append(f.SpanIDs, l.SpanID)
		}
	}
	return out
}

// namesPool reports whether t names a pool that ran dry.
func namesPool(t string) bool {
	if t == "" {
		return false
	}
	for _, n := range poolNeedles {
		if containsFold(t, n) {
			return true
		}
	}
	return false
}

// poolText is what names a pool that ran dry in span s, "" when nothing.
func poolText(s *model.Span) string {
	if namesPool(s.StatusMessage) {
		return clip(s.StatusMessage, 160)
	}
	if v := s.Attributes[attrErrorType]; namesPool(v) {
		return clip(v, 160)
	}
	for k := range s.Events {
		if e := &s.Events[k]; e.Name == model.ExceptionEvent {
			for _, key := range [...]string{attrExcType, attrExcMessage} {
				if v := e.Attributes[key]; namesPool(v) {
					return clip(v, 160)
				}
			}
		}
	}
	return ""
}

// poolExhausted reports, per service, the spans whose errors say a
// connection or thread pool ran dry.
func (ix *index) poolExhausted(out []model.Finding, opts Options) []model.Finding {
	if !ix.anyFailed() {
		return out
	}
	var order []string
	by := map[string][]int32{}
	text := map[string]string{}
	for _, i := range ix.pre {
		t := poolText(ix.span(i))
		if t == "" {
			continue
		}
		svc := ix.span(i).Service
		if _, ok := by[svc]; !ok {
			order = append(order, svc)
			text[svc] = t
		}
		by[svc] = append(by[svc], i)
	}
	for _, svc := range order {
		spans := by[svc]
		out = append(out, model.Finding{Kind: KindPoolExhausted, SpanIDs: ix.spanIDs(spans, opts.MaxSpanIDs), Service: svc, Value: float64(len(spans)),
			Summary: svc + ": a pool ran dry in " + plural(len(spans), "span", "spans") + ": " + text[svc]})
	}
	return out
}

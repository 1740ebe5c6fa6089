package otlpwire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// expected builds with pdata what AppendRequest must produce for the spans
// picked from td (indexes into the flat span order of td): each span under a
// copy of its resource and scope, grouped in first-seen order.
func expected(td ptrace.Traces, r *Request, picked []int) ptrace.Traces {
	type loc struct{ rs, ss, sp int }
	var locs []loc
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for k := 0; k < sss.At(j).Spans().Len(); k++ {
				locs = append(locs, loc{i, j, k})
			}
		}
	}
	out := ptrace.NewTraces()
	resOut := map[int]ptrace.ResourceSpans{}
	scopeOut := map[int]ptrace.ScopeSpans{}
	for _, p := range picked {
		l, sp := locs[p], r.Spans[p]
		src := rss.At(l.rs)
		rs, ok := resOut[sp.Resource]
		if !ok {
			rs = out.ResourceSpans().AppendEmpty()
			src.Resource().CopyTo(rs.Resource())
			rs.SetSchemaUrl(src.SchemaUrl())
			resOut[sp.Resource] = rs
		}
		ss, ok := scopeOut[sp.Scope]
		if !ok {
			srcSS := src.ScopeSpans().At(l.ss)
			ss = rs.ScopeSpans().AppendEmpty()
			srcSS.Scope().CopyTo(ss.Scope())
			ss.SetSchemaUrl(srcSS.SchemaUrl())
			scopeOut[sp.Scope] = ss
		}
		src.ScopeSpans().At(l.ss).Spans().At(l.sp).CopyTo(ss.Spans().AppendEmpty())
	}
	return out
}

func TestAppendRequestGroupsInFirstSeenOrder(t *testing.T) {
	td := richTraces(t)
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	require.NoError(t, Scan(marshal(t, td), &r))
	n := len(r.Spans)
	for _, picked := range [][]int{
		{n - 1, 0, n - 2, 1, 7, 8, 0},   // last resource first, back and forth, a span twice
		{5, 4, 3},                       // one resource, two scopes, reversed
		{n - 1},                         // a single span
		{12, 13, 14, 15, 16, 17, 18, 2}, // whole scopes
	} {
		spans := make([]Span, len(picked))
		for i, p := range picked {
			spans[i] = r.Spans[p]
		}
		out := AppendRequest([]byte("prefix"), r.Resources, r.Scopes, spans)
		require.Equal(t, "prefix", string(out[:6]), "appends to dst")
		got, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(out[6:])
		require.NoError(t, err)
		assertSameTraces(t, expected(td, &r, picked), got)
	}
}

// A sampler gathers the spans it keeps from many requests: it appends each
// request's resources and scopes to its own tables and shifts the indexes.
func TestAppendRequestAcrossRequests(t *testing.T) {
	td1, td2 := richTraces(t), benchTraces()
	var r1, r2 Request
	require.NoError(t, Scan(marshal(t, td1), &r1))
	require.NoError(t, Scan(marshal(t, td2), &r2))

	resources := append(append([]Resource(nil), r1.Resources...), r2.Resources...)
	scopes := append([]Scope(nil), r1.Scopes...)
	for _, sc := range r2.Scopes {
		sc.Resource += len(r1.Resources)
		scopes = append(scopes, sc)
	}
	spans := append([]Span(nil), r1.Spans...)
	for _, sp := range r2.Spans {
		sp.Resource += len(r1.Resources)
		sp.Scope += len(r1.Scopes)
		spans = append(spans, sp)
	}

	var e Encoder
	for range 2 { // the second time with e's scratch space reused
		got, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(e.Append(nil, resources, scopes, spans))
		require.NoError(t, err)
		want := withoutEmpty(td1)
		withoutEmpty(td2).ResourceSpans().MoveAndAppendTo(want.ResourceSpans())
		assertSameTraces(t, want, got)
	}
	// And a smaller call after a larger one.
	got, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(e.Append(nil, resources, scopes, spans[:1]))
	require.NoError(t, err)
	assert.Equal(t, 1, got.SpanCount())
}

// Span.Resource decides the ResourceSpans, even when a caller's tables say
// the scope belongs elsewhere: the span is never lost or misplaced.
func TestAppendRequestScopeUnderTwoResources(t *testing.T) {
	td := richTraces(t)
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	require.NoError(t, Scan(marshal(t, td), &r))
	a, b := r.Spans[0], r.Spans[1] // same scope, same resource
	b.Resource = 2
	out := AppendRequest(nil, r.Resources, r.Scopes, []Span{a, b, a})
	got, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(out)
	require.NoError(t, err)
	require.Equal(t, 2, got.ResourceSpans().Len())
	assert.Equal(t, 2, got.ResourceSpans().At(0).ScopeSpans().At(0).Spans().Len())
	assert.Equal(t, 1, got.ResourceSpans().At(1).ScopeSpans().At(0).Spans().Len())
	assert.Equal(t, "io.opentelemetry.okhttp", got.ResourceSpans().At(1).ScopeSpans().At(0).Scope().Name())
}

// Spans of one resource end with the same tail, the resource's own fields;
// the rest of the output decodes, with a tail of another call, to the same
// traces.
func TestResourceTail(t *testing.T) {
	td := richTraces(t)
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	require.NoError(t, Scan(marshal(t, td), &r))
	a, b := r.Spans[0], r.Spans[1] // same resource
	require.Equal(t, a.Resource, b.Resource)

	var e Encoder
	first := e.Append(nil, r.Resources, r.Scopes, []Span{a})
	res, n := e.ResourceTail()
	assert.Equal(t, a.Resource, res)
	require.Positive(t, n)
	tail := first[len(first)-n:]
	assert.Equal(t, r.Resources[res].Raw, tail[len(tail)-len(r.Resources[res].Raw):], "the tail ends with the resource")

	second := e.Append(nil, r.Resources, r.Scopes, []Span{a, b})
	res2, n2 := e.ResourceTail()
	assert.Equal(t, res, res2)
	require.Equal(t, n, n2)
	assert.Equal(t, tail, second[len(second)-n2:])
	joined := append(second[:len(second)-n2:len(second)-n2], tail...)
	got, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(joined)
	require.NoError(t, err)
	assert.Equal(t, 2, got.SpanCount())
	assert.Equal(t, 1, got.ResourceSpans().Len())

	b.Resource = 2
	e.Append(nil, r.Resources, r.Scopes, []Span{a, b})
	res, n = e.ResourceTail()
	assert.Equal(t, -1, res, "spans of two resources have no common tail")
	assert.Zero(t, n)
	e.Append(nil, r.Resources, r.Scopes, nil)
	res, n = e.ResourceTail()
	assert.Equal(t, -1, res)
	assert.Zero(t, n)
}

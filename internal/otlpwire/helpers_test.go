package otlpwire

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/tracesift/tracesift/internal/model"
)

// timeoutRule is the timeout rule of internal/model as the sampler hands it
// to Scan (tailsampler's timeoutMarks).
var timeoutRule = func() *MarkRule {
	m := &MarkRule{TextKeys: model.TimeoutTextKeys, EventName: model.ExceptionEvent,
		EventTextKeys: model.TimeoutEventTextKeys, Words: model.TimeoutWords}
	for _, kv := range model.TimeoutStatuses {
		m.Values = append(m.Values, KeyValues{Key: kv.Key, Values: kv.Values})
	}
	return m
}()

// timedOut is the model's answer for a decoded span, which Span.Marked must
// agree with under timeoutRule.
func timedOut(span ptrace.Span) bool {
	s := model.SpanFromPdata(span, "", "", "")
	cause, _ := s.TimedOut()
	return cause != model.NotTimedOut
}

// refServiceName is how tailsampler names a resource's service, except for
// arrays and maps, which Scan leaves empty (see Resource.ServiceName).
func refServiceName(res pcommon.Resource) string {
	v, ok := res.Attributes().Get("service.name")
	if !ok || v.Type() == pcommon.ValueTypeMap || v.Type() == pcommon.ValueTypeSlice {
		return ""
	}
	return v.AsString()
}

// testHostKeys name a host as the store does.
var testHostKeys = []string{"host.name", "host.id", "k8s.pod.name"}

// testResourceKeys are read into Resource.Values: one of them a host key
// too, one service.name, one that the test data never sets.
var testResourceKeys = []string{"service.instance.id", "host.name", "service.name", "service.version", "never.set"}

// testSpanKeys are read into SpanValues.
var testSpanKeys = []string{"http.route", "exception.type", "error.type", "http.response.status_code", "never.set"}

// refAttrValues are the values of keys in attrs as pdata sees them: nil when
// absent or an array or a map.
func refAttrValues(attrs pcommon.Map, keys []string) [][]byte {
	out := make([][]byte, len(keys))
	for k, key := range keys {
		v, ok := attrs.Get(key)
		if ok && v.Type() != pcommon.ValueTypeMap && v.Type() != pcommon.ValueTypeSlice {
			out[k] = []byte(v.AsString())
		}
	}
	return out
}

// refValues are Resource.Values as pdata sees them: nil when the attribute is
// absent or an array or a map.
func refValues(res pcommon.Resource) [][]byte {
	out := make([][]byte, len(testResourceKeys))
	for k, key := range testResourceKeys {
		v, ok := res.Attributes().Get(key)
		if ok && v.Type() != pcommon.ValueTypeMap && v.Type() != pcommon.ValueTypeSlice {
			out[k] = []byte(v.AsString())
		}
	}
	return out
}

// refHostName is how the store names a resource's host, except for arrays
// and maps, which Scan does not use (see Resource.HostName).
func refHostName(res pcommon.Resource) string {
	for _, k := range testHostKeys {
		v, ok := res.Attributes().Get(k)
		if !ok || v.Type() == pcommon.ValueTypeMap || v.Type() == pcommon.ValueTypeSlice {
			continue
		}
		if s := v.AsString(); s != "" {
			return s
		}
	}
	return ""
}

// decodePdata decodes req the way the Collector's OTLP receiver does.
func decodePdata(req []byte) (ptrace.Traces, error) {
	er := ptraceotlp.NewExportRequest()
	if err := er.UnmarshalProto(req); err != nil {
		return ptrace.Traces{}, err
	}
	return er.Traces(), nil
}

// checkAgainstPdata compares everything Scan extracted into r with pdata's
// view td of the same bytes, then checks that AppendRequest of all spans
// decodes back to td.
func checkAgainstPdata(t testing.TB, td ptrace.Traces, r *Request) {
	t.Helper()
	rss := td.ResourceSpans()
	require.Equal(t, rss.Len(), len(r.Resources), "resources")
	scope, span := 0, 0
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := r.Resources[i]
		assert.Equal(t, rs.SchemaUrl(), string(res.SchemaURL), "resource %d schema url", i)
		assert.Equal(t, refServiceName(rs.Resource()), string(res.ServiceName), "resource %d service name", i)
		assert.Equal(t, refHostName(rs.Resource()), string(res.HostName), "resource %d host name", i)
		if len(r.ResourceKeys) > 0 {
			require.Len(t, res.Values, len(r.ResourceKeys), "resource %d values", i)
			for k, want := range refValues(rs.Resource()) {
				assert.Equal(t, want == nil, res.Values[k] == nil, "resource %d: %s set", i, testResourceKeys[k])
				assert.Equal(t, string(want), string(res.Values[k]), "resource %d: %s", i, testResourceKeys[k])
			}
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			require.Less(t, scope, len(r.Scopes), "scopes")
			sc := r.Scopes[scope]
			assert.Equal(t, i, sc.Resource, "scope %d resource", scope)
			assert.Equal(t, ss.SchemaUrl(), string(sc.SchemaURL), "scope %d schema url", scope)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				want := spans.At(k)
				require.Less(t, span, len(r.Spans), "spans")
				got := r.Spans[span]
				where := fmt.Sprintf("span %d (%d/%d/%d)", span, i, j, k)
				assert.Equal(t, [16]byte(want.TraceID()), got.TraceID, where)
				assert.Equal(t, [8]byte(want.SpanID()), got.SpanID, where)
				assert.Equal(t, [8]byte(want.ParentSpanID()), got.ParentSpanID, where)
				assert.Equal(t, want.Name(), string(got.Name), where)
				assert.Equal(t, uint64(want.StartTimestamp()), got.Start, where)
				assert.Equal(t, uint64(want.EndTimestamp()), got.End, where)
				assert.Equal(t, int32(want.Kind()), got.Kind, where)
				assert.Equal(t, int32(want.Status().Code()), got.StatusCode, where)
				assert.Equal(t, timedOut(want), got.Marked, where)
				if len(r.SpanKeys) > 0 {
					gotVals := r.SpanValues(span)
					for k, v := range refAttrValues(want.Attributes(), r.SpanKeys) {
						assert.Equal(t, v == nil, gotVals[k] == nil, "%s: %s set", where, r.SpanKeys[k])
						assert.Equal(t, string(v), string(gotVals[k]), "%s: %s", where, r.SpanKeys[k])
					}
				}
				assert.Equal(t, !want.TraceID().IsEmpty() && !want.SpanID().IsEmpty(), got.Valid(), where)
				assert.Equal(t, i, got.Resource, where)
				assert.Equal(t, scope, got.Scope, where)
				span++
			}
			scope++
		}
	}
	assert.Equal(t, scope, len(r.Scopes), "scopes")
	assert.Equal(t, span, len(r.Spans), "spans")

	out := AppendRequest(nil, r.Resources, r.Scopes, r.Spans)
	back, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(out)
	require.NoError(t, err, "AppendRequest output must decode")
	assertSameTraces(t, withoutEmpty(td), back)
}

// withoutEmpty is td without the resources and scopes that hold no span:
// AppendRequest writes only what the given spans need.
func withoutEmpty(td ptrace.Traces) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	out.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool { return ss.Spans().Len() == 0 })
		return rs.ScopeSpans().Len() == 0
	})
	return out
}

func assertSameTraces(t testing.TB, want, got ptrace.Traces) {
	t.Helper()
	var m ptrace.JSONMarshaler
	wj, err := m.MarshalTraces(want)
	require.NoError(t, err)
	gj, err := m.MarshalTraces(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(wj), string(gj))
}

func marshal(t testing.TB, td ptrace.Traces) []byte {
	t.Helper()
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return b
}

func traceID(n uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], 0x0af7651916cd43dd)
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

func spanID(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n|1<<63)
	return id
}

// richTraces sets every field OTLP has at every level, with attributes of
// every value type, for the differential tests.
func richTraces(t testing.TB) ptrace.Traces {
	t.Helper()
	td := ptrace.NewTraces()
	n := uint64(0)
	for ri, service := range []any{"checkout", int64(42), nil, "payments"} {
		rs := td.ResourceSpans().AppendEmpty()
		if service != nil {
			require.NoError(t, rs.Resource().Attributes().FromRaw(map[string]any{
				"host.name": fmt.Sprintf("host-%d", ri), "service.name": service,
			}))
		}
		rs.Resource().SetDroppedAttributesCount(uint32(ri))
		if ri%2 == 0 {
			rs.SetSchemaUrl(fmt.Sprintf("https://opentelemetry.io/schemas/1.%d.0", ri))
		}
		for si := range 2 {
			ss := rs.ScopeSpans().AppendEmpty()
			if si == 0 {
				ss.Scope().SetName("io.opentelemetry.okhttp")
				ss.Scope().SetVersion("2.1.0")
				ss.Scope().Attributes().PutStr("scope.attr", "x")
				ss.Scope().SetDroppedAttributesCount(1)
				ss.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
			}
			for k := range 3 {
				n++
				sp := ss.Spans().AppendEmpty()
				sp.SetTraceID(traceID(n % 4))
				sp.SetSpanID(spanID(n))
				if k > 0 {
					sp.SetParentSpanID(spanID(n - 1))
				}
				sp.TraceState().FromRaw("rojo=00f067aa0ba902b7")
				sp.SetFlags(0x101)
				sp.SetName(fmt.Sprintf("GET /api/%d", n))
				sp.SetKind(ptrace.SpanKind(n % 6))
				sp.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + n*1000))
				sp.SetEndTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + n*1000 + 999))
				require.NoError(t, sp.Attributes().FromRaw(map[string]any{
					"str":    "value",
					"bool":   true,
					"int":    int64(-7),
					"double": 3.25,
					"bytes":  []byte{0, 1, 2},
					"slice":  []any{"a", int64(1), []any{true}},
					"map":    map[string]any{"k": "v", "nested": map[string]any{"deep": 1.5}},
				}))
				sp.Attributes().PutEmpty("empty")
				switch n % 5 {
				case 1:
					sp.Attributes().PutInt("http.response.status_code", 504)
				case 2:
					sp.Attributes().PutStr("rpc.grpc.status_code", "deadline_exceeded")
				case 3:
					sp.Attributes().PutDouble("http.status_code", 200)
				}
				sp.SetDroppedAttributesCount(2)
				ev := sp.Events().AppendEmpty()
				ev.SetTimestamp(pcommon.Timestamp(1_700_000_000_000_000_500 + n))
				ev.SetName("exception")
				ev.Attributes().PutStr("exception.type", []string{"java.io.IOException", "java.net.SocketTimeoutException"}[n%2])
				ev.Attributes().PutInt("http.status_code", 504) // ignored on events
				ev.SetDroppedAttributesCount(3)
				sp.Events().AppendEmpty().SetName("log")
				sp.SetDroppedEventsCount(4)
				link := sp.Links().AppendEmpty()
				link.SetTraceID(traceID(99))
				link.SetSpanID(spanID(99))
				link.TraceState().FromRaw("k=v")
				link.Attributes().PutStr("link.kind", "follows")
				link.SetDroppedAttributesCount(5)
				link.SetFlags(1)
				sp.Links().AppendEmpty()
				sp.SetDroppedLinksCount(6)
				sp.Status().SetCode(ptrace.StatusCode(n % 3))
				if n%4 == 0 {
					sp.Status().SetMessage("upstream request timed out")
				} else if n%4 == 1 {
					sp.Status().SetMessage("connection refused")
				}
			}
		}
	}
	// A span with no ids at all, which Scan returns and Valid rejects.
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty().SetName("no ids")
	return td
}

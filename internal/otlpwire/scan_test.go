package otlpwire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tracesift/tracesift/internal/model"
)

func TestScanMatchesPdata(t *testing.T) {
	td := richTraces(t)
	req := marshal(t, td)
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	require.NoError(t, Scan(req, &r))
	require.Len(t, r.Spans, 4*2*3+1)
	checkAgainstPdata(t, td, &r)

	// Raw slices alias the request and are the exact span bytes.
	for _, sp := range r.Spans {
		require.True(t, bytes.Contains(req, sp.Raw))
	}
	assert.False(t, r.Spans[3].Valid(), "the span without ids")

	// A reused Request gives the same answer.
	first := append([]Span(nil), r.Spans...)
	require.NoError(t, Scan(req, &r))
	assert.Equal(t, first, r.Spans)
}

func TestScanServiceNameRendering(t *testing.T) {
	for _, v := range []any{"svc", "", int64(-12), true, 1e21, 0.5, 1e-7, []byte("hi"), []any{"a"}, map[string]any{"a": 1}} {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		require.NoError(t, rs.Resource().Attributes().FromRaw(map[string]any{"service.name": v}))
		rs.Resource().Attributes().PutStr("service.name.other", "no")
		rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
		require.NoError(t, Scan(marshal(t, td), &r))
		assert.Equal(t, refServiceName(rs.Resource()), string(r.Resources[0].ServiceName), "%#v", v)
	}
}

func TestScanEmpty(t *testing.T) {
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	require.NoError(t, Scan(nil, &r))
	assert.Empty(t, r.Spans)
	assert.Empty(t, AppendRequest(nil, nil, nil, nil))

	// A ResourceSpans with nothing in it still counts as a resource.
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	require.NoError(t, Scan(marshal(t, td), &r))
	assert.Len(t, r.Resources, 1)
	assert.Len(t, r.Scopes, 1)
	assert.Empty(t, r.Spans)
}

// Under the timeout rule, a span is marked on the wire exactly when the
// model says the decoded span timed out.
func TestTimeoutMarksMatchTheModel(t *testing.T) {
	type ev struct {
		name  string
		attrs map[string]any
	}
	exc := func(attrs map[string]any) []ev { return []ev{{name: "exception", attrs: attrs}} }
	const errCode, okCode = ptrace.StatusCodeError, ptrace.StatusCodeOk
	tests := []struct {
		name    string
		status  ptrace.StatusCode
		message string
		attrs   map[string]any
		events  []ev
		want    bool
	}{
		{"healthy", 0, "", map[string]any{"http.response.status_code": 200, "http.route": "/a"}, nil, false},
		{"status ok with 200", okCode, "", nil, nil, false},
		{"status error", errCode, "", nil, nil, false},
		{"error with non-timeout message", errCode, "connection refused", nil, nil, false},
		{"http 500 is an error, not a timeout", errCode, "", map[string]any{"http.response.status_code": 500}, nil, false},

		{"http.response.status_code 504 int", 0, "", map[string]any{"http.response.status_code": 504}, nil, true},
		{"http.response.status_code 408 int", 0, "", map[string]any{"http.response.status_code": 408}, nil, true},
		{"http.response.status_code 504 string", 0, "", map[string]any{"http.response.status_code": "504"}, nil, true},
		{"http.status_code 504 int", 0, "", map[string]any{"http.status_code": 504}, nil, true},
		{"http.status_code 408 string", 0, "", map[string]any{"http.status_code": "408"}, nil, true},
		{"http.status_code 503 is not a timeout", 0, "", map[string]any{"http.status_code": 503}, nil, false},
		{"504 under another key is ignored", 0, "", map[string]any{"app.code": 504}, nil, false},

		{"grpc DEADLINE_EXCEEDED int", 0, "", map[string]any{"rpc.grpc.status_code": 4}, nil, true},
		{"grpc DEADLINE_EXCEEDED string", 0, "", map[string]any{"rpc.grpc.status_code": "4"}, nil, true},
		{"grpc UNAVAILABLE", 0, "", map[string]any{"rpc.grpc.status_code": 14}, nil, false},

		{"error.type java SocketTimeoutException", 0, "", map[string]any{"error.type": "java.net.SocketTimeoutException"}, nil, true},
		{"error.type context.DeadlineExceeded", 0, "", map[string]any{"error.type": "context.DeadlineExceeded"}, nil, true},
		{"error.type TIMEDOUT", 0, "", map[string]any{"error.type": "ETIMEDOUT"}, nil, true},
		{"error.type other", 0, "", map[string]any{"error.type": "java.io.IOException"}, nil, false},
		{"exception.type on span", 0, "", map[string]any{"exception.type": "System.TimeoutException"}, nil, true},
		{"exception event exception.type", 0, "", nil, exc(map[string]any{"exception.type": "java.util.concurrent.TimeoutException"}), true},
		{"exception event error.type", 0, "", nil, exc(map[string]any{"error.type": "deadline_exceeded"}), true},
		{"exception event, other type", 0, "", nil, exc(map[string]any{"exception.type": "NullPointerException"}), false},
		{"exception event message", 0, "", nil, exc(map[string]any{"exception.type": "IOException", "exception.message": "Read timed out"}), true},
		{"non-exception event is ignored", 0, "", nil, []ev{{name: "log", attrs: map[string]any{"exception.type": "TimeoutException"}}}, false},
		{"status code on event is ignored", 0, "", nil, exc(map[string]any{"http.status_code": 504}), false},
		{"timeout word in another attribute is ignored", 0, "", map[string]any{"db.statement": "SET lock_timeout = 1"}, nil, false},

		{"status message timed out", errCode, "Read timed out", nil, nil, true},
		{"status message deadline", errCode, "context deadline exceeded", nil, nil, true},
		{"status message Timeout upper case", errCode, "Upstream TIMEOUT after 30s", nil, nil, true},

		{"error and 504", errCode, "", map[string]any{"http.response.status_code": int64(504)}, nil, true},
		{"error and exception event timeout", errCode, "", nil, exc(map[string]any{"exception.type": "SocketTimeoutException"}), true},

		// Beyond the tailsampler table.
		{"http status double 504", 0, "", map[string]any{"http.response.status_code": 504.0}, nil, true},
		{"http status double 504.5", 0, "", map[string]any{"http.response.status_code": 504.5}, nil, false},
		{"grpc DEADLINE_EXCEEDED name, any case", 0, "", map[string]any{"rpc.grpc.status_code": "Deadline_Exceeded"}, nil, true},
		{"grpc 4 as double renders as 4", 0, "", map[string]any{"rpc.grpc.status_code": 4.0}, nil, true},
		{"grpc 4.5 is not", 0, "", map[string]any{"rpc.grpc.status_code": 4.5}, nil, false},
		{"a bool is not a status", 0, "", map[string]any{"http.status_code": true}, nil, false},
		{"timed_out", errCode, "upstream TIMED_OUT", nil, nil, true},
		{"timeout key in a nested map is ignored", 0, "", map[string]any{"m": map[string]any{"error.type": "timeout"}}, nil, false},
		{"grpc status on exception event is ignored", 0, "", nil, exc(map[string]any{"rpc.grpc.status_code": 4}), false},
		{"Exception event name is case sensitive", 0, "", nil, []ev{{name: "Exception", attrs: map[string]any{"exception.type": "Timeout"}}}, false},
		{"status message too short", errCode, "timeou", nil, nil, false},
		{"status message on OK span", okCode, "deadline", nil, nil, true},
		{"timed out needs the space", 0, "", map[string]any{"error.type": "time out"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			td := ptrace.NewTraces()
			span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			span.SetTraceID(traceID(1))
			span.SetSpanID(spanID(1))
			span.Status().SetCode(tt.status)
			span.Status().SetMessage(tt.message)
			require.NoError(t, span.Attributes().FromRaw(tt.attrs))
			for _, e := range tt.events {
				ev := span.Events().AppendEmpty()
				ev.SetName(e.name)
				require.NoError(t, ev.Attributes().FromRaw(e.attrs))
			}
			require.Equal(t, tt.want, timedOut(span), "the model's rule")

			r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
			require.NoError(t, Scan(marshal(t, td), &r))
			require.Len(t, r.Spans, 1)
			assert.Equal(t, tt.want, r.Spans[0].Marked)

			r = Request{}
			require.NoError(t, Scan(marshal(t, td), &r))
			assert.False(t, r.Spans[0].Marked, "no rule, no marks")
			assert.Equal(t, int32(tt.status), r.Spans[0].StatusCode)
		})
	}
}

// Text is read from string values on the wire; the model sees every value
// rendered as a string, so there a list naming a timeout counts (model,
// timeout.go). No instrumentation sends error.type as a list.
func TestTimeoutTextIsAStringOnTheWire(t *testing.T) {
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetTraceID(traceID(1))
	span.SetSpanID(spanID(1))
	span.Attributes().PutEmptySlice("error.type").AppendEmpty().SetStr("timeout")
	assert.True(t, timedOut(span))
	r := Request{Mark: timeoutRule}
	require.NoError(t, Scan(marshal(t, td), &r))
	assert.False(t, r.Spans[0].Marked)
}

func TestMarkRuleWords(t *testing.T) {
	for s, want := range map[string]bool{
		"":                                false,
		"timeout":                         true,
		"TimeOut":                         true,
		"java.net.SocketTimeoutException": true,
		"ETIMEDOUT":                       true,
		"Connection timed out":            true,
		"context.DeadlineExceeded":        true,
		"DEADLINE_EXCEEDED":               true,
		"time":                            false,
		"timed":                           false,
		"time out":                        false,
		"java.net.ConnectException":       false,
	} {
		assert.Equal(t, want, timeoutRule.names([]byte(s)), "%q", s)
		assert.Equal(t, want, model.NamesTimeout(s), "%q", s)
	}
}

// Hand-written wire messages, for what pdata's marshaler never produces.

func tag(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }

func fBytes(num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(tag(num, protowire.BytesType), v)
}

func fStr(num protowire.Number, s string) []byte { return fBytes(num, []byte(s)) }

func fMsg(num protowire.Number, parts ...[]byte) []byte { return fBytes(num, bytes.Join(parts, nil)) }

func fVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(tag(num, protowire.VarintType), v)
}

func fFixed64(num protowire.Number, v uint64) []byte {
	return protowire.AppendFixed64(tag(num, protowire.Fixed64Type), v)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

var (
	tid = bytes.Repeat([]byte{0xab}, 16)
	sid = bytes.Repeat([]byte{0xcd}, 8)
)

// request wraps span fields in one ResourceSpans and ScopeSpans.
func request(spanFields ...[]byte) []byte {
	return fMsg(1, fMsg(2, fMsg(2, spanFields...)))
}

// scanAgainstPdata scans req, asserts pdata agrees on acceptance, and when
// both accept, on every extracted field.
func scanAgainstPdata(t *testing.T, req []byte) (*Request, error) {
	t.Helper()
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	err := Scan(req, &r)
	td, perr := decodePdata(req)
	require.Equal(t, perr == nil, err == nil, "Scan: %v; pdata: %v", err, perr)
	if err != nil {
		require.ErrorIs(t, err, ErrMalformed)
		return &r, err
	}
	checkAgainstPdata(t, td, &r)
	return &r, nil
}

func TestScanWireOrderAndMerging(t *testing.T) {
	// Fields in reverse order, repeated singular fields (the last wins,
	// messages merge), and a value set twice inside one KeyValue.
	kvTimeoutValueFirst := fMsg(9,
		fMsg(2, fStr(1, "java.net.SocketTimeoutException")),
		fStr(1, "error.type"))
	req := request(
		fMsg(15, fStr(2, "it timed out")),
		fMsg(15, fVarint(3, 2)), // merges: message stays
		kvTimeoutValueFirst,
		fFixed64(8, 20), fFixed64(7, 10),
		fStr(5, "first"), fStr(5, "second"),
		fBytes(2, sid), fBytes(1, tid),
	)
	r, err := scanAgainstPdata(t, req)
	require.NoError(t, err)
	sp := r.Spans[0]
	assert.Equal(t, "second", string(sp.Name))
	assert.Equal(t, StatusError, sp.StatusCode)
	assert.True(t, sp.Marked)
	assert.Equal(t, uint64(10), sp.Start)
	assert.Equal(t, uint64(20), sp.End)

	// The second value replaces the first: no longer a string.
	req = request(fBytes(1, tid), fBytes(2, sid), fMsg(9,
		fStr(1, "error.type"),
		fMsg(2, fStr(1, "timeout")),
		fMsg(2, fVarint(3, 1))))
	r, err = scanAgainstPdata(t, req)
	require.NoError(t, err)
	assert.False(t, r.Spans[0].Marked)

	// An empty second id resets the first, as in pdata.
	r, err = scanAgainstPdata(t, request(fBytes(1, tid), fBytes(1, nil), fBytes(2, sid)))
	require.NoError(t, err)
	assert.False(t, r.Spans[0].Valid())

	// Event attributes before its name.
	r, err = scanAgainstPdata(t, request(fBytes(1, tid), fBytes(2, sid),
		fMsg(11, fMsg(3, fStr(1, "exception.type"), fMsg(2, fStr(1, "TimeoutException"))), fStr(2, "exception"))))
	require.NoError(t, err)
	assert.True(t, r.Spans[0].Marked)

	// A resource and a scope given twice merge: both halves' attributes.
	res1 := fMsg(1, fStr(1, "host.name"), fMsg(2, fStr(1, "a")))
	res2 := fMsg(1, fStr(1, "service.name"), fMsg(2, fStr(1, "svc")))
	req = fMsg(1,
		fMsg(1, res1), fMsg(1, res2),
		fMsg(2, fMsg(1, fStr(1, "scope-a")), fMsg(1, fStr(2, "v1")), fMsg(2, fBytes(1, tid), fBytes(2, sid))),
		fStr(3, "https://schema/1"))
	r, err = scanAgainstPdata(t, req)
	require.NoError(t, err)
	assert.Equal(t, "svc", string(r.Resources[0].ServiceName))
	assert.Equal(t, cat(res1, res2), r.Resources[0].Raw)
}

func TestScanUnknownFieldsAreSkipped(t *testing.T) {
	emptyGroup := cat(tag(103, protowire.StartGroupType), tag(103, protowire.EndGroupType))
	unknown := cat(
		emptyGroup, // not last: see below
		fVarint(99, 1<<40),
		fStr(100, "future"),
		fFixed64(101, 7),
		protowire.AppendFixed32(tag(102, protowire.Fixed32Type), 9),
	)
	anyValue := fMsg(2, unknown, fStr(1, "4"))
	req := fMsg(1,
		unknown,
		fMsg(1, unknown, fMsg(1, unknown, fStr(1, "service.name"), fMsg(2, fStr(1, "svc"), unknown)), fMsg(3, unknown, fStr(2, "t"))),
		fMsg(2, unknown,
			fMsg(1, unknown, fStr(1, "scope")),
			fMsg(2, unknown, fBytes(1, tid), fBytes(2, sid),
				fMsg(9, unknown, fStr(1, "rpc.grpc.status_code"), anyValue),
				fMsg(11, unknown, fStr(2, "exception")),
				fMsg(13, unknown, fBytes(1, tid)),
				fMsg(15, unknown, fVarint(3, 1)),
			)),
	)
	req = cat(unknown, req, unknown)
	r, err := scanAgainstPdata(t, req)
	require.NoError(t, err)
	require.Len(t, r.Spans, 1)
	assert.True(t, r.Spans[0].Marked)
	assert.Equal(t, "svc", string(r.Resources[0].ServiceName))

	// pdata's skipping of groups (proto2, unused by OTLP) has quirks that
	// Scan reproduces so that both accept the same bytes: a group that ends
	// its message, and any group with a field inside, are rejected.
	_, err = scanAgainstPdata(t, request(fBytes(1, tid), emptyGroup))
	require.Error(t, err)
	_, err = scanAgainstPdata(t, request(tag(103, protowire.StartGroupType), fVarint(1, 1), tag(103, protowire.EndGroupType), fBytes(1, tid)))
	require.Error(t, err)
	_, err = scanAgainstPdata(t, request(emptyGroup, fBytes(1, tid)))
	require.NoError(t, err)
}

// Old senders put spans in ResourceSpans field 1000
// (instrumentation_library_spans); the Collector reads them only when there
// are no scope_spans.
func TestScanDeprecatedScopeSpans(t *testing.T) {
	span := func(name string) []byte { return fMsg(2, fBytes(1, tid), fBytes(2, sid), fStr(5, name)) }
	old := fMsg(1000, fMsg(1, fStr(1, "lib")), span("old"))

	r, err := scanAgainstPdata(t, fMsg(1, old, old))
	require.NoError(t, err)
	require.Len(t, r.Spans, 2)
	assert.Equal(t, "old", string(r.Spans[0].Name))

	r, err = scanAgainstPdata(t, fMsg(1, old, fMsg(2, span("new")), old))
	require.NoError(t, err)
	require.Len(t, r.Spans, 1)
	assert.Equal(t, "new", string(r.Spans[0].Name))
	assert.Len(t, r.Scopes, 1)

	// Superseded, yet still validated, as pdata does.
	_, err = scanAgainstPdata(t, fMsg(1, fMsg(2, span("new")), fMsg(1000, fMsg(2, fBytes(1, tid[:3])))))
	require.Error(t, err)
}

func TestScanDoesNotAllocate(t *testing.T) {
	req := benchRequest(t)
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	require.NoError(t, Scan(req, &r))
	allocs := testing.AllocsPerRun(20, func() {
		if err := Scan(req, &r); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)

	var e Encoder
	dst := e.Append(nil, r.Resources, r.Scopes, r.Spans)
	allocs = testing.AllocsPerRun(20, func() {
		dst = e.Append(dst[:0], r.Resources, r.Scopes, r.Spans)
	})
	assert.Zero(t, allocs)
}

func TestReset(t *testing.T) {
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	require.NoError(t, Scan(marshal(t, richTraces(t)), &r))
	spans := r.Spans[:cap(r.Spans)]
	r.Reset()
	assert.Empty(t, r.Spans)
	assert.Nil(t, spans[0].Raw, "no reference to the old request is kept")
}

func TestErrorUnwrap(t *testing.T) {
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	err := Scan(request(fBytes(1, tid))[:10], &r)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrMalformed)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	var se *Error
	require.True(t, errors.As(err, &se))
}

// parseKeyValueFast must decide exactly as the field-by-field path whenever
// it decides at all: checked on attributes of every scalar type, in both
// field orders, and on every one-byte corruption of them.
func TestParseKeyValueFastMatchesFields(t *testing.T) {
	var encodings [][]byte
	values := [][]byte{
		fStr(1, "java.net.SocketTimeoutException"), fStr(1, ""), fVarint(2, 1), fVarint(2, 0), fVarint(2, 300),
		fVarint(3, 504), fVarint(3, 1<<63), fFixed64(4, 0x4080000000000000), fBytes(7, []byte{1}),
		fMsg(5, fMsg(1, fStr(1, "x"))), nil, cat(fStr(1, "a"), fVarint(3, 1)),
	}
	for _, v := range values {
		key, val := fStr(1, "error.type"), fBytes(2, v)
		encodings = append(encodings, cat(key, val), cat(val, key), key, val, cat(key, val, key), cat(key, fMsg(2, v, v)))
	}
	// pdata's own encoding of each scalar type.
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	require.NoError(t, span.Attributes().FromRaw(map[string]any{"s": "v", "b": true, "i": int64(-1), "d": 504.0, "e": nil}))
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
	require.NoError(t, Scan(marshal(t, td), &r))
	for raw := r.Spans[0].Raw; len(raw) > 0; {
		fl, next, f := readField(raw, 0)
		require.Equal(t, faultNone, f)
		if fl.num == 9 {
			encodings = append(encodings, raw[fl.s:fl.e])
		}
		raw = raw[next:]
	}

	check := func(b []byte) {
		var fast, slow keyValue
		if !parseKeyValueFast(b, &fast) {
			return
		}
		require.Nil(t, parseKeyValueFields(b, 0, 0, &slow), "% x", b)
		require.Equal(t, slow, fast, "% x", b)
	}
	decided := 0
	for _, enc := range encodings {
		var kv keyValue
		if parseKeyValueFast(enc, &kv) {
			decided++
		}
		check(enc)
		for i := range enc {
			for _, c := range []byte{0x00, 0x01, 0x02, 0x0a, 0x12, 0x18, 0x7f, 0x80, 0xff, enc[i] + 1, enc[i] - 1} {
				m := bytes.Clone(enc)
				m[i] = c
				check(m)
				check(m[:i])
			}
		}
	}
	assert.Greater(t, decided, 15, "the fast path must take the common encodings")
}

func TestScanHostName(t *testing.T) {
	for _, tc := range []struct {
		attrs map[string]any
		want  string
	}{
		{map[string]any{"host.name": "web-1", "host.id": "i-123", "k8s.pod.name": "pod"}, "web-1"},
		{map[string]any{"host.id": "i-123", "k8s.pod.name": "pod"}, "i-123"},
		{map[string]any{"k8s.pod.name": "pod"}, "pod"},
		{map[string]any{"host.name": "", "k8s.pod.name": "pod"}, "pod"},
		{map[string]any{"host.id": int64(42)}, "42"},
		{map[string]any{"service.name": "svc"}, ""},
	} {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		require.NoError(t, rs.Resource().Attributes().FromRaw(tc.attrs))
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID([16]byte{1})
		sp.SetSpanID([8]byte{1})
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
		require.NoError(t, Scan(b, &r))
		assert.Equal(t, tc.want, string(r.Resources[0].HostName), "%v", tc.attrs)
		assert.Equal(t, refHostName(rs.Resource()), tc.want)
	}
}

// Which attributes name the host, and in which order, is the caller's.
func TestScanHostKeysAreTheCallers(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	require.NoError(t, rs.Resource().Attributes().FromRaw(map[string]any{"host.name": "web-1", "k8s.pod.name": "pod", "node": "n-1"}))
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID([16]byte{1})
	sp.SetSpanID([8]byte{1})
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{nil, ""},
		{[]string{"k8s.pod.name", "host.name"}, "pod"},
		{[]string{"missing", "node"}, "n-1"},
		{[]string{"a", "b", "c", "d", "host.name"}, ""}, // past maxHostKeys
	} {
		r := Request{HostKeys: tc.keys}
		require.NoError(t, Scan(b, &r))
		assert.Equal(t, tc.want, string(r.Resources[0].HostName), "%v", tc.keys)
	}
}

func TestResourceValues(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	a := rs.Resource().Attributes()
	a.PutStr("service.instance.id", "")
	a.PutInt("service.version", 7)
	a.PutEmptySlice("host.name").AppendEmpty().SetStr("h")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(traceID(1))
	sp.SetSpanID(spanID(1))
	other := td.ResourceSpans().AppendEmpty()
	other.Resource().Attributes().PutStr("service.version", "2.1")
	r, err := scanAgainstPdata(t, marshal(t, td))
	require.NoError(t, err)
	v := r.Resources[0].Values
	assert.Equal(t, []byte{}, v[0], "an empty value is set")
	assert.Nil(t, v[1], "an array is not a value")
	assert.Nil(t, v[2])
	assert.Equal(t, "7", string(v[3]), "rendered as pdata renders an int")
	assert.Nil(t, v[4])
	assert.Equal(t, "2.1", string(r.Resources[1].Values[3]), "each resource its own")

	// A repeated key: the first occurrence counts, as with pdata's Map.Get.
	kv := func(k, v string) []byte { return fMsg(1, fStr(1, k), fMsg(2, fStr(1, v))) }
	req := fMsg(1, fMsg(1, kv("service.version", "1.0"), kv("service.version", "2.0")),
		fMsg(2, fMsg(2, fBytes(1, tid), fBytes(2, sid))))
	r, err = scanAgainstPdata(t, req)
	require.NoError(t, err)
	assert.Equal(t, "1.0", string(r.Resources[0].Values[3]))
}

// A Request scanned again with other SpanKeys reads the values of those:
// the keys are indexed by length anew; keys of one length are told apart.
func TestSpanKeysChangeBetweenScans(t *testing.T) {
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	require.NoError(t, sp.Attributes().FromRaw(map[string]any{"http.route": "/cat", "error.type": "500", "peer.service": "dog"}))
	req := marshal(t, td)
	r := Request{SpanKeys: []string{"http.route", "error.type"}}
	require.NoError(t, Scan(req, &r))
	assert.Equal(t, [][]byte{[]byte("/cat"), []byte("500")}, r.SpanValues(0))
	r.SpanKeys = []string{"peer.service", "error.type", "absent"}
	require.NoError(t, Scan(req, &r))
	assert.Equal(t, [][]byte{[]byte("dog"), []byte("500"), nil}, r.SpanValues(0))
}

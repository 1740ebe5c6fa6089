package otlpwire

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The benchmark request is the shape of the measured OTLP traffic: 500
// spans in traces of 10, from 4 services, 10 attributes per span, about
// 340 bytes per span on the wire.
const (
	benchSpans         = 500
	benchSpansPerTrace = 10
	benchServices      = 4
)

func benchTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	scopes := make([]ptrace.SpanSlice, benchServices)
	for s := range benchServices {
		rs := td.ResourceSpans().AppendEmpty()
		attrs := rs.Resource().Attributes()
		attrs.PutStr("service.name", fmt.Sprintf("service-%d", s))
		attrs.PutStr("host.name", fmt.Sprintf("ip-10-0-%d-17.ec2.internal", s))
		attrs.PutStr("telemetry.sdk.language", "java")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("io.opentelemetry.tomcat-10.0")
		ss.Scope().SetVersion("2.10.0-alpha")
		scopes[s] = ss.Spans()
	}
	for i := range benchSpans {
		trace, k := i/benchSpansPerTrace, i%benchSpansPerTrace
		sp := scopes[k%benchServices].AppendEmpty()
		sp.SetTraceID(traceID(uint64(trace)*0x9e3779b97f4a7c15 + 1))
		sp.SetSpanID(spanID(uint64(i + 1)))
		if k > 0 {
			sp.SetParentSpanID(spanID(uint64(i)))
		}
		sp.SetName(fmt.Sprintf("GET /orders/{id} %d", k))
		sp.SetKind(ptrace.SpanKindServer)
		start := pcommon.Timestamp(1_760_000_000_000_000_000 + uint64(i)*1_000_000)
		sp.SetStartTimestamp(start)
		sp.SetEndTimestamp(start + 3_500_000)
		a := sp.Attributes()
		a.PutStr("http.request.method", "GET")
		a.PutStr("http.route", "/orders/{id}")
		a.PutInt("http.response.status_code", 200)
		a.PutStr("url.path", fmt.Sprintf("/orders/%d", 100000+i))
		a.PutStr("url.scheme", "https")
		a.PutStr("server.address", "orders")
		a.PutInt("server.port", 8443)
		a.PutStr("net.transport", "ip_tcp")
		a.PutStr("peer.service", "inventory")
		a.PutInt("thread.id", int64(40+i%16))
		if i%37 == 0 {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage("upstream connect error")
		}
	}
	return td
}

func benchRequest(tb testing.TB) []byte {
	return marshal(tb, benchTraces())
}

func BenchmarkScan(b *testing.B) {
	req := benchRequest(b)
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys}
	if err := Scan(req, &r); err != nil { // grow r's slices, as a pooled Request has
		b.Fatal(err)
	}
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Scan(req, &r); err != nil {
			b.Fatal(err)
		}
	}
	reportSpans(b)
}

func BenchmarkPdataUnmarshal(b *testing.B) {
	req := benchRequest(b)
	var u ptrace.ProtoUnmarshaler
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := u.UnmarshalTraces(req); err != nil {
			b.Fatal(err)
		}
	}
	reportSpans(b)
}

// BenchmarkEncoderKept writes back the spans of 1 trace in 30, about what a
// sampler keeps.
func BenchmarkEncoderKept(b *testing.B) {
	req := benchRequest(b)
	r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys}
	if err := Scan(req, &r); err != nil {
		b.Fatal(err)
	}
	var kept []Span
	for _, sp := range r.Spans {
		if sp.TraceID[15]%30 == 0 {
			kept = append(kept, sp)
		}
	}
	var e Encoder
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = e.Append(dst[:0], r.Resources, r.Scopes, kept)
	}
	b.ReportMetric(float64(len(kept)), "spans/op")
}

func reportSpans(b *testing.B) {
	b.ReportMetric(float64(b.N)*benchSpans/b.Elapsed().Seconds(), "spans/s")
}

func TestBenchRequestShape(t *testing.T) {
	req := benchRequest(t)
	perSpan := len(req) / benchSpans
	t.Logf("benchmark request: %d bytes, %d per span", len(req), perSpan)
	if perSpan < 300 || perSpan > 380 {
		t.Errorf("%d bytes per span, want about 340", perSpan)
	}
}

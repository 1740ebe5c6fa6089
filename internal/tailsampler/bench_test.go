package tailsampler

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/tracesift/tracesift/internal/otlpwire"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tailsampler/internal/metadata"
	"github.com/tracesift/tracesift/internal/tenant"
)

const (
	benchSpansPerRequest = 500
	benchSpansPerTrace   = 10
)

// benchRequest is the shape of the measured OTLP traffic:
// 500 spans, 10 attributes each, here as 50 traces of 10 spans.
func benchRequest() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	rs.Resource().Attributes().PutStr("host.name", "node-17")
	rs.Resource().Attributes().PutStr("telemetry.sdk.language", "java")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("io.opentelemetry.spring-webmvc-6.0")
	base := pcommon.NewTimestampFromTime(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	for i := range benchSpansPerRequest {
		span := ss.Spans().AppendEmpty()
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], uint64(i)+1)
		span.SetSpanID(sid)
		span.SetName("GET /api/orders/{id}")
		span.SetKind(ptrace.SpanKindServer)
		span.SetStartTimestamp(base + pcommon.Timestamp(i)*1000)
		span.SetEndTimestamp(base + pcommon.Timestamp(i)*1000 + 2_000_000)
		a := span.Attributes()
		a.PutStr("http.request.method", "GET")
		a.PutStr("http.route", "/api/orders/{id}")
		a.PutInt("http.response.status_code", 200)
		a.PutStr("url.path", "/api/orders/12345")
		a.PutStr("url.scheme", "https")
		a.PutStr("server.address", "orders.internal")
		a.PutInt("server.port", 8443)
		a.PutStr("network.protocol.version", "1.1")
		a.PutStr("user_agent.original", "okhttp/4.12.0")
		a.PutStr("client.address", "10.1.2.3")
	}
	return td
}

// setBenchTraceIDs gives request number n its own 50 trace ids so that every
// iteration buffers new traces instead of hitting the decision cache.
func setBenchTraceIDs(td ptrace.Traces, n uint64) {
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		var id pcommon.TraceID
		binary.BigEndian.PutUint64(id[:8], n)
		binary.BigEndian.PutUint64(id[8:], (n*benchSpansPerRequest+uint64(i/benchSpansPerTrace))*0x9e3779b97f4a7c15)
		spans.At(i).SetTraceID(id)
	}
}

// benchSampler is a started sampler with a fake clock and no ticker.
func benchSampler(b *testing.B, shards int) (*sampler, *fakeClock, *Config) {
	cfg := createDefaultConfig()
	cfg.NumShards = shards
	cfg.GoMemoryLimit = -1
	proc, err := NewFactory().CreateTraces(context.Background(),
		processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	p := proc.(*sampler)
	clock := newFakeClock()
	p.now = clock.Now
	p.tick = 0
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := p.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
	})
	return p, clock, cfg
}

// benchLoop sends requests, with a decision pass (default 1 % baseline)
// every 64 so the buffers stay bounded, and reports spans/s.
func benchLoop(b *testing.B, p *sampler, clock *fakeClock, cfg *Config, consume func(i int) error) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := consume(i); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 {
			if err := p.decideAll(clock.Now().Add(cfg.DecisionWait)); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := p.decideAll(clock.Now().Add(cfg.DecisionWait)); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)*benchSpansPerRequest/b.Elapsed().Seconds(), "spans/s")
}

// BenchmarkConsumeTraces measures the processor path from pdata: encoding,
// scanning, grouping and copying, ingestion in the shards and decisions.
func BenchmarkConsumeTraces(b *testing.B) {
	for _, shards := range []int{1, 4} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			p, clock, cfg := benchSampler(b, shards)
			td := benchRequest()
			ctx := context.Background()
			benchLoop(b, p, clock, cfg, func(i int) error {
				setBenchTraceIDs(td, uint64(i))
				return p.ConsumeTraces(ctx, td)
			})
		})
	}
}

// BenchmarkConsumeRawTraces measures the receiver path: request bytes in,
// no pdata until a trace is kept.
func BenchmarkConsumeRawTraces(b *testing.B) {
	td := benchRequest()
	setBenchTraceIDs(td, 1) // non-zero ids: pdata leaves zero ones out
	req, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		b.Fatal(err)
	}
	// Where each span's trace id sits in req, to give every request new ids
	// in place.
	scanned := otlpwire.Request{HostKeys: store.HostKeys, Mark: timeoutMarks}
	if err := otlpwire.Scan(req, &scanned); err != nil {
		b.Fatal(err)
	}
	idOffsets := make([]int, len(scanned.Spans))
	from := 0
	for i := range scanned.Spans {
		sp := &scanned.Spans[i]
		at := from + bytes.Index(req[from:], sp.Raw)
		field := append([]byte{0x0a, 0x10}, sp.TraceID[:]...)
		idOffsets[i] = at + bytes.LastIndex(sp.Raw, field) + 2
		from = at + len(sp.Raw)
	}
	run := func(b *testing.B, shards int, ctx context.Context) {
		p, clock, cfg := benchSampler(b, shards)
		benchLoop(b, p, clock, cfg, func(i int) error {
			n := uint64(i) + 2
			for j, off := range idOffsets {
				binary.BigEndian.PutUint64(req[off:], n)
				binary.BigEndian.PutUint64(req[off+8:], (n*benchSpansPerRequest+uint64(j/benchSpansPerTrace))*0x9e3779b97f4a7c15)
			}
			return p.ConsumeRawTraces(ctx, req)
		})
	}
	for _, shards := range []int{1, 4} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) { run(b, shards, context.Background()) })
	}
	// A tenant other than the default: its traces are keyed (tenants.go).
	b.Run("shards=4/tenant", func(b *testing.B) { run(b, 4, tenant.NewContext(context.Background(), "acme")) })
}

// BenchmarkKeepReason is the per-span rule cost: a healthy span with 10
// attributes is the common and the most expensive case (every key is
// looked at).
func BenchmarkKeepReason(b *testing.B) {
	spans := benchRequest().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	healthy := spans.At(0)
	withException := ptrace.NewSpan()
	healthy.CopyTo(withException)
	withException.Status().SetCode(ptrace.StatusCodeError)
	withException.Status().SetMessage("Internal error")
	ev := withException.Events().AppendEmpty()
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.type", "java.lang.IllegalStateException")
	ev.Attributes().PutStr("exception.message", "order not found")

	for _, bc := range []struct {
		name string
		span ptrace.Span
	}{{"healthy", healthy}, {"error_with_exception", withException}} {
		b.Run(bc.name, func(b *testing.B) {
			id := pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
			rs := &ruleSet{keepErrors: true, keepTimeouts: true, keepSlow: true, slow: time.Second, baseline: baselineThreshold(0.01)}
			b.ReportAllocs()
			var r Reason
			td := ptrace.NewTraces()
			bc.span.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
			req, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
			if err != nil {
				b.Fatal(err)
			}
			scanned := otlpwire.Request{HostKeys: store.HostKeys, Mark: timeoutMarks}
			for b.Loop() {
				// Scanning is where the per-span rule work happens now.
				if err := otlpwire.Scan(req, &scanned); err != nil {
					b.Fatal(err)
				}
				c := newTraceChunk(id, 0)
				c.addSpan(&scanned.Spans[0], "svc", 0)
				r = decide(traceFacts{known: c.reason, hasError: c.hasError, hasTimeout: c.hasTimeout, e2e: 2 * time.Millisecond, id: id}, rs)
			}
			_ = r
		})
	}
}

package bench

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// The shape of the load (issue 3): 10-span traces over 4 services, 10
// attributes per span, 1 % of traces with an ERROR span, 1 % slow (≥ 1 s end
// to end by timestamps), the rest healthy and fast, in export requests of 500
// spans.
const (
	SpansPerTrace   = 10
	AttrsPerSpan    = 10
	SpansPerRequest = 500

	// CycleTraces is how many traces a Generator builds once and then re-sends
	// with fresh trace ids and timestamps: building 10 attributes per span for
	// every request would cost the load generator, which shares the two cores
	// with the server, about as much as decoding costs the server. A multiple
	// of 100 keeps the error and slow shares exact; 1000 makes every service's
	// share of spans (3, 3, 2, 2 per trace) a whole number of 500-span requests.
	CycleTraces = 1000

	// Trace slot k of a cycle is an error trace when k%100 == errorSlot and a
	// slow one when k%100 == slowSlot: exactly 1 % each.
	classPeriod = 100
	errorSlot   = 0
	slowSlot    = 50
)

// Services are the four services a trace crosses.
var Services = [...]string{"frontend", "checkout", "inventory", "payments"}

const (
	svcFrontend = iota
	svcCheckout
	svcInventory
	svcPayments
)

// Class is what a trace is meant to test: a tail sampler must keep every
// Error and Slow trace and about 1 % of the Healthy ones.
type Class uint8

const (
	Healthy Class = iota
	Error
	Slow
)

func (c Class) String() string {
	switch c {
	case Error:
		return "error"
	case Slow:
		return "slow"
	}
	return "healthy"
}

// SentTrace is one trace of interest that was sent whole.
type SentTrace struct {
	ID    pcommon.TraceID
	Class Class
}

// spanDef is one span of the trace topology: a checkout request entering the
// frontend, calling checkout over HTTP, which calls inventory and payments
// over gRPC; inventory queries its database and payments calls an external
// payment provider. from/to place the span inside the trace's duration.
type spanDef struct {
	service  int
	parent   int // index in topology, -1 for the root
	name     string
	kind     ptrace.SpanKind
	from, to float64
	attrs    func(a pcommon.Map, r *rand.Rand, c Class)
	// errMsg is the status message of this span in an Error trace; spans
	// without one stay UNSET there too.
	errMsg string
}

var topology = [SpansPerTrace]spanDef{
	{svcFrontend, -1, "POST /api/checkout", ptrace.SpanKindServer, 0, 1, httpServerAttrs("/api/checkout", "shop.example", 443), ""},
	{svcFrontend, 0, "POST", ptrace.SpanKindClient, 0.04, 0.86, httpClientAttrs("http://checkout:8080/orders", "checkout", 8080, 200), ""},
	{svcCheckout, 1, "POST /orders", ptrace.SpanKindServer, 0.06, 0.84, httpServerAttrs("/orders", "checkout", 8080), ""},
	{svcCheckout, 2, "inventory.Inventory/Reserve", ptrace.SpanKindClient, 0.09, 0.31, grpcClientAttrs("inventory.Inventory", "Reserve", "inventory"), ""},
	{svcInventory, 3, "inventory.Inventory/Reserve", ptrace.SpanKindServer, 0.1, 0.3, grpcServerAttrs("inventory.Inventory", "Reserve", "inventory"), ""},
	{svcInventory, 4, "SELECT inventory.stock", ptrace.SpanKindClient, 0.12, 0.27, dbAttrs, ""},
	{svcCheckout, 2, "payments.Payments/Charge", ptrace.SpanKindClient, 0.34, 0.81, grpcClientAttrs("payments.Payments", "Charge", "payments"), ""},
	{svcPayments, 6, "payments.Payments/Charge", ptrace.SpanKindServer, 0.35, 0.8, grpcServerAttrs("payments.Payments", "Charge", "payments"), "charge failed: payment provider error"},
	{svcPayments, 7, "POST", ptrace.SpanKindClient, 0.38, 0.77, httpClientAttrs("https://psp.example/charges", "psp.example", 443, 502), "HTTP 502 from payment provider"},
	{svcFrontend, 0, "render confirmation", ptrace.SpanKindInternal, 0.88, 0.98, renderAttrs, ""},
}

func ipv4(r *rand.Rand) string {
	return fmt.Sprintf("10.%d.%d.%d", r.IntN(8), r.IntN(256), 1+r.IntN(254))
}

var userAgents = []string{
	"Mozilla/5.0 (iPhone; iOS 18_1)",
	"Mozilla/5.0 (X11; Linux x86_64)",
	"okhttp/4.12.0",
}

func httpServerAttrs(route, host string, port int64) func(pcommon.Map, *rand.Rand, Class) {
	return func(a pcommon.Map, r *rand.Rand, _ Class) {
		a.PutStr("http.request.method", "POST")
		a.PutStr("http.route", route)
		a.PutStr("url.path", route)
		a.PutStr("url.scheme", "https")
		a.PutInt("http.response.status_code", 200)
		a.PutStr("server.address", host)
		a.PutInt("server.port", port)
		a.PutStr("client.address", ipv4(r))
		a.PutStr("user_agent.original", userAgents[r.IntN(len(userAgents))])
		a.PutStr("network.protocol.version", "1.1")
	}
}

func httpClientAttrs(url, host string, port, errStatus int64) func(pcommon.Map, *rand.Rand, Class) {
	return func(a pcommon.Map, r *rand.Rand, c Class) {
		status, scheme := int64(200), url[:strings.Index(url, ":")]
		if c == Error {
			status = errStatus
		}
		a.PutStr("http.request.method", "POST")
		a.PutStr("url.full", url)
		a.PutStr("server.address", host)
		a.PutInt("server.port", port)
		a.PutInt("http.response.status_code", status)
		a.PutStr("network.protocol.version", "1.1")
		a.PutStr("network.peer.address", ipv4(r))
		a.PutInt("network.peer.port", port)
		a.PutInt("http.request.body.size", 200+r.Int64N(1800))
		a.PutStr("url.scheme", scheme)
	}
}

func grpcClientAttrs(service, method, host string) func(pcommon.Map, *rand.Rand, Class) {
	return func(a pcommon.Map, r *rand.Rand, c Class) {
		code := int64(0) // OK
		if c == Error && service == "payments.Payments" {
			code = 13 // INTERNAL; never DEADLINE_EXCEEDED, which would make the trace a timeout
		}
		a.PutStr("rpc.system", "grpc")
		a.PutStr("rpc.service", service)
		a.PutStr("rpc.method", method)
		a.PutInt("rpc.grpc.status_code", code)
		a.PutStr("server.address", host)
		a.PutInt("server.port", 9090)
		a.PutStr("network.peer.address", ipv4(r))
		a.PutInt("network.peer.port", 9090)
		a.PutStr("network.transport", "tcp")
		a.PutStr("network.type", "ipv4")
	}
}

func grpcServerAttrs(service, method, host string) func(pcommon.Map, *rand.Rand, Class) {
	return func(a pcommon.Map, r *rand.Rand, c Class) {
		code := int64(0)
		if c == Error && service == "payments.Payments" {
			code = 13
		}
		a.PutStr("rpc.system", "grpc")
		a.PutStr("rpc.service", service)
		a.PutStr("rpc.method", method)
		a.PutInt("rpc.grpc.status_code", code)
		a.PutStr("server.address", host)
		a.PutInt("server.port", 9090)
		a.PutStr("client.address", ipv4(r))
		a.PutInt("client.port", 30000+r.Int64N(30000))
		a.PutStr("network.transport", "tcp")
		a.PutStr("network.type", "ipv4")
	}
}

func dbAttrs(a pcommon.Map, r *rand.Rand, _ Class) {
	a.PutStr("db.system.name", "postgresql")
	a.PutStr("db.namespace", "inventory")
	a.PutStr("db.operation.name", "SELECT")
	a.PutStr("db.collection.name", "stock")
	a.PutStr("db.query.summary", "SELECT stock")
	a.PutStr("server.address", "inventory-db")
	a.PutInt("server.port", 5432)
	a.PutStr("network.peer.address", ipv4(r))
	a.PutInt("db.response.returned_rows", 1)
	a.PutInt("network.peer.port", 5432)
}

func renderAttrs(a pcommon.Map, r *rand.Rand, _ Class) {
	a.PutStr("thread.name", fmt.Sprintf("exec-%d", 1+r.IntN(200)))
	a.PutInt("thread.id", 40+r.Int64N(400))
	a.PutStr("code.function.name", "Checkout.render")
	a.PutStr("code.file.path", "Checkout.java")
	a.PutInt("code.line.number", 214)
	a.PutInt("app.cart.items", 1+r.Int64N(12))
	a.PutStr("app.user.tier", []string{"free", "plus", "business"}[r.IntN(3)])
	a.PutStr("app.currency", []string{"EUR", "USD", "GBP"}[r.IntN(3)])
	a.PutStr("app.order.id", fmt.Sprintf("ord-%08d", r.IntN(1e8)))
	a.PutStr("app.template", "confirmation")
}

// Generator builds one cycle of CycleTraces traces, split into per-service
// export requests of SpansPerRequest spans, and re-sends it with new trace
// ids and timestamps on every NextCycle. It is not safe for concurrent use:
// each connection of a Load has its own.
type Generator struct {
	rng      *rand.Rand
	requests []request
	slots    [CycleTraces]slot
	ids      [CycleTraces]pcommon.TraceID
}

// slot is one trace of the cycle.
type slot struct {
	class Class
	dur   time.Duration // end to end
}

type request struct {
	req   ptraceotlp.ExportRequest
	spans ptrace.SpanSlice
	refs  []spanRef // one per span of spans
}

// spanRef says which trace slot a span of a request belongs to and where it
// sits in time relative to its trace's start.
type spanRef struct {
	slot     int32
	from, to time.Duration
}

// NewGenerator builds the cycle of connection worker (0, 1, …) with its own
// random stream: attribute values, span ids and durations differ by seed.
// The spans of each service are batched as that service's SDK would export
// them (in order of span end, 500 at a time), so the spans of one trace
// arrive in up to five requests: one per service, and a batch boundary can
// split one service's share of a trace.
func NewGenerator(worker int, seed uint64) *Generator {
	g := &Generator{rng: rand.New(rand.NewPCG(seed, uint64(worker)))}
	for k := range g.slots {
		s := slot{class: Healthy}
		switch k % classPeriod {
		case errorSlot:
			s.class = Error
		case slowSlot:
			s.class = Slow
		}
		if s.class == Slow {
			s.dur = 1200*time.Millisecond + time.Duration(g.rng.Int64N(int64(1300*time.Millisecond)))
		} else {
			// 15 ms .. 400 ms, most requests short.
			f := g.rng.Float64()
			s.dur = 15*time.Millisecond + time.Duration(f*f*float64(385*time.Millisecond))
		}
		g.slots[k] = s
	}

	// Spans of one trace in the order their SDKs export them: children end
	// before their parents.
	order := make([]int, SpansPerTrace)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case topology[a].to < topology[b].to:
			return -1
		case topology[a].to > topology[b].to:
			return 1
		}
		return 0
	})

	var open [len(Services)]*request
	for k := range g.slots {
		s := g.slots[k]
		var spanIDs [SpansPerTrace]pcommon.SpanID
		for i := range spanIDs {
			binary.BigEndian.PutUint64(spanIDs[i][:], g.rng.Uint64()|1)
		}
		for _, i := range order {
			def := &topology[i]
			r := open[def.service]
			if r == nil {
				r = g.newRequest(worker, def.service)
				open[def.service] = r
			}
			span := r.spans.AppendEmpty()
			span.SetSpanID(spanIDs[i])
			if def.parent >= 0 {
				span.SetParentSpanID(spanIDs[def.parent])
			}
			span.SetName(def.name)
			span.SetKind(def.kind)
			span.Attributes().EnsureCapacity(AttrsPerSpan)
			def.attrs(span.Attributes(), g.rng, s.class)
			if s.class == Error && def.errMsg != "" {
				span.Status().SetCode(ptrace.StatusCodeError)
				span.Status().SetMessage(def.errMsg)
			}
			r.refs = append(r.refs, spanRef{
				slot: int32(k),
				from: time.Duration(def.from * float64(s.dur)),
				to:   time.Duration(def.to * float64(s.dur)),
			})
			if r.spans.Len() == SpansPerRequest {
				g.requests = append(g.requests, *r)
				open[def.service] = nil
			}
		}
	}
	for _, r := range open {
		if r != nil { // not reached with CycleTraces = 1000; kept for other shapes
			g.requests = append(g.requests, *r)
		}
	}
	return g
}

func (g *Generator) newRequest(worker, service int) *request {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource().Attributes()
	name := Services[service]
	res.PutStr("service.name", name)
	res.PutStr("service.namespace", "shop")
	res.PutStr("service.version", "2.14.1")
	res.PutStr("service.instance.id", fmt.Sprintf("%s-7d9f8c6b5-%05d", name, worker))
	res.PutStr("deployment.environment.name", "production")
	res.PutStr("host.name", fmt.Sprintf("%s-node-%d", name, worker))
	res.PutStr("host.arch", "amd64")
	res.PutStr("os.type", "linux")
	res.PutInt("process.pid", 1)
	res.PutStr("process.runtime.name", "OpenJDK Runtime Environment")
	res.PutStr("telemetry.sdk.language", "java")
	res.PutStr("telemetry.sdk.name", "opentelemetry")
	res.PutStr("telemetry.sdk.version", "1.44.1")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("io.opentelemetry.javaagent")
	ss.Scope().SetVersion("2.10.0")
	spans := ss.Spans()
	spans.EnsureCapacity(SpansPerRequest)
	return &request{req: ptraceotlp.NewExportRequestFromTraces(td), spans: spans, refs: make([]spanRef, 0, SpansPerRequest)}
}

// Requests is the number of export requests in one cycle.
func (g *Generator) Requests() int { return len(g.requests) }

// Request returns request i of the current cycle. It stays valid, and is
// rewritten in place, until the next NextCycle.
func (g *Generator) Request(i int) ptraceotlp.ExportRequest { return g.requests[i].req }

// RequestSpans is the number of spans in request i.
func (g *Generator) RequestSpans(i int) int { return len(g.requests[i].refs) }

// NextCycle gives every trace of the cycle a new random id and moves its
// timestamps so that the trace ends at now, and appends the error and slow
// traces to interesting.
func (g *Generator) NextCycle(now time.Time, interesting []SentTrace) []SentTrace {
	for k := range g.ids {
		binary.BigEndian.PutUint64(g.ids[k][:8], g.rng.Uint64())
		binary.BigEndian.PutUint64(g.ids[k][8:], g.rng.Uint64())
		if c := g.slots[k].class; c != Healthy {
			interesting = append(interesting, SentTrace{ID: g.ids[k], Class: c})
		}
	}
	end := now.UnixNano()
	for _, r := range g.requests {
		for i, ref := range r.refs {
			span := r.spans.At(i)
			start := end - int64(g.slots[ref.slot].dur)
			span.SetTraceID(g.ids[ref.slot])
			span.SetStartTimestamp(pcommon.Timestamp(start + int64(ref.from)))
			span.SetEndTimestamp(pcommon.Timestamp(start + int64(ref.to)))
		}
	}
	return interesting
}

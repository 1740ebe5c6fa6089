package analyze

import (
	"math/rand"
	"strconv"
	"testing"

	"github.com/tracesift/tracesift/internal/model"
)

// smallTrace is a typical 10-span trace over 4 services: frontend →
// checkout → payment, with database calls and one error.
func smallTrace() *model.Trace {
	sp := func(id, parent, svc, name string, kind model.Kind, s, e float64, attrs map[string]string) model.Span {
		return model.Span{SpanID: id, ParentSpanID: parent, Service: svc, Host: svc + "-1", Name: name, Kind: kind,
			StartUnixNano: at(s), EndUnixNano: at(e), Attributes: attrs}
	}
	t := &model.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Spans: []model.Span{
		sp("00f067aa0ba902b7", "", "frontend", "GET /checkout", model.KindServer, 0, 120, map[string]string{"http.response.status_code": "200", "http.route": "/checkout"}),
		sp("00f067aa0ba902b8", "00f067aa0ba902b7", "frontend", "POST /place", model.KindClient, 5, 115, map[string]string{"http.response.status_code": "200", "server.address": "checkout"}),
		sp("00f067aa0ba902b9", "00f067aa0ba902b8", "checkout", "POST /place", model.KindServer, 7, 113, map[string]string{"http.response.status_code": "200"}),
		sp("00f067aa0ba902ba", "00f067aa0ba902b9", "checkout", "SELECT cart", model.KindClient, 10, 25, map[string]string{"db.system": "postgresql", "db.name": "cart"}),
		sp("00f067aa0ba902bb", "00f067aa0ba902b9", "checkout", "price cart", model.KindInternal, 26, 40, nil),
		sp("00f067aa0ba902bc", "00f067aa0ba902b9", "checkout", "POST /charge", model.KindClient, 41, 100, map[string]string{"http.response.status_code": "200", "server.address": "payment"}),
		sp("00f067aa0ba902bd", "00f067aa0ba902bc", "payment", "POST /charge", model.KindServer, 43, 98, map[string]string{"http.response.status_code": "200"}),
		sp("00f067aa0ba902be", "00f067aa0ba902bd", "payment", "INSERT charge", model.KindClient, 45, 60, map[string]string{"db.system": "postgresql", "db.name": "payments"}),
		sp("00f067aa0ba902bf", "00f067aa0ba902bd", "payment", "POST /authorize", model.KindClient, 61, 95, map[string]string{"http.response.status_code": "200", "server.address": "bank.example"}),
		sp("00f067aa0ba902c0", "00f067aa0ba902b9", "notify", "order.placed publish", model.KindProducer, 101, 110, map[string]string{"messaging.system": "kafka", "messaging.destination.name": "order.placed"}),
	}}
	t.Spans[8].StatusCode, t.Spans[8].StatusMessage = model.StatusError, "card declined"
	return t
}

// largeTrace is a 1000-span trace over 20 services: each server span does
// some internal work and calls databases and other services; some calls
// are repeated (loops) and a few are retried after errors.
func largeTrace() *model.Trace {
	r := rand.New(rand.NewSource(1))
	t := &model.Trace{TraceID: "large"}
	add := func(parent int, svc, name string, kind model.Kind, s, e uint64, attrs map[string]string) int {
		ps := ""
		if parent >= 0 {
			ps = t.Spans[parent].SpanID
		}
		t.Spans = append(t.Spans, model.Span{SpanID: strconv.FormatUint(0x1000000000000000+uint64(len(t.Spans)), 16), ParentSpanID: ps,
			Service: svc, Host: svc + "-1", Name: name, Kind: kind, StartUnixNano: s, EndUnixNano: e, Attributes: attrs})
		return len(t.Spans) - 1
	}
	var serve func(parent int, svc string, s, e uint64, depth int)
	serve = func(server int, svc string, s, e uint64, depth int) {
		cur := s + (e-s)/50
		for len(t.Spans) < 1000 && cur < e-(e-s)/10 {
			d := (e - s) / uint64(4+r.Intn(8))
			end := min(cur+d, e-1)
			switch k := r.Intn(10); {
			case k < 4 || depth > 4: // a database call, sometimes in a loop
				n := 1
				if r.Intn(4) == 0 {
					n = 2 + r.Intn(8)
				}
				step := max((end-cur)/uint64(n), 1)
				for j := 0; j < n && len(t.Spans) < 1000; j++ {
					add(server, svc, "SELECT item", model.KindClient, cur+uint64(j)*step, cur+uint64(j+1)*step, map[string]string{"db.system": "postgresql", "db.name": svc})
				}
			case k < 6:
				add(server, svc, "compute", model.KindInternal, cur, end, nil)
			default: // a call to another service, retried once in a while
				callee := "svc" + strconv.Itoa(r.Intn(20))
				n := 1
				if r.Intn(8) == 0 {
					n = 3
				}
				step := max((end-cur)/uint64(n), 1)
				for j := 0; j < n && len(t.Spans) < 999; j++ {
					cs, ce := cur+uint64(j)*step, cur+uint64(j+1)*step
					c := add(server, svc, "POST /"+callee, model.KindClient, cs, ce, map[string]string{"server.address": callee, "http.response.status_code": "200"})
					if j < n-1 {
						t.Spans[c].StatusCode = model.StatusError
						t.Spans[c].Attributes = map[string]string{"server.address": callee, "http.response.status_code": "503"}
					}
					srv := add(c, callee, "POST /"+callee, model.KindServer, cs+(ce-cs)/20, ce-(ce-cs)/20, map[string]string{"http.response.status_code": "200"})
					serve(srv, callee, t.Spans[srv].StartUnixNano, t.Spans[srv].EndUnixNano, depth+1)
				}
			}
			cur = end + (e-s)/100
		}
	}
	root := add(-1, "frontend", "GET /page", model.KindServer, at(0), at(2000), map[string]string{"http.response.status_code": "200"})
	for len(t.Spans) < 1000 {
		serve(root, "frontend", at(0), at(2000), 0)
	}
	return t
}

func BenchmarkAnalyze(b *testing.B) {
	for _, c := range []struct {
		name string
		t    *model.Trace
	}{{"10spans-4services", smallTrace()}, {"1000spans", largeTrace()}} {
		b.Run(c.name, func(b *testing.B) {
			opts := DefaultOptions()
			b.ReportAllocs()
			for b.Loop() {
				Analyze(c.t, opts)
			}
		})
	}
}

func BenchmarkAnalyzers1000(b *testing.B) {
	t := largeTrace()
	opts := DefaultOptions()
	for _, a := range analyzers {
		b.Run(a.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				runOne(t, opts, a.run)
			}
		})
	}
}

func TestBenchTraces(t *testing.T) {
	small, large := smallTrace(), largeTrace()
	if len(small.Spans) != 10 || len(large.Spans) != 1000 {
		t.Fatalf("bench traces have %d and %d spans", len(small.Spans), len(large.Spans))
	}
	// The small trace: the error is the declined authorization, the
	// slowest hop is that call (34 ms, no callee span), and the charge that
	// answered all the same is a fallback.
	fs := Analyze(small, DefaultOptions())
	kinds := map[string]int{}
	for _, f := range fs {
		kinds[f.Kind]++
	}
	if kinds[KindSlowestHop] != 1 || kinds[KindCriticalPath] != 1 || kinds[KindErrorOrigin] != 1 || kinds[KindFallback] != 1 ||
		len(fs) != 4 {
		t.Errorf("small trace findings: %s", dump(fs))
	}
	if fs[0].Value != 34 || fs[0].SpanIDs[0] != "00f067aa0ba902bf" {
		t.Errorf("small trace slowest hop: %s", dump(fs[0]))
	}
	fl := Analyze(large, DefaultOptions())
	checkSane(t, fl)
	for _, f := range fl {
		if f.Kind == KindBrokenPropagation {
			t.Errorf("large trace: %s", dump(f))
		}
	}
	if len(RetryCalls(large)) == 0 {
		t.Error("large trace has no repeated calls")
	}
}

package analyze

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// Shapes of random trees.
const (
	nestedSequential  = iota // children inside their parent, siblings disjoint
	freeSequential           // siblings disjoint, but children may start before, end after or lie outside their parent, or end before they start
	nestedOverlapping        // children inside their parent, siblings overlapping
)

// randomTree builds a random trace of n spans with small integer times, span
// 0 the root over [0, 1000), spans shuffled.
func randomTree(r *rand.Rand, n int, shape int) *model.Trace {
	t := &model.Trace{TraceID: "t", Spans: make([]model.Span, n)}
	t.Spans[0] = model.Span{SpanID: "s0", Name: "root", Service: "svc0", Kind: model.KindServer, StartUnixNano: 0, EndUnixNano: 1000}
	cursor := make([]uint64, n) // where the next child of a span may start
	between := func(a, b uint64) uint64 { return a + uint64(r.Int63n(int64(b-a)+1)) }
	for i := 1; i < n; i++ {
		pi := r.Intn(i)
		p := &t.Spans[pi]
		ps, pe := p.StartUnixNano, max(p.EndUnixNano, p.StartUnixNano)
		var s, e uint64
		switch shape {
		case nestedSequential:
			s = between(max(ps, cursor[pi]), max(pe, cursor[pi]))
			e = between(s, max(pe, s))
		case nestedOverlapping:
			s = between(ps, pe)
			e = between(s, pe)
		case freeSequential:
			lo := max(ps, cursor[pi]) - min(max(ps, cursor[pi]), uint64(r.Intn(30)))
			if cursor[pi] > lo {
				lo = cursor[pi]
			}
			s = lo + uint64(r.Intn(300))
			e = s + uint64(r.Intn(300))
			if r.Intn(10) == 0 {
				e = s - min(s, uint64(r.Intn(50))) // ends before it starts
			}
		}
		cursor[pi] = max(s, e)
		t.Spans[i] = model.Span{
			SpanID:        "s" + strconv.Itoa(i),
			ParentSpanID:  p.SpanID,
			Name:          "op" + strconv.Itoa(r.Intn(4)),
			Service:       "svc" + strconv.Itoa(r.Intn(3)),
			Kind:          model.Kind(r.Intn(6)),
			StartUnixNano: s,
			EndUnixNano:   e,
		}
	}
	// Analysis must not depend on spans coming parents first.
	r.Shuffle(n, func(a, b int) { t.Spans[a], t.Spans[b] = t.Spans[b], t.Spans[a] })
	return t
}

// bruteSelf computes span i's self time nanosecond by nanosecond.
func bruteSelf(t *model.Trace, i int) uint64 {
	s := &t.Spans[i]
	end := max(s.EndUnixNano, s.StartUnixNano)
	var self uint64
	for x := s.StartUnixNano; x < end; x++ {
		covered := false
		for j := range t.Spans {
			c := &t.Spans[j]
			if c.ParentSpanID == s.SpanID && c.StartUnixNano <= x && x < c.EndUnixNano {
				covered = true
				break
			}
		}
		if !covered {
			self++
		}
	}
	return self
}

// clipToParents returns a copy of t with every span clipped to its parent's
// clipped interval (a span outside it becomes zero-length at its edge).
func clipToParents(t *model.Trace) *model.Trace {
	c := &model.Trace{TraceID: t.TraceID, Spans: append([]model.Span(nil), t.Spans...)}
	pos := make(map[string]int, len(c.Spans))
	for i := range c.Spans {
		pos[c.Spans[i].SpanID] = i
	}
	done := make([]bool, len(c.Spans))
	var fix func(i int)
	fix = func(i int) {
		if done[i] {
			return
		}
		done[i] = true
		s := &c.Spans[i]
		s.EndUnixNano = max(s.EndUnixNano, s.StartUnixNano)
		p, ok := pos[s.ParentSpanID]
		if !ok {
			return
		}
		fix(p)
		ps, pe := c.Spans[p].StartUnixNano, c.Spans[p].EndUnixNano
		s.StartUnixNano = min(max(s.StartUnixNano, ps), pe)
		s.EndUnixNano = min(max(s.EndUnixNano, s.StartUnixNano), pe)
	}
	for i := range c.Spans {
		fix(i)
	}
	return c
}

// TestSelfTimeProperties checks self times against a nanosecond-by-nanosecond
// brute force, that they are never negative nor longer than the span, and
// that when siblings do not overlap they add up to the root's duration (on
// the trace with every span clipped to its parent, for children that
// outlive or precede their parent); overlapping (parallel) siblings each
// count their own time, so the sum is then at least the root's duration.
func TestSelfTimeProperties(t *testing.T) {
	r := rand.New(rand.NewSource(20240611))
	for iter := 0; iter < 600; iter++ {
		shape := iter % 3
		tr := randomTree(r, 1+r.Intn(40), shape)
		tm := Timings(tr)
		var sum time.Duration
		for i, self := range tm.Self {
			s := &tr.Spans[i]
			dur := time.Duration(max(s.EndUnixNano, s.StartUnixNano) - s.StartUnixNano)
			if self < 0 || self > dur {
				t.Fatalf("iter %d: span %s self %v outside [0, %v]", iter, s.SpanID, self, dur)
			}
			if want := time.Duration(bruteSelf(tr, i)); self != want {
				t.Fatalf("iter %d: span %s self %v, brute force %v", iter, s.SpanID, self, want)
			}
			sum += self
		}
		switch shape {
		case nestedSequential:
			if sum != 1000 {
				t.Fatalf("iter %d: self times add up to %v, want the root's 1000ns", iter, sum)
			}
		case nestedOverlapping:
			if sum < 1000 {
				t.Fatalf("iter %d: self times add up to %v, less than the root's 1000ns", iter, sum)
			}
		case freeSequential:
			var clipped time.Duration
			for _, self := range Timings(clipToParents(tr)).Self {
				clipped += self
			}
			if clipped != 1000 {
				t.Fatalf("iter %d: clipped: self times add up to %v, want 1000ns", iter, clipped)
			}
		}
		checkPath(t, tr, tm)
	}
}

// checkPath checks the critical path tiles the root's interval with sections
// of spans on the path, each inside its span, and that the path is a
// connected subtree from the root.
func checkPath(t *testing.T, tr *model.Trace, tm Timing) {
	t.Helper()
	root := &tr.Spans[tm.Root]
	if root.ParentSpanID != "" {
		t.Fatalf("root %s has a parent", root.SpanID)
	}
	if len(tm.PathSpans) == 0 || tm.PathSpans[0] != tm.Root {
		t.Fatalf("path %v does not start at the root %d", tm.PathSpans, tm.Root)
	}
	on := map[string]bool{}
	for _, i := range tm.PathSpans {
		s := &tr.Spans[i]
		if i != tm.Root && !on[s.ParentSpanID] {
			t.Fatalf("path span %s: parent %s not before it on the path", s.SpanID, s.ParentSpanID)
		}
		on[s.SpanID] = true
	}
	at := root.StartUnixNano
	for _, sec := range tm.Path {
		s := &tr.Spans[sec.Span]
		if sec.SpanID != s.SpanID || !on[s.SpanID] {
			t.Fatalf("section of %s not on the path", sec.SpanID)
		}
		if sec.StartUnixNano != at || sec.EndUnixNano <= sec.StartUnixNano {
			t.Fatalf("section %+v does not follow %d", sec, at)
		}
		if sec.StartUnixNano < s.StartUnixNano || sec.EndUnixNano > s.EndUnixNano {
			t.Fatalf("section %+v outside its span [%d, %d]", sec, s.StartUnixNano, s.EndUnixNano)
		}
		at = sec.EndUnixNano
	}
	if at != root.EndUnixNano && root.EndUnixNano > root.StartUnixNano {
		t.Fatalf("path ends at %d, root at %d", at, root.EndUnixNano)
	}
}

// TestRobust feeds malformed traces (missing parents, duplicate ids, loops,
// end before start, extreme times, odd attributes) to every analyzer: no
// panic, no NaN, no negative value.
func TestRobust(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for iter := 0; iter < 2000; iter++ {
		tr := randomGarbage(r, r.Intn(30))
		opts := Options{FanoutThreshold: 1 + r.Intn(5), MinRepeatedCalls: 1 + r.Intn(3), MaxOrigins: 1 + r.Intn(3), MaxSpanIDs: 1 + r.Intn(5)}
		checkSane(t, Analyze(tr, opts))
		for _, a := range analyzers {
			checkSane(t, runOne(tr, opts, a.run))
		}
		tm := Timings(tr)
		for _, s := range tm.Self {
			if s < 0 {
				t.Fatalf("negative self time")
			}
		}
		for _, rc := range RetryCalls(tr) {
			if rc.Attempts < 2 || len(rc.SpanIDs) != rc.Attempts || len(rc.Delays) != rc.Attempts-1 {
				t.Fatalf("bad retry call %+v", rc)
			}
		}
		if t.Failed() {
			t.Fatalf("iter %d: %s", iter, dump(tr))
		}
	}
	if Analyze(nil, Options{}) != nil || Analyze(&model.Trace{}, Options{}) != nil {
		t.Fatal("findings for an empty trace")
	}
	if tm := Timings(nil); tm.Root != -1 || len(tm.Self) != 0 || len(tm.Path) != 0 {
		t.Fatalf("Timings(nil) = %+v", tm)
	}
}

// randomGarbage is a trace with few distinct ids and names, so duplicates,
// loops, missing parents and repeated calls are common.
func randomGarbage(r *rand.Rand, n int) *model.Trace {
	t := &model.Trace{TraceID: "g"}
	times := []uint64{0, 1, 5, 1e6, 1e9, 1<<63 - 1, 1<<64 - 1}
	pick := func() uint64 {
		if r.Intn(3) == 0 {
			return times[r.Intn(len(times))]
		}
		return uint64(r.Int63n(1e9))
	}
	attrs := []map[string]string{nil,
		{"http.response.status_code": "504"}, {"http.status_code": "x"}, {"rpc.grpc.status_code": "4"},
		{"error.type": "TIMEOUT"}, {"server.address": "a"}, {"peer.service": "b"}, {"db.system": "redis"},
		{"messaging.system": "kafka"}, {"http.response.status_code": "-3"}}
	for i := 0; i < n; i++ {
		s := model.Span{
			SpanID:        "i" + strconv.Itoa(r.Intn(n+1)),
			Name:          "n" + strconv.Itoa(r.Intn(2)),
			Service:       "v" + strconv.Itoa(r.Intn(3)),
			Kind:          model.Kind(r.Intn(7)),
			StartUnixNano: pick(),
			EndUnixNano:   pick(),
			StatusCode:    model.StatusCode(r.Intn(3)),
			Attributes:    attrs[r.Intn(len(attrs))],
		}
		if r.Intn(5) > 0 {
			s.ParentSpanID = "i" + strconv.Itoa(r.Intn(n+2))
		}
		if r.Intn(8) == 0 {
			s.SpanID = ""
		}
		if r.Intn(6) == 0 {
			s.Links = []model.Link{{TraceID: "g", SpanID: "i0"}}
		}
		if r.Intn(6) == 0 {
			s.Events = []model.Event{{Name: "exception", Attributes: map[string]string{"exception.message": "Deadline"}}}
			s.StatusMessage = "timed out"
		}
		t.Spans = append(t.Spans, s)
	}
	return t
}

func FuzzAnalyze(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{255, 255, 0, 0, 7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := &model.Trace{}
		for len(b) >= 6 {
			s := model.Span{
				SpanID:        strconv.Itoa(int(b[0] % 8)),
				Kind:          model.Kind(b[2] % 6),
				Name:          strconv.Itoa(int(b[2] % 3)),
				Service:       strconv.Itoa(int(b[3] % 3)),
				StartUnixNano: uint64(b[4]) << (b[3] % 56),
				EndUnixNano:   uint64(b[5]) << (b[3] % 56),
				StatusCode:    model.StatusCode(b[3] % 3),
			}
			if b[1]%9 != 0 {
				s.ParentSpanID = strconv.Itoa(int(b[1] % 9))
			}
			if b[4]%5 == 0 {
				s.Links = []model.Link{{SpanID: "0"}}
			}
			tr.Spans = append(tr.Spans, s)
			b = b[6:]
		}
		checkSane(t, Analyze(tr, Options{FanoutThreshold: 2, MinRepeatedCalls: 2}))
		checkSane(t, Analyze(tr, DefaultOptions()))
		RetryCalls(tr)
		Timings(tr)
	})
}

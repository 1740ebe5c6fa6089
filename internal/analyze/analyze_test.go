package analyze

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

const msNanos = uint64(time.Millisecond)

// at is a time in milliseconds after an arbitrary epoch, as unix nanos.
func at(ms float64) uint64 { return 1_760_000_000_000_000_000 + uint64(ms*float64(msNanos)) }

func TestTimingsParallelChildren(t *testing.T) {
	g := loadGolden(t)["parallel_children"]
	tm := Timings(&g.Trace.Trace)
	ms := time.Millisecond
	if want := []time.Duration{20 * ms, 50 * ms, 60 * ms, 10 * ms}; !reflect.DeepEqual(tm.Self, want) {
		t.Errorf("self %v, want %v", tm.Self, want)
	}
	if tm.Root != 0 || !reflect.DeepEqual(tm.PathSpans, []int{0, 2, 3}) {
		t.Errorf("root %d, path spans %v; want 0, [0 2 3]", tm.Root, tm.PathSpans)
	}
	id := func(i int) string { return g.Trace.Spans[i].SpanID }
	want := []PathSection{
		{0, id(0), at(0), at(20)},
		{2, id(2), at(20), at(80)},
		{0, id(0), at(80), at(85)},
		{3, id(3), at(85), at(95)},
		{0, id(0), at(95), at(100)},
	}
	if !reflect.DeepEqual(tm.Path, want) {
		t.Errorf("path\n got  %+v\n want %+v", tm.Path, want)
	}
}

func TestTimingsAsyncChild(t *testing.T) {
	g := loadGolden(t)["async_children"]
	tm := Timings(&g.Trace.Trace)
	ms := time.Millisecond
	// The email span outlives the root: the root counts it up to its end.
	if want := []time.Duration{15 * ms, 20 * ms, 10 * ms, 200 * ms}; !reflect.DeepEqual(tm.Self, want) {
		t.Errorf("self %v, want %v", tm.Self, want)
	}
	last := tm.Path[len(tm.Path)-1]
	if last.Span != 3 || last.StartUnixNano != at(45) || last.EndUnixNano != at(50) {
		t.Errorf("last section %+v, want the email span clipped to [45, 50]", last)
	}
}

func TestRetryCallsSpacing(t *testing.T) {
	g := loadGolden(t)["retry_spacing"]
	ms := time.Millisecond
	root := g.Trace.Spans[0].SpanID
	ids := func(from int) []string {
		var out []string
		for _, s := range g.Trace.Spans[from : from+4] {
			out = append(out, s.SpanID)
		}
		return out
	}
	want := []RetryCall{
		{ParentSpanID: root, Service: "notify", Name: "POST /sms", Peer: "sms-gw", SpanIDs: ids(1), Attempts: 4, Failed: 3, Retry: true,
			Delays: []time.Duration{100 * ms, 200 * ms, 400 * ms}, Intervals: []time.Duration{150 * ms, 250 * ms, 450 * ms}, Backoff: true},
		{ParentSpanID: root, Service: "notify", Name: "POST /mail", Peer: "smtp-relay", SpanIDs: ids(5), Attempts: 4, Failed: 3, Retry: true,
			Delays: []time.Duration{100 * ms, 100 * ms, 100 * ms}, Intervals: []time.Duration{150 * ms, 150 * ms, 150 * ms}, FixedInterval: true},
		{ParentSpanID: root, Service: "notify", Name: "POST /push", Peer: "push-gw", SpanIDs: ids(9), Attempts: 4, Failed: 3, Retry: true,
			Delays: []time.Duration{100 * ms, 40 * ms, 160 * ms}, Intervals: []time.Duration{150 * ms, 90 * ms, 210 * ms}, Jitter: true},
	}
	if got := RetryCalls(&g.Trace.Trace); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", dump(got), dump(want))
	}
}

func TestRetryCallsHedged(t *testing.T) {
	g := loadGolden(t)["retries_hedged"]
	got := RetryCalls(&g.Trace.Trace)
	if len(got) != 1 {
		t.Fatalf("got %d retry calls, want 1", len(got))
	}
	rc := got[0]
	if !rc.Parallel || !rc.Retry || rc.Failed != 1 || rc.Peer != "index" ||
		!reflect.DeepEqual(rc.Delays, []time.Duration{0}) || !reflect.DeepEqual(rc.Intervals, []time.Duration{50 * time.Millisecond}) ||
		rc.Backoff || rc.Jitter || rc.FixedInterval {
		t.Errorf("got %s", dump(rc))
	}
}

// attemptsTrace is a root calling "GET /x" on peer "p" once per element of
// durs (ms), waiting waits[k] ms after attempt k; attempts in failed fail.
func attemptsTrace(durs, waits []float64, failedAttempts ...int) *model.Trace {
	tr := &model.Trace{Spans: []model.Span{{SpanID: "r", Name: "root", Service: "a", Kind: model.KindServer, StartUnixNano: at(0), EndUnixNano: at(100000)}}}
	t := 10.0
	for k, d := range durs {
		s := model.Span{SpanID: "c" + itoa(k), ParentSpanID: "r", Name: "GET /x", Service: "a", Kind: model.KindClient,
			StartUnixNano: at(t), EndUnixNano: at(t + d), Attributes: map[string]string{"server.address": "p"}}
		for _, f := range failedAttempts {
			if f == k {
				s.StatusCode = model.StatusError
			}
		}
		tr.Spans = append(tr.Spans, s)
		if k < len(waits) {
			t += d + waits[k]
		}
	}
	return tr
}

func TestRetryCallsClassification(t *testing.T) {
	type flags struct{ Retry, Parallel, Backoff, Jitter, Fixed bool }
	for _, c := range []struct {
		name      string
		tr        *model.Trace
		want      flags
		summary   string // of the retry_fanout finding; "" for none
		minRepeat int
	}{
		{"backoff with jitter", attemptsTrace([]float64{5, 5, 5, 5}, []float64{100, 180, 500}, 0, 1, 2),
			flags{Retry: true, Backoff: true, Jitter: true}, "a → p GET /x: 4 attempts, 3 failed; with backoff and jitter", 0},
		{"immediate retries of varying length", attemptsTrace([]float64{5, 30, 12}, []float64{0.2, 0.5}, 0, 1),
			flags{Retry: true, Fixed: true}, "3 attempts, 2 failed; retried immediately with no backoff or jitter", 0},
		{"fixed start interval", attemptsTrace([]float64{20, 100, 80}, []float64{180, 100}, 0, 1),
			flags{Retry: true, Fixed: true}, "retried every 200 ms with no backoff or jitter", 0},
		{"two attempts: spacing not judged", attemptsTrace([]float64{5, 5}, []float64{10}, 0),
			flags{Retry: true}, "a → p GET /x: 2 attempts, 1 failed", 0},
		{"last attempt failed only: repeated calls", attemptsTrace([]float64{5, 5, 5}, []float64{10, 10}, 2),
			flags{}, "3 repeated calls, not retries (1 failed)", 3},
		{"a loop with 2 of 10 failures: repeated calls", attemptsTrace([]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, []float64{1, 1, 1, 1, 1, 1, 1, 1, 1}, 3, 7),
			flags{}, "10 repeated calls, not retries (2 failed)", 0},
		{"two successful calls: under the threshold", attemptsTrace([]float64{5, 5}, []float64{10}),
			flags{}, "", 0},
		{"two successful calls: threshold 2", attemptsTrace([]float64{5, 5}, []float64{10}),
			flags{}, "2 repeated calls, not retries (all succeeded)", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rcs := RetryCalls(c.tr)
			if len(rcs) != 1 {
				t.Fatalf("got %d retry calls, want 1", len(rcs))
			}
			rc := rcs[0]
			if got := (flags{rc.Retry, rc.Parallel, rc.Backoff, rc.Jitter, rc.FixedInterval}); got != c.want {
				t.Errorf("flags %+v, want %+v (delays %v)", got, c.want, rc.Delays)
			}
			fs := runOne(c.tr, Options{MinRepeatedCalls: c.minRepeat}, (*index).retryFanout)
			switch {
			case c.summary == "" && len(fs) != 0:
				t.Errorf("unexpected finding %s", dump(fs))
			case c.summary != "" && (len(fs) != 1 || !strings.Contains(fs[0].Summary, c.summary) || fs[0].Value != float64(rc.Attempts)):
				t.Errorf("findings %s, want one with value %d and summary containing %q", dump(fs), rc.Attempts, c.summary)
			}
		})
	}
}

// TestAnalyzeMatchesAnalyzers checks Analyze, which shares one index, gives
// what the analyzers give one by one, in the documented order.
func TestAnalyzeMatchesAnalyzers(t *testing.T) {
	for name, g := range loadGolden(t) {
		opts := DefaultOptions()
		var want []model.Finding
		for _, a := range analyzers {
			want = append(want, runOne(&g.Trace.Trace, opts, a.run)...)
		}
		if got := Analyze(&g.Trace.Trace, opts); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Analyze\n%s\nanalyzers one by one\n%s", name, dump(got), dump(want))
		}
		// Deterministic, and the pooled index leaves nothing behind.
		if again := Analyze(&g.Trace.Trace, opts); !reflect.DeepEqual(again, want) {
			t.Errorf("%s: second run differs", name)
		}
	}
}

func TestDefaultOptions(t *testing.T) {
	want := Options{FanoutThreshold: 50, MinRepeatedCalls: 5, MaxOrigins: 5, MaxSpanIDs: 20}
	if got := DefaultOptions(); got != want {
		t.Errorf("DefaultOptions() = %+v, want %+v", got, want)
	}
	if got := (Options{FanoutThreshold: -1}).withDefaults(); got != want {
		t.Errorf("zero/negative options = %+v, want the defaults", got)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct {
		nanos uint64
		want  string
	}{{0, "0 ms"}, {340_000, "340 µs"}, {2_500_000, "2.5 ms"}, {820_000_000, "820 ms"}, {1_240_000_000, "1.24 s"}, {3600e9, "3600 s"}} {
		if got := fmtDur(c.nanos); got != c.want {
			t.Errorf("fmtDur(%d) = %q, want %q", c.nanos, got, c.want)
		}
	}
	for _, c := range []struct {
		part, whole uint64
		want        string
	}{{0, 10, "0%"}, {1, 0, "0%"}, {64, 100, "64%"}, {999, 1000, "99%"}, {5, 5, "100%"}} {
		if got := percent(c.part, c.whole); got != c.want {
			t.Errorf("percent(%d, %d) = %q, want %q", c.part, c.whole, got, c.want)
		}
	}
	if !containsFold("context.DeadlineExceeded", "deadline") || containsFold("dead line", "deadline") || !containsFold("x", "") {
		t.Error("containsFold")
	}
}

// span is a test span over [s, e] milliseconds.
func span(id, parent, svc string, kind model.Kind, s, e float64) model.Span {
	return model.Span{SpanID: id, ParentSpanID: parent, Name: "op " + id, Service: svc, Kind: kind, StartUnixNano: at(s), EndUnixNano: at(e)}
}

func TestSlowestHopTies(t *testing.T) {
	// g and c2 both spend 29 ms in themselves; c2 starts first, although g
	// comes first in a depth-first walk.
	tr := &model.Trace{Spans: []model.Span{
		span("r", "", "a", model.KindServer, 10, 42),
		span("c1", "r", "a", model.KindInternal, 10, 42),
		span("g", "c1", "a", model.KindInternal, 13, 42),
		span("c2", "r", "a", model.KindInternal, 12, 41),
	}}
	fs := runOne(tr, Options{}, (*index).slowestHop)
	if len(fs) != 1 || fs[0].SpanIDs[0] != "c2" || fs[0].Value != 29 {
		t.Errorf("got %s, want c2 with 29 ms", dump(fs))
	}
	// Equal self time and start: the first in the trace.
	tr = &model.Trace{Spans: []model.Span{span("r", "", "a", model.KindServer, 0, 10), span("x", "r", "a", model.KindClient, 0, 5), span("y", "r", "a", model.KindClient, 5, 10), span("z", "", "a", model.KindServer, 0, 5)}}
	if fs := runOne(tr, Options{}, (*index).slowestHop); len(fs) != 1 || fs[0].SpanIDs[0] != "x" {
		t.Errorf("got %s, want x", dump(fs))
	}
}

func TestRootChoice(t *testing.T) {
	for _, c := range []struct {
		name  string
		spans []model.Span
		root  int
	}{
		{"longest root", []model.Span{span("a", "", "s", model.KindServer, 5, 10), span("b", "", "s", model.KindServer, 0, 20)}, 1},
		{"equal length: earliest start", []model.Span{span("a", "", "s", model.KindServer, 5, 15), span("b", "", "s", model.KindServer, 0, 10)}, 1},
		{"equal length and start: first", []model.Span{span("a", "", "s", model.KindServer, 0, 10), span("b", "", "s", model.KindServer, 0, 10)}, 0},
		{"a true root beats a longer orphan", []model.Span{span("a", "lost", "s", model.KindServer, 0, 50), span("b", "", "s", model.KindServer, 0, 10)}, 1},
		{"no root: longest orphan", []model.Span{span("a", "lost", "s", model.KindServer, 0, 5), span("b", "lost", "s", model.KindServer, 1, 50)}, 1},
	} {
		if got := Timings(&model.Trace{Spans: c.spans}).Root; got != c.root {
			t.Errorf("%s: root %d, want %d", c.name, got, c.root)
		}
	}
}

func TestLoopsAreCut(t *testing.T) {
	g := loadGolden(t)["end_before_start_and_loops"]
	tm := Timings(&g.Trace.Trace)
	ms := time.Millisecond
	// r, the zero-length span, b, then x and y naming each other (the loop
	// is cut at x, which keeps y as its child) and s naming itself.
	if want := []time.Duration{70 * ms, 0, 30 * ms, 4 * ms, 6 * ms, 5 * ms}; !reflect.DeepEqual(tm.Self, want) {
		t.Errorf("self %v, want %v", tm.Self, want)
	}
}

func TestRetryCalleeNeverReported(t *testing.T) {
	// Two attempts timed out before the callee reported; the third reached
	// it: one call of three attempts, not two calls.
	tr := attemptsTrace([]float64{10, 10, 10}, []float64{5, 5}, 0, 1)
	tr.Spans = append(tr.Spans, model.Span{SpanID: "srv", ParentSpanID: "c2", Name: "GET /x", Service: "inv", Kind: model.KindServer,
		StartUnixNano: tr.Spans[3].StartUnixNano + 1, EndUnixNano: tr.Spans[3].EndUnixNano - 1})
	rcs := RetryCalls(tr)
	if len(rcs) != 1 || rcs[0].Attempts != 3 || rcs[0].Peer != "inv" || !rcs[0].Retry || !rcs[0].FixedInterval {
		t.Errorf("got %s, want one retried call of 3 attempts to inv", dump(rcs))
	}
	// Same name and peer attribute but two different callees: two calls.
	tr.Spans = append(tr.Spans, model.Span{SpanID: "srv2", ParentSpanID: "c1", Name: "GET /x", Service: "other", Kind: model.KindServer,
		StartUnixNano: tr.Spans[2].StartUnixNano + 1, EndUnixNano: tr.Spans[2].EndUnixNano - 1})
	if rcs := RetryCalls(tr); len(rcs) != 0 {
		t.Errorf("got %s, want none (c0 alone, c1 to other, c2 to inv)", dump(rcs))
	}
}

// analyzers are the analyzers in the order Analyze runs them.
var analyzers = []struct {
	name string
	run  func(ix *index, out []model.Finding, opts Options) []model.Finding
}{
	{"SlowestHop", (*index).slowestHop}, {"CriticalPath", (*index).criticalPathFinding}, {"RetryFanout", (*index).retryFanout},
	{"Timeouts", (*index).timeouts}, {"ErrorOrigins", (*index).errorOrigins}, {"BrokenPropagation", (*index).brokenPropagation},
	{"Fanout", (*index).fanout}, {"Throttled", (*index).throttled}, {"FastFail", (*index).fastFail},
	{"Fallback", (*index).fallback}, {"PoolExhausted", (*index).poolExhausted},
}

// runOne runs one analyzer on t, as Analyze does with all of them.
func runOne(t *model.Trace, opts Options, analyzer func(ix *index, out []model.Finding, opts Options) []model.Finding) []model.Finding {
	ix := newIndex(t)
	defer ix.free()
	out := analyzer(ix, nil, opts.withDefaults())
	for i := range out {
		out[i].Subject = subject(t, &out[i])
	}
	return out
}

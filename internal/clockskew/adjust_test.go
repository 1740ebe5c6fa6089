package clockskew

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// times is a span's expected adjusted range relative to base, and its shift.
type times struct {
	start, end, shift time.Duration
}

func checkSpans(t *testing.T, a Adjustments, want []times) {
	t.Helper()
	if len(a.Spans) != len(want) {
		t.Fatalf("%d spans, want %d", len(a.Spans), len(want))
	}
	for i, w := range want {
		if g := a.Spans[i]; g != (SpanTimes{Start: at(w.start), End: at(w.end), Shift: w.shift}) {
			t.Errorf("span %d: [%v, %v] shift %v, want [%v, %v] shift %v", i,
				time.Duration(g.Start-base), time.Duration(g.End-base), g.Shift, w.start, w.end, w.shift)
		}
	}
}

// checkFits checks every SERVER child fits inside its parent once adjusted.
func checkFits(t *testing.T, tr *model.Trace, a Adjustments) {
	t.Helper()
	for i, c := range tr.Spans {
		if c.Kind != model.KindServer || c.ParentSpanID == "" {
			continue
		}
		for j, p := range tr.Spans {
			if p.SpanID == c.ParentSpanID && (a.Spans[i].Start < a.Spans[j].Start || a.Spans[i].End > a.Spans[j].End) {
				t.Errorf("span %s does not fit in its parent %s after adjustment", c.SpanID, p.SpanID)
			}
		}
	}
}

// three_hosts.json: db-1 is 240 ms ahead of web-1, inv-1 in sync.
var threeHostsAdjusted = []times{
	{0, ms(300), 0},
	{ms(10), ms(110), 0},
	{ms(15), ms(105), ms(-240)}, // db-1, back inside its parent
	{ms(25), ms(95), ms(-240)},  // db-1
	{ms(120), ms(200), 0},
	{ms(125), ms(195), 0}, // inv-1: offset 0, not shifted
	{ms(210), ms(290), 0},
}

func TestAdjustThreeHosts(t *testing.T) {
	tr := loadTrace(t, "three_hosts.json")
	raw := cloneTrace(tr)
	tests := []struct {
		name  string
		adj   func() Adjustments
		hosts []HostOffset
	}{
		{
			name: "trusted estimates",
			adj: func() Adjustments {
				e := newEstimator(t, nil)
				observeN(e, t0, 5, tr)
				return e.Adjust(tr)
			},
			hosts: []HostOffset{{"web-1", 0, SourceReference}, {"db-1", ms(240), SourceEstimate}, {"inv-1", 0, SourceEstimate}},
		},
		{
			name: "too few samples: per-trace fallback",
			adj: func() Adjustments {
				e := newEstimator(t, nil)
				observeN(e, t0, 4, tr)
				return e.Adjust(tr)
			},
			hosts: []HostOffset{{"web-1", 0, SourceReference}, {"db-1", ms(240), SourceTrace}, {"inv-1", 0, SourceTrace}},
		},
		{
			name:  "no estimator",
			adj:   func() Adjustments { return AdjustTrace(tr) },
			hosts: []HostOffset{{"web-1", 0, SourceReference}, {"db-1", ms(240), SourceTrace}, {"inv-1", 0, SourceTrace}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.adj()
			if a.Reference != "web-1" {
				t.Fatalf("Reference %q, want web-1", a.Reference)
			}
			if !reflect.DeepEqual(a.Hosts, tc.hosts) {
				t.Fatalf("Hosts:\n got %+v\nwant %+v", a.Hosts, tc.hosts)
			}
			checkSpans(t, a, threeHostsAdjusted)
			checkFits(t, tr, a)
			if !reflect.DeepEqual(tr, raw) {
				t.Fatal("Adjust modified the trace")
			}
			// Logs: a db-1 record at 300 ms happened at 60 ms on web-1's clock.
			for _, c := range []struct {
				host string
				in   time.Duration
				want time.Duration
			}{
				{"db-1", ms(300), ms(60)},
				{"web-1", ms(300), ms(300)},
				{"inv-1", ms(300), ms(300)},
				{"unknown-9", ms(300), ms(300)},
				{"", ms(300), ms(300)},
			} {
				if got := a.Time(c.host, at(c.in)); got != at(c.want) {
					t.Errorf("Time(%q, %v) = %v, want %v", c.host, c.in, time.Duration(got-base), c.want)
				}
			}
			if off, src := a.Offset("db-1"); off != ms(240) || src != tc.hosts[1].Source {
				t.Errorf("Offset(db-1) = %v, %v", off, src)
			}
			if off, src := a.Offset("unknown-9"); off != 0 || src != SourceNone {
				t.Errorf("Offset(unknown-9) = %v, %v", off, src)
			}
		})
	}
}

// chainTrace: web-1 → api-1 → db-1; api-1 is 100 ms ahead of web-1, db-1 250
// ms ahead of web-1 (150 ms ahead of api-1).
func chainTrace() *model.Trace {
	return mkTrace(
		spec{"w0", "", srv, "gateway", "web-1", 0, ms(400)},
		spec{"w1", "w0", cli, "gateway", "web-1", ms(10), ms(210)},
		spec{"a0", "w1", srv, "api", "api-1", ms(120), ms(300)},
		spec{"a1", "a0", cli, "api", "api-1", ms(130), ms(290)},
		spec{"d0", "a1", srv, "db", "db-1", ms(290), ms(430)},
	)
}

var chainAdjusted = []times{
	{0, ms(400), 0},
	{ms(10), ms(210), 0},
	{ms(20), ms(200), ms(-100)},
	{ms(30), ms(190), ms(-100)},
	{ms(40), ms(180), ms(-250)},
}

func TestAdjustPropagation(t *testing.T) {
	tr := chainTrace()
	if got := PairOffsets(tr); len(got) != 2 || got[0].Offset != ms(100) || got[1].Offset != ms(150) {
		t.Fatalf("PairOffsets: %+v", got)
	}
	tests := []struct {
		name  string
		setup func(e *Estimator)
		hosts []HostOffset
	}{
		{
			name:  "trusted links",
			setup: func(e *Estimator) { observeN(e, t0, 5, tr) },
			hosts: []HostOffset{{"web-1", 0, SourceReference}, {"api-1", ms(100), SourceEstimate}, {"db-1", ms(250), SourcePropagated}},
		},
		{
			// Only web-1/api-1 is trusted: db-1 goes through this trace's call.
			name: "one link from the trace",
			setup: func(e *Estimator) {
				for i := range 5 {
					e.Observe(t0.Add(time.Duration(i)*time.Second), []Observation{obsOf("web-1", "api-1", ms(100))})
				}
			},
			hosts: []HostOffset{{"web-1", 0, SourceReference}, {"api-1", ms(100), SourceEstimate}, {"db-1", ms(250), SourceTrace}},
		},
		{
			// Only api-1/db-1 is trusted: api-1 comes from this trace's call,
			// so db-1, placed through api-1, is no better than the trace.
			name: "trusted link after a trace link",
			setup: func(e *Estimator) {
				for i := range 5 {
					e.Observe(t0.Add(time.Duration(i)*time.Second), []Observation{obsOf("api-1", "db-1", ms(150))})
				}
			},
			hosts: []HostOffset{{"web-1", 0, SourceReference}, {"api-1", ms(100), SourceTrace}, {"db-1", ms(250), SourceTrace}},
		},
		{
			// A trusted direct estimate wins over the chain (here 10 ms
			// different from it), even though web-1 never calls db-1 here.
			name: "direct estimate wins",
			setup: func(e *Estimator) {
				observeN(e, t0, 5, tr)
				for i := range 5 {
					e.Observe(t0.Add(time.Duration(i)*time.Second), []Observation{obsOf("web-1", "db-1", ms(260))})
				}
			},
			hosts: []HostOffset{{"web-1", 0, SourceReference}, {"api-1", ms(100), SourceEstimate}, {"db-1", ms(260), SourceEstimate}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEstimator(t, nil)
			tc.setup(e)
			a := e.Adjust(tr)
			if !reflect.DeepEqual(a.Hosts, tc.hosts) {
				t.Fatalf("Hosts:\n got %+v\nwant %+v", a.Hosts, tc.hosts)
			}
			want := append([]times(nil), chainAdjusted...)
			want[4] = times{ms(290) - tc.hosts[2].Offset, ms(430) - tc.hosts[2].Offset, -tc.hosts[2].Offset}
			checkSpans(t, a, want)
			checkFits(t, tr, a)
		})
	}
}

// The reference is the root's host; the chain also runs upwards (a host whose
// only link is to a callee further down).
func TestAdjustReferenceNotAtTop(t *testing.T) {
	tr := chainTrace()
	// Make api-1's SERVER span the root: web-1 becomes its caller's orphan.
	tr.Spans[2].ParentSpanID = ""
	tr.Spans[0].ParentSpanID = "elsewhere"
	a := AdjustTrace(tr)
	if a.Reference != "api-1" {
		t.Fatalf("Reference %q, want api-1", a.Reference)
	}
	// web-1/api-1 is no longer a pair (no parent link), so web-1 is unlinked.
	want := []HostOffset{{"web-1", 0, SourceNone}, {"api-1", 0, SourceReference}, {"db-1", ms(150), SourceTrace}}
	if !reflect.DeepEqual(a.Hosts, want) {
		t.Fatalf("Hosts:\n got %+v\nwant %+v", a.Hosts, want)
	}
	checkSpans(t, a, []times{
		{0, ms(400), 0}, {ms(10), ms(210), 0},
		{ms(120), ms(300), 0}, {ms(130), ms(290), 0},
		{ms(140), ms(280), ms(-150)},
	})

	// Reference on the callee side: db-1 is the root's host, the others are
	// reached upwards with the sign flipped.
	up := chainTrace()
	up.Spans[0].Host = "" // the root names no host: earliest span naming one is w1 (web-1)
	a = AdjustTrace(up)
	if a.Reference != "web-1" {
		t.Fatalf("Reference %q, want web-1", a.Reference)
	}
	down := mkTrace(
		spec{"d0", "", srv, "db", "db-1", ms(250), ms(650)},
		spec{"d1", "d0", cli, "db", "db-1", ms(260), ms(460)},
		spec{"w0", "d1", srv, "gateway", "web-1", ms(20), ms(200)},
	)
	a = AdjustTrace(down)
	wantDown := []HostOffset{{"db-1", 0, SourceReference}, {"web-1", ms(-250), SourceTrace}}
	if a.Reference != "db-1" || !reflect.DeepEqual(a.Hosts, wantDown) {
		t.Fatalf("Reference %q Hosts %+v, want db-1 %+v", a.Reference, a.Hosts, wantDown)
	}
	checkSpans(t, a, []times{{ms(250), ms(650), 0}, {ms(260), ms(460), 0}, {ms(270), ms(450), ms(250)}})
	checkFits(t, down, a)
}

func TestAdjustReference(t *testing.T) {
	tests := []struct {
		name  string
		spans []spec
		want  string
	}{
		{"root", []spec{{"c", "r", srv, "b", "h-2", 0, 5}, {"r", "", srv, "a", "h-1", 1, 9}}, "h-1"},
		{"no root: earliest span", []spec{{"c", "x", srv, "b", "h-2", 3, 5}, {"d", "y", srv, "a", "h-1", 1, 9}}, "h-1"},
		{"root without host: earliest span with one", []spec{{"r", "", srv, "a", "", 0, 9}, {"c", "r", srv, "b", "h-2", 3, 5}, {"d", "r", srv, "a", "h-3", 4, 9}}, "h-2"},
		{"two roots: the earliest", []spec{{"r", "", srv, "a", "h-1", 5, 9}, {"q", "", srv, "b", "h-2", 3, 5}}, "h-2"},
		{"no host at all", []spec{{"r", "", srv, "a", "", 0, 9}, {"c", "r", srv, "b", "", 3, 5}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := AdjustTrace(mkTrace(tc.spans...))
			if a.Reference != tc.want {
				t.Fatalf("Reference %q, want %q", a.Reference, tc.want)
			}
		})
	}
	if a := AdjustTrace(nil); a.Reference != "" || a.Spans != nil || a.Hosts != nil {
		t.Fatalf("nil trace: %+v", a)
	}
	a := AdjustTrace(mkTrace(spec{"r", "", srv, "a", "h-1", 0, 9}, spec{"c", "r", cli, "a", "h-1", 1, 8}))
	if want := []HostOffset{{"h-1", 0, SourceReference}}; !reflect.DeepEqual(a.Hosts, want) {
		t.Fatalf("one host: %+v", a.Hosts)
	}
	checkSpans(t, a, []times{{0, 9, 0}, {1, 8, 0}})
}

// messaging.json: only the synchronous call q-1 → led-1 links hosts in the
// trace; the estimator's direct estimate places q-1; nothing places ntf-1 or
// rates-1.
func TestAdjustMessaging(t *testing.T) {
	tr := loadTrace(t, "messaging.json")
	e := newEstimator(t, nil)
	for i := range 5 {
		e.Observe(t0.Add(time.Duration(i)*time.Second), []Observation{obsOf("web-1", "q-1", ms(70))})
	}
	a := e.Adjust(tr)
	want := []HostOffset{
		{"web-1", 0, SourceReference},
		{"q-1", ms(70), SourceEstimate},
		{"led-1", ms(40), SourceTrace}, // 70 − 30
		{"ntf-1", 0, SourceNone},
		{"rates-1", 0, SourceNone},
	}
	if !reflect.DeepEqual(a.Hosts, want) {
		t.Fatalf("Hosts:\n got %+v\nwant %+v", a.Hosts, want)
	}
	checkSpans(t, a, []times{
		{0, ms(50), 0},
		{ms(10), ms(12), 0},
		{ms(1930), ms(2030), ms(-70)},
		{ms(1940), ms(2020), ms(-70)},
		{ms(1945), ms(2015), ms(-40)},
		{ms(20), ms(22), 0},
		{ms(5000), ms(5100), 0},
		{ms(2020), ms(2030), 0},
		{ms(1970), ms(1980), ms(-70)},
		{ms(2030), ms(2040), 0}, // no host
	})
	checkFits(t, &model.Trace{Spans: tr.Spans[2:5]}, Adjustments{Spans: a.Spans[2:5]})
}

// The per-trace fallback uses calls whose child outlasted its parent only
// when the pair has no other.
func TestAdjustChildLonger(t *testing.T) {
	parent := spec{"p", "", cli, "checkout", "web-1", 0, ms(100)}
	longer := spec{"c", "p", srv, "payments", "db-1", ms(200), ms(500)} // midpoints 50, 350: 300 ms
	fits := spec{"f", "p", srv, "payments", "db-1", ms(260), ms(340)}   // 250 ms
	a := AdjustTrace(mkTrace(parent, longer))
	if off, src := a.Offset("db-1"); off != ms(300) || src != SourceTrace {
		t.Fatalf("only a longer child: %v %v, want 300ms trace", off, src)
	}
	a = AdjustTrace(mkTrace(parent, longer, fits))
	if off, src := a.Offset("db-1"); off != ms(250) || src != SourceTrace {
		t.Fatalf("longer and fitting children: %v %v, want 250ms trace", off, src)
	}
}

func TestShiftTime(t *testing.T) {
	tests := []struct {
		t     uint64
		shift time.Duration
		want  uint64
	}{
		{100, 0, 100},
		{100, 5, 105},
		{100, -5, 95},
		{100, -100, 0},
		{100, -101, 0},
		{100, math.MinInt64, 0},
		{math.MaxUint64 - 3, 3, math.MaxUint64},
		{math.MaxUint64 - 3, 4, math.MaxUint64},
	}
	for _, tc := range tests {
		if got := shiftTime(tc.t, tc.shift); got != tc.want {
			t.Errorf("shiftTime(%d, %d) = %d, want %d", tc.t, tc.shift, got, tc.want)
		}
	}
}

func TestSourceString(t *testing.T) {
	for s, want := range map[Source]string{
		SourceNone: "none", SourceReference: "reference", SourceEstimate: "estimate",
		SourcePropagated: "propagated", SourceTrace: "trace", Source(9): "Source(9)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d: %q, want %q", s, got, want)
		}
	}
}

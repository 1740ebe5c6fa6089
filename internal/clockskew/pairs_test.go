package clockskew

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/tracesift/tracesift/internal/model"
)

const (
	srv = model.KindServer
	cli = model.KindClient
	itl = model.KindInternal
	prd = model.KindProducer
	csm = model.KindConsumer
)

func TestPairOffsets(t *testing.T) {
	// parent is web-1's CLIENT span [0, 100] ms unless a case replaces it.
	parent := spec{"p", "", cli, "checkout", "web-1", 0, ms(100)}
	child := func(host string, kind model.Kind, start, end float64) spec {
		return spec{"c", "p", kind, "payments", host, ms(start), ms(end)}
	}
	tests := []struct {
		name  string
		spans []spec
		want  []Observation // nil: no usable pair
	}{
		{
			name:  "child 250 ms ahead",
			spans: []spec{parent, child("db-1", srv, 260, 340)},
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: ms(250), ParentSpanID: "p", ChildSpanID: "c", Violation: true, Outside: ms(240)}},
		},
		{
			name:  "child 250 ms behind",
			spans: []spec{parent, child("db-1", srv, -240, -160)},
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: ms(-250), ParentSpanID: "p", ChildSpanID: "c", Violation: true, Outside: ms(240)}},
		},
		{
			name:  "child 40 ms ahead",
			spans: []spec{parent, child("db-1", srv, 50, 130)},
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: ms(40), ParentSpanID: "p", ChildSpanID: "c", Violation: true, Outside: ms(30)}},
		},
		{
			name:  "child fits, centred",
			spans: []spec{parent, child("db-1", srv, 10, 90)},
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: 0, ParentSpanID: "p", ChildSpanID: "c"}},
		},
		{
			// 20 − (100 − 70) / 2 = 5 ms: a fitting child still gives an estimate.
			name:  "child fits, off centre",
			spans: []spec{parent, child("db-1", srv, 20, 90)},
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: ms(5), ParentSpanID: "p", ChildSpanID: "c"}},
		},
		{
			// Odd nanoseconds: (1 − 0) − (100 ms − (100 ms − 3 ns)) / 2 = 1 − 1 = 0 (truncated).
			name:  "rounding",
			spans: []spec{parent, {"c", "p", srv, "payments", "db-1", 1, ms(100) - 2}},
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: 0, ParentSpanID: "p", ChildSpanID: "c"}},
		},
		{
			// Midpoints 50 and 150 ms: 100 ms, marked lower quality.
			name:  "child longer than parent",
			spans: []spec{parent, child("db-1", srv, 0, 300)},
			// Ending after its parent is what a client that gave up first
			// sees: not outside where correct clocks cannot put it.
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: ms(100), ParentSpanID: "p", ChildSpanID: "c", Violation: true, ChildLonger: true}},
		},
		{
			name:  "INTERNAL parent with a remote SERVER child is accepted",
			spans: []spec{{"p", "", itl, "checkout", "web-1", 0, ms(100)}, child("db-1", srv, 260, 340)},
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: ms(250), ParentSpanID: "p", ChildSpanID: "c", Violation: true, Outside: ms(240)}},
		},
		{
			name:  "SERVER parent with a remote SERVER child is accepted",
			spans: []spec{{"p", "", srv, "checkout", "web-1", 0, ms(100)}, child("db-1", srv, 10, 90)},
			want: []Observation{{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
				Offset: 0, ParentSpanID: "p", ChildSpanID: "c"}},
		},
		{name: "same host", spans: []spec{parent, child("web-1", srv, 260, 340)}},
		{name: "child without host", spans: []spec{parent, child("", srv, 260, 340)}},
		{name: "parent without host", spans: []spec{{"p", "", cli, "checkout", "", 0, ms(100)}, child("db-1", srv, 260, 340)}},
		{name: "producer to consumer", spans: []spec{{"p", "", prd, "checkout", "web-1", 0, ms(2)}, child("q-1", csm, 900, 1000)}},
		{name: "producer to server", spans: []spec{{"p", "", prd, "checkout", "web-1", 0, ms(2)}, child("q-1", srv, 900, 1000)}},
		{name: "consumer to server", spans: []spec{{"p", "", csm, "checkout", "web-1", 0, ms(100)}, child("db-1", srv, 260, 340)}},
		{name: "client child", spans: []spec{parent, child("db-1", cli, 260, 340)}},
		{name: "internal child", spans: []spec{parent, child("db-1", itl, 260, 340)}},
		{name: "parent not in trace", spans: []spec{child("db-1", srv, 260, 340)}},
		{name: "child ends before it starts", spans: []spec{parent, child("db-1", srv, 340, 260)}},
		{name: "parent ends before it starts", spans: []spec{{"p", "", cli, "checkout", "web-1", ms(100), 0}, child("db-1", srv, 10, 90)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PairOffsets(mkTrace(tc.spans...))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PairOffsets:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestPairOffsetsNilAndTiny(t *testing.T) {
	if got := PairOffsets(nil); got != nil {
		t.Fatalf("nil trace: %+v", got)
	}
	if got := PairOffsets(mkTrace(spec{"p", "", cli, "a", "web-1", 0, 1})); got != nil {
		t.Fatalf("one span: %+v", got)
	}
}

func TestPairOffsetsTestdata(t *testing.T) {
	tests := []struct {
		file string
		want []Observation
	}{
		{"three_hosts.json", []Observation{
			{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments", Offset: ms(240),
				ParentSpanID: "a100000000000002", ChildSpanID: "b100000000000001", Violation: true, Outside: ms(235)},
			{From: "web-1", To: "inv-1", FromService: "checkout", ToService: "inventory", Offset: 0,
				ParentSpanID: "a100000000000003", ChildSpanID: "c100000000000001"},
		}},
		// Only the synchronous call q-1 → led-1 counts: the PRODUCER/CONSUMER
		// pairs, the same-host call and the host-less span do not.
		{"messaging.json", []Observation{
			{From: "q-1", To: "led-1", FromService: "billing", ToService: "ledger", Offset: ms(-30),
				ParentSpanID: "e100000000000002", ChildSpanID: "f100000000000001", Violation: true, Outside: ms(25)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got := PairOffsets(loadTrace(t, tc.file))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PairOffsets:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A trace above linearLookupMax finds parents through an index; the result
// must be the same as the linear scan's, parents listed after children too.
func TestPairOffsetsLargeTrace(t *testing.T) {
	var ss []spec
	var want []Observation
	for i := range 20 {
		p := fmt.Sprintf("p%02d", i)
		c := fmt.Sprintf("c%02d", i)
		skew := ms(float64(10 * i))
		// Children first: the parent is found wherever it is.
		ss = append(ss, spec{c, p, srv, "payments", "db-1", ms(15) + skew, ms(105) + skew})
		ss = append(ss, spec{p, "", cli, "checkout", "web-1", ms(10), ms(110)})
		want = append(want, Observation{From: "web-1", To: "db-1", FromService: "checkout", ToService: "payments",
			Offset: skew, ParentSpanID: p, ChildSpanID: c, Violation: i > 0, Outside: max(skew-ms(5), 0)})
	}
	tr := mkTrace(ss...)
	if len(tr.Spans) <= linearLookupMax {
		t.Fatalf("trace of %d spans does not exercise the index", len(tr.Spans))
	}
	if got := PairOffsets(tr); !reflect.DeepEqual(got, want) {
		t.Fatalf("PairOffsets:\n got %+v\nwant %+v", got, want)
	}
	small := mkTrace(ss[:2]...)
	if got := PairOffsets(small); !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("linear: got %+v want %+v", got, want[:1])
	}
}

func TestPairSign(t *testing.T) {
	p, s := PairOf("web-1", "db-1")
	if p != (Pair{A: "db-1", B: "web-1"}) || s != -1 {
		t.Fatalf("PairOf(web-1, db-1) = %v, %d", p, s)
	}
	p, s = PairOf("db-1", "web-1")
	if p != (Pair{A: "db-1", B: "web-1"}) || s != 1 {
		t.Fatalf("PairOf(db-1, web-1) = %v, %d", p, s)
	}
	// db-1 is 250 ms ahead of web-1 whichever calls the other.
	down := obsOf("web-1", "db-1", ms(250))
	up := obsOf("db-1", "web-1", ms(-250))
	if down.Pair() != up.Pair() {
		t.Fatalf("pairs differ: %v %v", down.Pair(), up.Pair())
	}
	// Pair offset is clock(web-1) − clock(db-1) = −250 ms for both.
	if down.PairOffset() != ms(-250) || up.PairOffset() != ms(-250) {
		t.Fatalf("pair offsets %v %v, want -250ms both", down.PairOffset(), up.PairOffset())
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []int64
		want int64
	}{
		{nil, 0},
		{[]int64{7}, 7},
		{[]int64{3, 1}, 2},
		{[]int64{1, 4}, 2}, // rounded down
		{[]int64{-1, -4}, -3},
		{[]int64{5, 1, 3}, 3},
		{[]int64{9, 9, 9, 1, 9}, 9},
		{[]int64{-5_000, 200, 200, 200}, 200},
		{[]int64{1 << 62, 1<<62 + 2}, 1<<62 + 1}, // no overflow
	}
	for _, tc := range tests {
		if got := median(append([]int64(nil), tc.in...)); got != tc.want {
			t.Errorf("median(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
	// Larger inputs (quickselect rather than insertion sort) against a sort.
	for n := 1; n <= 300; n += 7 {
		xs := make([]int64, n)
		for i := range xs {
			xs[i] = int64((i*7919)%101) - 50 // many duplicates
		}
		sorted := append([]int64(nil), xs...)
		insertionSort(sorted)
		want := sorted[n/2]
		if n%2 == 0 {
			want = mid(sorted[n/2-1], sorted[n/2])
		}
		if got := median(xs); got != want {
			t.Errorf("n=%d: median %d, want %d", n, got, want)
		}
	}
}

package red

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

var outlierNow = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// traffic is one instance's RED over the last minutes: n requests, errs of
// them failed, slow of them taking slowDur, the rest around base.
func traffic(r *rand.Rand, instance string, n, errs, slow int, base, slowDur time.Duration) []model.RED {
	var rows []model.RED
	for i := range n {
		at := outlierNow.Add(-time.Duration(1+i%240) * time.Second)
		d := base + time.Duration(r.IntN(int(base/10)+1))
		if i < slow {
			d = slowDur
		}
		s := Sketch{}
		s.Add(uint64(d))
		row := model.RED{TimeUnixNano: uint64(at.UnixNano()), Service: "cat", Operation: "GET /cat", Instance: instance,
			Requests: 1, Latency: s}
		if i < errs {
			row.Errors = 1
		}
		rows = append(rows, row)
	}
	return rows
}

func judge(rows ...[]model.RED) []model.Finding {
	var o Outliers
	for _, r := range rows {
		o.Add(r)
	}
	return o.Judge(outlierNow)
}

func TestOutlierSlowAndFailingInstance(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ms := time.Millisecond
	got := judge(traffic(r, "cat-1", 200, 0, 0, 35*ms, 0), traffic(r, "cat-2", 200, 0, 0, 35*ms, 0),
		traffic(r, "cat-3", 200, 0, 0, 35*ms, 0), traffic(r, "cat-4", 100, 40, 40, 35*ms, 930*ms))
	if len(got) != 1 {
		t.Fatalf("got %d findings: %+v", len(got), got)
	}
	f := got[0]
	if f.Kind != KindInstanceOutlier || f.Subject != "cat GET /cat on cat-4" || f.Service != "cat" || f.Value < 20 {
		t.Errorf("%+v", f)
	}
	if !strings.HasPrefix(f.Summary, "cat-4: p99 9") || !strings.Contains(f.Summary, "on its 3 peers; errors 40 % vs 0 %") {
		t.Errorf("summary %q", f.Summary)
	}
}

func TestNoOutlier(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ms := time.Millisecond
	cases := map[string][][]model.RED{
		"one slow request does not decide": {traffic(r, "a", 200, 0, 0, 35*ms, 0), traffic(r, "b", 200, 0, 0, 35*ms, 0),
			traffic(r, "c", 200, 0, 0, 35*ms, 0), traffic(r, "d", 200, 0, 1, 35*ms, 5*time.Second)},
		"two errors do not decide": {traffic(r, "a", 200, 0, 0, 35*ms, 0), traffic(r, "b", 200, 0, 0, 35*ms, 0),
			traffic(r, "c", 200, 0, 0, 35*ms, 0), traffic(r, "d", 200, 2, 0, 35*ms, 0)},
		"everyone fails alike": {traffic(r, "a", 200, 20, 0, 35*ms, 0), traffic(r, "b", 200, 22, 0, 35*ms, 0),
			traffic(r, "c", 200, 18, 0, 35*ms, 0), traffic(r, "d", 200, 25, 0, 35*ms, 0)},
		"two instances have no peers to speak of": {traffic(r, "a", 200, 0, 0, 35*ms, 0), traffic(r, "b", 200, 100, 100, 35*ms, time.Second)},
		"too few requests": {traffic(r, "a", 200, 0, 0, 35*ms, 0), traffic(r, "b", 200, 0, 0, 35*ms, 0),
			traffic(r, "c", 200, 0, 0, 35*ms, 0), traffic(r, "d", 10, 10, 10, 35*ms, time.Second)},
		"peers of different speeds": {traffic(r, "a", 200, 0, 0, 30*ms, 0), traffic(r, "b", 200, 0, 0, 45*ms, 0),
			traffic(r, "c", 200, 0, 0, 60*ms, 0), traffic(r, "d", 200, 0, 0, 70*ms, 0)},
	}
	for name, rows := range cases {
		if got := judge(rows...); len(got) != 0 {
			t.Errorf("%s: %+v", name, got)
		}
	}
}

// Traffic older than the window is forgotten.
func TestOutlierWindowSlides(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var o Outliers
	for _, inst := range []string{"a", "b", "c"} {
		o.Add(traffic(r, inst, 200, 0, 0, 35*time.Millisecond, 0))
	}
	o.Add(traffic(r, "d", 100, 50, 0, 35*time.Millisecond, 0))
	if got := o.Judge(outlierNow); len(got) != 1 {
		t.Fatalf("now: %+v", got)
	}
	if got := o.Judge(outlierNow.Add(OutlierWindow + time.Minute)); len(got) != 0 {
		t.Errorf("later: %+v", got)
	}
	o.Add([]model.RED{{TimeUnixNano: uint64(outlierNow.Add(time.Hour).UnixNano()), Service: "cat", Operation: "x", Instance: "a", Requests: 1}})
	o.Add([]model.RED{{TimeUnixNano: uint64(outlierNow.UnixNano()), Service: "cat", Operation: "x", Instance: "a", Requests: 1}})
	if n := len(o.slots); n != 1 {
		t.Errorf("a row older than the window before the newest made a slot: %d slots", n)
	}
}

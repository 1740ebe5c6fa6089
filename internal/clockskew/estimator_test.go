package clockskew

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr []string // YAML keys the error must name; none: valid
	}{
		{name: "default", mod: func(*Config) {}},
		{name: "window", mod: func(c *Config) { c.Window = 0 }, wantErr: []string{"`skew_window`"}},
		{name: "threshold", mod: func(c *Config) { c.Threshold = -time.Millisecond }, wantErr: []string{"`skew_threshold`"}},
		{name: "min samples", mod: func(c *Config) { c.MinSamples = 0 }, wantErr: []string{"`skew_min_samples`"}},
		{name: "max pairs", mod: func(c *Config) { c.MaxPairs = 0 }, wantErr: []string{"`skew_max_pairs`"}},
		{name: "max samples", mod: func(c *Config) { c.MaxSamples = -1 }, wantErr: []string{"`skew_max_samples`"}},
		{
			name:    "min above max samples",
			mod:     func(c *Config) { c.MinSamples, c.MaxSamples = 10, 8 },
			wantErr: []string{"`skew_min_samples` (10) must be at most `skew_max_samples` (8)"},
		},
		{
			name:    "all at once",
			mod:     func(c *Config) { *c = Config{} },
			wantErr: []string{"`skew_window`", "`skew_threshold`", "`skew_min_samples`", "`skew_max_pairs`", "`skew_max_samples`"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mod(&cfg)
			err := cfg.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one naming %v", tc.wantErr)
			}
			if got := strings.Count(err.Error(), "\n") + 1; got != len(tc.wantErr) {
				t.Errorf("%d errors, want %d: %v", got, len(tc.wantErr), err)
			}
			for _, k := range tc.wantErr {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error %q does not name %s", err, k)
				}
			}
			if _, nerr := NewEstimator(cfg); nerr == nil || nerr.Error() != err.Error() {
				t.Errorf("NewEstimator error %v, want %v", nerr, err)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	want := Config{Window: 5 * time.Minute, MinSamples: 5, Threshold: 100 * time.Millisecond, MaxPairs: 10000, MaxSamples: 256}
	if got := DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
	if got := newEstimator(t, nil).Config(); got != want {
		t.Fatalf("Config() = %+v", got)
	}
}

type estimate struct {
	off time.Duration
	n   int
	ok  bool
}

func estimateOf(e *Estimator, a, b string) estimate {
	off, n, ok := e.Estimate(a, b)
	return estimate{off, n, ok}
}

func TestEstimate(t *testing.T) {
	tests := []struct {
		name   string
		skew   time.Duration
		traces int
		want   estimate // Estimate(web-1, db-1)
	}{
		{"250 ms ahead, enough samples", ms(250), 5, estimate{ms(250), 5, true}},
		{"250 ms ahead, too few samples", ms(250), 4, estimate{ms(250), 4, false}},
		{"40 ms ahead", ms(40), 5, estimate{ms(40), 5, true}},
		{"250 ms behind", ms(-250), 7, estimate{ms(-250), 7, true}},
		{"in sync", 0, 5, estimate{0, 5, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEstimator(t, nil)
			observeN(e, t0, tc.traces, callTrace(tc.skew))
			if got := estimateOf(e, "web-1", "db-1"); got != tc.want {
				t.Fatalf("Estimate(web-1, db-1) = %+v, want %+v", got, tc.want)
			}
			// The reverse order flips the sign only.
			rev := tc.want
			rev.off = -rev.off
			if got := estimateOf(e, "db-1", "web-1"); got != rev {
				t.Fatalf("Estimate(db-1, web-1) = %+v, want %+v", got, rev)
			}
		})
	}
}

func TestEstimateUnknown(t *testing.T) {
	e := newEstimator(t, nil)
	observeN(e, t0, 5, callTrace(ms(250)))
	for _, hosts := range [][2]string{{"web-1", "web-1"}, {"", "db-1"}, {"db-1", ""}, {"web-1", "inv-1"}} {
		if got := estimateOf(e, hosts[0], hosts[1]); got != (estimate{}) {
			t.Errorf("Estimate(%q, %q) = %+v, want nothing", hosts[0], hosts[1], got)
		}
	}
}

// One odd trace must not decide: 20 traces at +200 ms and one at −5 s give
// exactly 200 ms (a mean would give about −48 ms).
func TestEstimateRobust(t *testing.T) {
	for _, outlierAt := range []int{0, 10, 20} {
		t.Run(fmt.Sprint("outlier at ", outlierAt), func(t *testing.T) {
			e := newEstimator(t, nil)
			for i := range 21 {
				skew := ms(200)
				if i == outlierAt {
					skew = -5 * time.Second
				}
				e.Observe(t0.Add(time.Duration(i)*time.Second), PairOffsets(callTrace(skew)))
			}
			if got, want := estimateOf(e, "web-1", "db-1"), (estimate{ms(200), 21, true}); got != want {
				t.Fatalf("Estimate = %+v, want %+v", got, want)
			}
		})
	}
}

// A trace is one vote however many calls it makes between two hosts: one
// trace with 100 calls at +1 s against 5 traces at +200 ms.
func TestObserveOneSamplePerTrace(t *testing.T) {
	e := newEstimator(t, nil)
	var chatty []Observation
	for range 100 {
		chatty = append(chatty, obsOf("web-1", "db-1", time.Second))
	}
	e.Observe(t0, chatty)
	for i := range 5 {
		e.Observe(t0.Add(time.Duration(i+1)*time.Second), []Observation{obsOf("web-1", "db-1", ms(200))})
	}
	if got, want := estimateOf(e, "web-1", "db-1"), (estimate{ms(200), 6, true}); got != want {
		t.Fatalf("Estimate = %+v, want %+v", got, want)
	}
	// Within one trace, the pair's sample is the median of its calls, both
	// directions folded onto the pair: db-1 − web-1 = 100, 300 (via the
	// reverse call), 250 → 250 ms.
	e2 := newEstimator(t, func(c *Config) { c.MinSamples = 1 })
	e2.Observe(t0, []Observation{
		obsOf("web-1", "db-1", ms(100)),
		obsOf("db-1", "web-1", ms(-300)),
		obsOf("web-1", "db-1", ms(250)),
		obsOf("web-1", "inv-1", ms(7)),
	})
	if got, want := estimateOf(e2, "web-1", "db-1"), (estimate{ms(250), 1, true}); got != want {
		t.Fatalf("Estimate(web-1, db-1) = %+v, want %+v", got, want)
	}
	if got, want := estimateOf(e2, "web-1", "inv-1"), (estimate{ms(7), 1, true}); got != want {
		t.Fatalf("Estimate(web-1, inv-1) = %+v, want %+v", got, want)
	}
}

// Observations Observe must skip: a child longer than its parent, and
// hand-made ones not naming two different hosts.
func TestObserveSkips(t *testing.T) {
	e := newEstimator(t, func(c *Config) { c.MinSamples = 1 })
	longer := obsOf("web-1", "db-1", 5*time.Second)
	longer.ChildLonger, longer.Violation = true, true
	e.Observe(t0, []Observation{longer, obsOf("web-1", "web-1", time.Second), obsOf("", "db-1", time.Second)})
	if got := e.Snapshot(); len(got) != 0 {
		t.Fatalf("pairs tracked: %+v", got)
	}
	e.Observe(t0, []Observation{longer, obsOf("web-1", "db-1", ms(20))})
	if got, want := estimateOf(e, "web-1", "db-1"), (estimate{ms(20), 1, true}); got != want {
		t.Fatalf("Estimate = %+v, want %+v", got, want)
	}
}

func TestWindowExpiry(t *testing.T) {
	e := newEstimator(t, nil) // 5 m window
	for i := range 5 {
		e.Observe(t0.Add(time.Duration(i)*time.Millisecond), []Observation{obsOf("web-1", "db-1", ms(300))})
	}
	t4 := t0.Add(4 * time.Minute)
	for i := range 5 {
		e.Observe(t4.Add(time.Duration(i)*time.Millisecond), []Observation{obsOf("web-1", "db-1", ms(100))})
	}
	steps := []struct {
		now  time.Time
		want estimate
	}{
		{t4, estimate{ms(200), 10, true}},                                        // all ten: mean of 100 and 300
		{t0.Add(5 * time.Minute), estimate{ms(200), 10, true}},                   // the first is exactly 5 m old: still in
		{t0.Add(5*time.Minute + 1), estimate{ms(100), 9, true}},                  // the first has left: four at 300
		{t0.Add(5*time.Minute + 4*time.Millisecond), estimate{ms(100), 6, true}}, // one at 300 left
		{t0.Add(5*time.Minute + 5*time.Millisecond), estimate{ms(100), 5, true}},
		{t0, estimate{ms(100), 5, true}}, // the clock never goes back
		{t4.Add(5*time.Minute + 4*time.Millisecond), estimate{ms(100), 1, false}},
		{t4.Add(5*time.Minute + 5*time.Millisecond), estimate{0, 0, false}},
	}
	for _, s := range steps {
		e.Observe(s.now, nil)
		if got := estimateOf(e, "web-1", "db-1"); got != s.want {
			t.Fatalf("at %s: Estimate = %+v, want %+v", s.now.Sub(t0), got, s.want)
		}
	}
}

func TestMaxSamplesRing(t *testing.T) {
	e := newEstimator(t, func(c *Config) { c.MaxSamples = 8; c.MinSamples = 8 })
	for i := range 20 {
		e.Observe(t0.Add(time.Duration(i)*time.Second), []Observation{obsOf("web-1", "db-1", ms(float64(i)))})
		want := estimate{ms(float64(i) / 2), i + 1, i >= 7} // 0..i, median i/2
		if i >= 8 {
			want = estimate{ms(float64(i) - 3.5), 8, true} // the newest eight: i−7..i
		}
		if got := estimateOf(e, "web-1", "db-1"); got != want {
			t.Fatalf("after %d samples: Estimate = %+v, want %+v", i+1, got, want)
		}
	}
	e.mu.RLock()
	st := e.pairs[Pair{"db-1", "web-1"}]
	e.mu.RUnlock()
	if len(st.ring) != 8 || cap(st.ring) != 8 {
		t.Fatalf("ring len %d cap %d, want 8 and 8", len(st.ring), cap(st.ring))
	}
}

func TestMaxPairsEviction(t *testing.T) {
	e := newEstimator(t, func(c *Config) { c.MaxPairs = 3; c.MinSamples = 1 })
	obs := func(a, b string) []Observation { return []Observation{obsOf(a, b, ms(1))} }
	e.Observe(t0.Add(1*time.Second), obs("h1", "h2"))
	e.Observe(t0.Add(2*time.Second), obs("h1", "h3"))
	e.Observe(t0.Add(3*time.Second), obs("h1", "h4"))
	e.Observe(t0.Add(4*time.Second), []Observation{obsOf("h2", "h1", ms(-1))}) // h1/h2 again: now the most recent
	e.Observe(t0.Add(5*time.Second), obs("h1", "h5"))                          // evicts h1/h3, the least recent
	pairs := func() []Pair {
		var ps []Pair
		for _, s := range e.Snapshot() {
			ps = append(ps, s.Pair)
		}
		return ps
	}
	if got, want := pairs(), []Pair{{"h1", "h2"}, {"h1", "h4"}, {"h1", "h5"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pairs %v, want %v", got, want)
	}
	if got := estimateOf(e, "h1", "h3"); got != (estimate{}) {
		t.Fatalf("evicted pair still estimated: %+v", got)
	}
	if got, want := estimateOf(e, "h2", "h1"), (estimate{ms(-1), 2, true}); got != want {
		t.Fatalf("Estimate(h2, h1) = %+v, want %+v", got, want)
	}
	e.Observe(t0.Add(6*time.Second), obs("h1", "h6")) // evicts h1/h4
	if got, want := pairs(), []Pair{{"h1", "h2"}, {"h1", "h5"}, {"h1", "h6"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pairs %v, want %v", got, want)
	}
}

// With many pairs, eviction makes room for 1/64 of MaxPairs at once and keeps
// the table at or below MaxPairs.
func TestMaxPairsBatchEviction(t *testing.T) {
	e := newEstimator(t, func(c *Config) { c.MaxPairs = 128 })
	for i := range 129 {
		e.Observe(t0.Add(time.Duration(i)*time.Second), []Observation{obsOf("a", fmt.Sprintf("h%03d", i), ms(1))})
	}
	snap := e.Snapshot()
	if len(snap) != 127 { // 128 − 2 evicted + 1 new
		t.Fatalf("%d pairs, want 127", len(snap))
	}
	if snap[0].B != "h002" || snap[len(snap)-1].B != "h128" {
		t.Fatalf("kept %s..%s, want h002..h128", snap[0].B, snap[len(snap)-1].B)
	}
}

func TestSnapshot(t *testing.T) {
	e := newEstimator(t, nil)
	observeN(e, t0, 5, loadTrace(t, "three_hosts.json"))
	e.Observe(t0, []Observation{obsOf("x-1", "inv-1", ms(3))})
	want := []PairEstimate{
		{Pair: Pair{"db-1", "web-1"}, Offset: ms(-240), Samples: 5, OK: true},
		{Pair: Pair{"inv-1", "web-1"}, Offset: 0, Samples: 5, OK: true},
		{Pair: Pair{"inv-1", "x-1"}, Offset: ms(-3), Samples: 1, OK: false},
	}
	if got := e.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Snapshot:\n got %+v\nwant %+v", got, want)
	}
}

// Hosts stored as keys must not pin the memory they were sliced from.
func TestPairKeysCloned(t *testing.T) {
	e := newEstimator(t, nil)
	buf := []byte("web-1db-1")
	from, to := unsafe.String(&buf[0], 5), unsafe.String(&buf[5], 4) // views of buf, as a decoder may give
	e.Observe(t0, []Observation{obsOf(from, to, ms(1))})
	for p := range e.pairs {
		if p.A != "db-1" || p.B != "web-1" {
			t.Fatalf("pair %v", p)
		}
		if unsafe.StringData(p.A) == &buf[5] || unsafe.StringData(p.B) == &buf[0] {
			t.Fatal("pair key shares the caller's memory")
		}
	}
}

// Several goroutines observing and reading at once (run with -race); the
// final estimate is exact.
func TestConcurrent(t *testing.T) {
	e := newEstimator(t, nil)
	three := loadTrace(t, "three_hosts.json")
	obs := PairOffsets(three)
	const workers, iters = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range iters {
				now := t0.Add(time.Duration(w*iters+i) * time.Millisecond)
				e.Observe(now, obs)
				e.Observe(now, []Observation{obsOf("web-1", fmt.Sprintf("x-%d", i%50), ms(float64(w)))})
				e.Estimate("web-1", "db-1")
				e.Findings(three, obs)
				a := e.Adjust(three)
				if len(a.Spans) != len(three.Spans) {
					t.Errorf("Adjust: %d spans", len(a.Spans))
					return
				}
				if i%50 == 0 {
					e.Snapshot()
				}
			}
		})
	}
	wg.Wait()
	if got, want := estimateOf(e, "web-1", "db-1"), (estimate{ms(240), 256, true}); got != want {
		t.Fatalf("Estimate = %+v, want %+v", got, want)
	}
	if got := len(e.Snapshot()); got != 52 {
		t.Fatalf("%d pairs, want 52", got)
	}
}

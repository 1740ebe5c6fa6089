package bench

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// redCostSlice is how long one collector receives the load before the other
// does: short against the drifts of a shared machine, long against the
// cycles (about 0.3 s) that finish after a switch.
const redCostSlice = 2 * time.Second

// redCostRuns keeps each iteration's cost, for the summary TestMain prints.
var redCostRuns struct {
	sync.Mutex
	costs     []float64
	saturated []float64 // of runs that did not reach the rate
}

// BenchmarkREDCost measures what RED on all traffic (every entry span
// counted, call edges against the retry budget, the rows written) costs the
// collector: two collectors of one build, RED on and off, run side by side
// and receive the same load (TRACESIFT_BENCH_RATE, default 150 000 spans/s)
// in alternate slices of 2 s, so that the machine's drifts fall on both
// alike. The cost is 1 − (spans per CPU-second with RED) / (without): the
// share of the collector's CPU that RED takes. Run it with -benchtime 1x
// and -count 5 (make bench-red-cost); TestMain prints the median and worst.
func BenchmarkREDCost(b *testing.B) {
	o := optionsFromEnv(b)
	if os.Getenv("TRACESIFT_BENCH_RATE") == "" {
		o.rate = 150_000
	}
	if os.Getenv("TRACESIFT_BENCH_DURATION") == "" {
		o.duration = time.Minute
	}
	if os.Getenv("TRACESIFT_BENCH_CONNS") == "" {
		// Each side starts its slice from cold connections and the other
		// side's deferred work shares the cores: 4 senders fell ~12 % short.
		o.conns = 8
	}
	bin := buildBinary(b, "tracesift")
	b.ReportAllocs()
	for b.Loop() {
		redCostRuns.Lock()
		seed := uint64(len(redCostRuns.costs) + 1)
		redCostRuns.Unlock()
		on, off := redCostPair(b, bin, o, seed)
		cost := 100 * (1 - on.spansPerCPU()/off.spansPerCPU())
		b.ReportMetric(on.spansPerCPU(), "on-spans/cpu-s")
		b.ReportMetric(off.spansPerCPU(), "off-spans/cpu-s")
		b.ReportMetric(cost, "red-cost-%")
		b.Logf("spans/s while receiving; RED on: %.0f spans/s, %.0f spans/CPU-s (%.1f s CPU); off: %.0f spans/s, %.0f spans/CPU-s (%.1f s CPU); "+
			"cost %.1f %% of the collector's CPU", on.spansPerSec(), on.spansPerCPU(), on.serverCPU.Seconds(),
			off.spansPerSec(), off.spansPerCPU(), off.serverCPU.Seconds(), cost)
		redCostRuns.Lock()
		// A side that fell far behind the offered rate ran on a saturated
		// machine: not a measurement at that rate; it is reported apart.
		if slow := min(on.spansPerSec(), off.spansPerSec()); slow < minRateShare*o.rate {
			redCostRuns.saturated = append(redCostRuns.saturated, cost)
			b.Logf("not counted: a side received %.0f spans/s of the %.0f offered (the machine was busy)", slow, o.rate)
		} else {
			redCostRuns.costs = append(redCostRuns.costs, cost)
		}
		redCostRuns.Unlock()
	}
}

// minRateShare is the share of the offered rate both sides must receive
// while their slices run for a run to count.
const minRateShare = 0.8

// redCostPair runs the two collectors through one measured window and
// returns what each did in it.
func redCostPair(b *testing.B, bin string, o benchOptions, seed uint64) (on, off *result) {
	type side struct {
		name  string
		srv   *Server
		p     ports
		load  *Load
		r     *result
		c0    Counts
		cpu0  time.Duration
		extra string
		// active is how long the side received the load in the window.
		active time.Duration
	}
	sides := []*side{{name: "red-on"}, {name: "red-off", extra: "red: {enabled: false}"}}
	for _, s := range sides {
		sys := tracesiftSystem(bin, s.extra)
		s.srv, s.p, _ = startSystem(b, sys, o, fmt.Sprintf("%s-%d", s.name, seed))
		s.r = &result{name: s.name}
		load, err := StartLoad(LoadConfig{Endpoint: s.p.grpcAddr(), Conns: o.conns, Seed: seed, Rate: o.rate})
		if err != nil {
			b.Fatal(err)
		}
		load.Hold()
		s.load = load
	}
	defer func() {
		for _, s := range sides {
			s.load.Stop(10 * time.Second)
		}
	}()
	cpu := func(s *side) time.Duration {
		d, err := ProcCPU(s.srv.PID())
		if err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
		return d
	}
	// Slices alternate A B B A, so that a drift within a pair of slices is
	// shared too.
	alternate := func(d time.Duration, pairs int) {
		for i := range 2 * pairs {
			s := sides[(i+i/2)%2]
			t := time.Now()
			s.load.Release()
			time.Sleep(d)
			s.load.Hold()
			s.active += time.Since(t)
			if s.srv.Exited() {
				b.Fatalf("%s exited under load; log:\n%s", s.name, s.srv.LogTail(40))
			}
		}
	}
	pairs := max(1, int(o.duration/(2*redCostSlice)))
	alternate(redCostSlice, max(1, int(o.warmup/(2*redCostSlice))))
	for _, s := range sides {
		s.c0, s.cpu0 = s.load.Counts(), cpu(s)
	}
	t0 := time.Now()
	for _, s := range sides {
		s.active = 0
	}
	alternate(redCostSlice, pairs)
	b.ReportMetric(time.Since(t0).Seconds(), "window-s")
	for _, s := range sides {
		s.r.window = s.active // spansPerSec: while receiving
		s.r.serverCPU = cpu(s) - s.cpu0
		c1 := s.load.Counts()
		s.r.counts = Counts{Requests: c1.Requests - s.c0.Requests, SpansAccepted: c1.SpansAccepted - s.c0.SpansAccepted}
		if n := c1.RejectedTotal(); n > 0 {
			b.Fatalf("%s rejected %d requests (%s): the cost of an overloaded collector is not RED's", s.name, n,
				c1.RejectedString())
		}
	}
	// Each side must have done what it stands for: RED rows written by the
	// one, none by the other.
	for _, s := range sides {
		s.load.Stop(10 * time.Second)
		m, err := ScrapeMetrics(s.p.metricsURL())
		if err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
		rows := m.Sum("otelcol_tracesift_sampler_red_rows")
		if (s.extra == "") != (rows > 0) {
			b.Fatalf("%s wrote %.0f RED rows", s.name, rows)
		}
		if err := s.srv.Stop(2 * time.Minute); err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
	}
	return sides[0].r, sides[1].r
}

// printREDCost prints the median and worst cost of the runs, if any.
func printREDCost() {
	redCostRuns.Lock()
	defer redCostRuns.Unlock()
	c := redCostRuns.costs
	each := make([]string, len(c))
	for i, v := range c {
		each[i] = fmt.Sprintf("%.1f", v)
	}
	if len(c) > 0 {
		fmt.Printf("\n=== RED's share of the collector's CPU over %d runs: median %.1f %%, worst %.1f %% (each: %s)\n",
			len(c), median(c), slices.Max(c), strings.Join(each, ", "))
	}
	if n := len(redCostRuns.saturated); n > 0 {
		fmt.Printf("    and %d run(s) not counted, below %.0f %% of the offered rate: %v\n", n, 100*minRateShare,
			redCostRuns.saturated)
	}
}

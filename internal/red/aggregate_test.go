package red

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

func span(service, op, instance string, start, dur uint64, failed bool, dims ...string) *Span {
	s := &Span{Service: service, Operation: []byte(op), Instance: []byte(instance), Start: start, Duration: dur, Error: failed}
	for _, d := range dims {
		if d == "-" {
			s.Dimensions = append(s.Dimensions, nil)
		} else {
			s.Dimensions = append(s.Dimensions, []byte(d))
		}
	}
	return s
}

// byKey indexes rows by "time service op instance dims".
func byKey(rows []model.RED) map[string]model.RED {
	out := map[string]model.RED{}
	for _, r := range rows {
		var dims []string
		for k, v := range r.Dimensions {
			dims = append(dims, k+"="+v)
		}
		slices.Sort(dims)
		out[fmt.Sprintf("%d %s %s %s %s", r.TimeUnixNano/1e9, r.Service, r.Operation, r.Instance, strings.Join(dims, ","))] = r
	}
	return out
}

func TestSeriesAndIntervals(t *testing.T) {
	a := NewAggregator(10*time.Second, 100, []string{"service.version", "cloud.region"})
	const s = uint64(1e9)
	a.Add(span("cat", "GET /cat", "cat-1", 1000*s, 30e6, false, "1.0", "eu"))
	a.Add(span("cat", "GET /cat", "cat-1", 1009*s, 40e6, true, "1.0", "eu"))  // same interval
	a.Add(span("cat", "GET /cat", "cat-1", 1010*s, 50e6, false, "1.0", "eu")) // the next one
	a.Add(span("cat", "GET /cat", "cat-2", 1001*s, 930e6, true, "1.0", "eu"))
	a.Add(span("cat", "GET /cat", "cat-1", 1002*s, 35e6, false, "1.1", "-")) // a canary, region unset
	a.Add(span("cat", "GET /dog", "cat-1", 1003*s, 35e6, false))             // dimensions missing
	rows, over := a.Flush()
	if over != 0 {
		t.Errorf("overflowed %d", over)
	}
	got := byKey(rows)
	want := map[string][2]uint64{
		"1000 cat GET /cat cat-1 cloud.region=eu,service.version=1.0": {2, 1},
		"1010 cat GET /cat cat-1 cloud.region=eu,service.version=1.0": {1, 0},
		"1000 cat GET /cat cat-2 cloud.region=eu,service.version=1.0": {1, 1},
		"1000 cat GET /cat cat-1 service.version=1.1":                 {1, 0},
		"1000 cat GET /dog cat-1 ":                                    {1, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d series, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		r, ok := got[k]
		if !ok || r.Requests != w[0] || r.Errors != w[1] || Sketch(r.Latency).Count() != w[0] {
			t.Errorf("%s: got %+v, want requests %d errors %d", k, r, w[0], w[1])
		}
	}
	if rows, _ := a.Flush(); len(rows) != 0 {
		t.Errorf("a flush starts again empty, got %d rows", len(rows))
	}
}

// Past max_series, spans still count, in one overflow series an interval:
// the totals stay exact.
func TestOverflowKeepsTotals(t *testing.T) {
	a := NewAggregator(10*time.Second, 3, nil)
	for i := range 10 {
		a.Add(span("svc", "op", fmt.Sprintf("pod-%d", i), 5e9, 1e6, i%2 == 0))
		a.Add(span("svc", "op", fmt.Sprintf("pod-%d", i), 25e9, 1e6, false))
	}
	rows, over := a.Flush()
	var requests, errors uint64
	var overflowRows, normal int
	for _, r := range rows {
		requests += r.Requests
		errors += r.Errors
		if r.Dimensions[OverflowDimension] == "true" {
			overflowRows++
		} else {
			normal++
		}
	}
	if requests != 20 || errors != 5 || normal != 3 || overflowRows != 2 || over != 17 {
		t.Errorf("requests %d errors %d, %d series + %d overflow rows, %d overflowed", requests, errors, normal, overflowRows, over)
	}
}

func TestConcurrentAddsAreExact(t *testing.T) {
	a := NewAggregator(10*time.Second, 1000, []string{"d"})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				a.Add(span("svc", fmt.Sprintf("op-%d", i%7), fmt.Sprintf("pod-%d", g%3), uint64(i)*1e7, uint64(i), i%10 == 0, "x"))
			}
		}()
	}
	wg.Wait()
	rows, _ := a.Flush()
	var requests, errors uint64
	for _, r := range rows {
		requests += r.Requests
		errors += r.Errors
	}
	if requests != 40000 || errors != 4000 {
		t.Errorf("requests %d errors %d", requests, errors)
	}
}

// BenchmarkAggregatorAdd counts entry spans of 36 series with the default
// dimensions as the sampler does for every request: the spans of one
// resource (3 operations) come one after the other and share its Prefix.
func BenchmarkAggregatorAdd(b *testing.B) {
	a := NewAggregator(10*time.Second, 1000, DefaultDimensions)
	var resources []*Span
	for svc := range 4 {
		for inst := range 3 {
			resources = append(resources, span(fmt.Sprintf("service-%d", svc), "", fmt.Sprintf("service-%d-7d9f8b6c4-%d", svc, inst),
				0, 0, false, "1.4.2", "production", "-", "eu-west-1", "eu-west-1a", fmt.Sprintf("node-%d", inst)))
		}
	}
	ops := [][]byte{[]byte("GET /api/v1/items/{id}"), []byte("POST /api/v1/orders"), []byte("GET /health")}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s := resources[i/3%len(resources)]
		if i%3 == 0 {
			s.Prefix = 0
		}
		s.Operation = ops[i%3]
		s.Start, s.Duration, s.Error = 1e18+uint64(i)*1000, 1e6+uint64(i%997)*1e4, i%100 == 0
		a.Add(s)
		i++
	}
}

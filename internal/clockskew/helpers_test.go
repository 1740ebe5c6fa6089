package clockskew

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/model/modeltest"
)

// base is 2026-01-01T00:00:00Z in Unix nanoseconds; test span times are
// offsets from it.
const base = uint64(1_767_225_600_000_000_000)

// t0 is the estimator clock the tests start at.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// at is base + d as Unix nanoseconds.
func at(d time.Duration) uint64 { return uint64(int64(base) + int64(d)) }

type spec struct {
	id, parent string
	kind       model.Kind
	svc, host  string
	start, end time.Duration // from base
}

func mkTrace(ss ...spec) *model.Trace {
	t := &model.Trace{TraceID: "0af7651916cd43dd8448eb211c80319c"}
	for _, s := range ss {
		t.Spans = append(t.Spans, model.Span{
			SpanID: s.id, ParentSpanID: s.parent, Name: "op", Kind: s.kind,
			Service: s.svc, Host: s.host, StartUnixNano: at(s.start), EndUnixNano: at(s.end),
		})
	}
	return t
}

// callTrace is checkout on web-1 calling payments on db-1, whose clock is
// skew ahead of web-1's: true times client [10, 110] ms, server [15, 105] ms,
// so PairOffsets yields exactly skew.
func callTrace(skew time.Duration) *model.Trace {
	return mkTrace(
		spec{"r1", "", model.KindServer, "checkout", "web-1", 0, ms(300)},
		spec{"c1", "r1", model.KindClient, "checkout", "web-1", ms(10), ms(110)},
		spec{"s1", "c1", model.KindServer, "payments", "db-1", ms(15) + skew, ms(105) + skew},
	)
}

// obsOf is one observation of the pair (from, to) with the given offset.
func obsOf(from, to string, off time.Duration) Observation {
	return Observation{From: from, To: to, FromService: from + "-svc", ToService: to + "-svc", Offset: off,
		ParentSpanID: "p", ChildSpanID: "c"}
}

func newEstimator(tb testing.TB, mod func(*Config)) *Estimator {
	tb.Helper()
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	e, err := NewEstimator(cfg)
	if err != nil {
		tb.Fatalf("NewEstimator: %v", err)
	}
	return e
}

// observeN observes PairOffsets(t) n times, one second apart from start.
func observeN(e *Estimator, start time.Time, n int, t *model.Trace) {
	obs := PairOffsets(t)
	for i := range n {
		e.Observe(start.Add(time.Duration(i)*time.Second), obs)
	}
}

func loadTrace(tb testing.TB, name string) *model.Trace {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	t, err := modeltest.ReadTrace(b)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return t
}

// cloneTrace deep-copies the span times and hosts that Adjust must not touch.
func cloneTrace(t *model.Trace) *model.Trace {
	c := *t
	c.Spans = append([]model.Span(nil), t.Spans...)
	return &c
}

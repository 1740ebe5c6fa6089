package clockskew

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/model"
)

const correctedBy = "; cross-host timing and log order between them are corrected by this offset"

func TestFindingsOnePair(t *testing.T) {
	tests := []struct {
		name   string
		skew   time.Duration
		traces int
		mod    func(*Config)
		want   []model.Finding
	}{
		{
			name: "250 ms ahead", skew: ms(250), traces: 5,
			want: []model.Finding{{
				Kind: analyze.KindClockSkew, SpanIDs: []string{"s1"}, Service: "payments", Subject: "web-1 → db-1", Value: 250,
				Summary: "host db-1 (payments) clock is 250 ms ahead of host web-1 (checkout)" + correctedBy,
			}},
		},
		{
			name: "250 ms behind", skew: ms(-250), traces: 5,
			want: []model.Finding{{
				Kind: analyze.KindClockSkew, SpanIDs: []string{"s1"}, Service: "payments", Subject: "web-1 → db-1", Value: -250,
				Summary: "host db-1 (payments) clock is 250 ms behind host web-1 (checkout)" + correctedBy,
			}},
		},
		{
			name: "exactly the threshold", skew: ms(100), traces: 5,
			want: []model.Finding{{
				Kind: analyze.KindClockSkew, SpanIDs: []string{"s1"}, Service: "payments", Subject: "web-1 → db-1", Value: 100,
				Summary: "host db-1 (payments) clock is 100 ms ahead of host web-1 (checkout)" + correctedBy,
			}},
		},
		{
			name: "fractional milliseconds", skew: 123_456_789, traces: 5,
			want: []model.Finding{{
				Kind: analyze.KindClockSkew, SpanIDs: []string{"s1"}, Service: "payments", Subject: "web-1 → db-1", Value: 123.456789,
				Summary: "host db-1 (payments) clock is 123.5 ms ahead of host web-1 (checkout)" + correctedBy,
			}},
		},
		{name: "40 ms is below the 100 ms threshold", skew: ms(40), traces: 5},
		{name: "-40 ms is below the 100 ms threshold", skew: ms(-40), traces: 5},
		{name: "just below the threshold", skew: ms(100) - 1, traces: 5},
		{
			// No estimate yet, but the server span lies outside the call
			// that made it by more than the threshold: evidence on its own.
			name: "too few samples", skew: ms(250), traces: 4,
			want: []model.Finding{{
				Kind: analyze.KindClockSkew, SpanIDs: []string{"s1"}, Service: "payments", Subject: "web-1 → db-1", Value: 250,
				Summary: "host db-1 (payments) clock is 250 ms ahead of host web-1 (checkout)" + correctedBy +
					"; seen in this trace alone: a server span lies 245 ms outside the call that made it",
			}},
		},
		{name: "too few samples, inside the call", skew: ms(4), traces: 4, mod: func(c *Config) { c.Threshold = 3 * time.Millisecond }},
		{
			name: "lower threshold", skew: ms(40), traces: 5, mod: func(c *Config) { c.Threshold = 30 * time.Millisecond },
			want: []model.Finding{{
				Kind: analyze.KindClockSkew, SpanIDs: []string{"s1"}, Service: "payments", Subject: "web-1 → db-1", Value: 40,
				Summary: "host db-1 (payments) clock is 40 ms ahead of host web-1 (checkout)" + correctedBy,
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEstimator(t, tc.mod)
			tr := callTrace(tc.skew)
			observeN(e, t0, tc.traces, tr)
			got := e.Findings(tr, PairOffsets(tr))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Findings:\n got %+v\nwant %+v", got, tc.want)
			}
			// obs == nil computes them from the trace.
			if got := e.Findings(tr, nil); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Findings(t, nil):\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// The estimate decides for an in-sync trace of a skewed pair, which still
// gets the finding; a trace whose server span lies outside its call by more
// than the threshold gets it on its own evidence whatever the estimate says.
func TestFindingsUseTheEstimate(t *testing.T) {
	e := newEstimator(t, nil)
	observeN(e, t0, 10, callTrace(ms(250)))
	inSync := callTrace(0)
	e.Observe(t0.Add(time.Minute), PairOffsets(inSync))
	if got := e.Findings(inSync, nil); len(got) != 1 || got[0].Value != 250 {
		t.Fatalf("in-sync trace of a skewed pair: %+v, want one finding of 250 ms", got)
	}
	e2 := newEstimator(t, nil)
	observeN(e2, t0, 10, callTrace(0))
	odd := callTrace(5 * time.Second)
	e2.Observe(t0.Add(time.Minute), PairOffsets(odd))
	if got := e2.Findings(odd, nil); len(got) != 1 || got[0].Value != 5000 {
		t.Fatalf("a trace 5 s outside its call: %+v, want one finding of 5000 ms", got)
	}
}

// Three hosts, skew on web-1/db-1 only: one finding, for that pair.
func TestFindingsThreeHosts(t *testing.T) {
	e := newEstimator(t, nil)
	tr := loadTrace(t, "three_hosts.json")
	observeN(e, t0, 5, tr)
	want := []model.Finding{{
		Kind: analyze.KindClockSkew, SpanIDs: []string{"b100000000000001"}, Service: "payments", Subject: "web-1 → db-1", Value: 240,
		Summary: "host db-1 (payments) clock is 240 ms ahead of host web-1 (checkout)" + correctedBy,
	}}
	if got := e.Findings(tr, nil); !reflect.DeepEqual(got, want) {
		t.Fatalf("Findings:\n got %+v\nwant %+v", got, want)
	}
}

// The sign follows the trace's call direction; the estimate is shared.
func TestFindingsSignConvention(t *testing.T) {
	e := newEstimator(t, nil)
	// db-1 is 240 ms ahead of web-1: web-1 → db-1 calls say +240 ms,
	// db-1 → web-1 calls say −240 ms; both feed the same pair.
	down := callTrace(ms(240))
	up := mkTrace(
		spec{"r2", "", model.KindServer, "payments", "db-1", ms(240), ms(540)},
		spec{"c2", "r2", model.KindClient, "payments", "db-1", ms(250), ms(350)},
		spec{"s2", "c2", model.KindServer, "checkout", "web-1", ms(15), ms(105)},
	)
	if got := PairOffsets(up); len(got) != 1 || got[0].Offset != ms(-240) {
		t.Fatalf("reverse call: %+v, want one observation of -240ms", got)
	}
	for i := range 6 {
		tr := down
		if i%2 == 1 {
			tr = up
		}
		e.Observe(t0.Add(time.Duration(i)*time.Second), PairOffsets(tr))
	}
	if got, want := estimateOf(e, "web-1", "db-1"), (estimate{ms(240), 6, true}); got != want {
		t.Fatalf("Estimate(web-1, db-1) = %+v, want %+v", got, want)
	}
	wantDown := []model.Finding{{
		Kind: analyze.KindClockSkew, SpanIDs: []string{"s1"}, Service: "payments", Subject: "web-1 → db-1", Value: 240,
		Summary: "host db-1 (payments) clock is 240 ms ahead of host web-1 (checkout)" + correctedBy,
	}}
	if got := e.Findings(down, nil); !reflect.DeepEqual(got, wantDown) {
		t.Fatalf("web-1 → db-1:\n got %+v\nwant %+v", got, wantDown)
	}
	wantUp := []model.Finding{{
		Kind: analyze.KindClockSkew, SpanIDs: []string{"s2"}, Service: "checkout", Subject: "db-1 → web-1", Value: -240,
		Summary: "host web-1 (checkout) clock is 240 ms behind host db-1 (payments)" + correctedBy,
	}}
	if got := e.Findings(up, nil); !reflect.DeepEqual(got, wantUp) {
		t.Fatalf("db-1 → web-1:\n got %+v\nwant %+v", got, wantUp)
	}
	// Both directions in one trace: one finding, oriented by the first call,
	// naming every child span of the pair.
	both := &model.Trace{Spans: append(append([]model.Span(nil), down.Spans...), up.Spans...)}
	wantBoth := []model.Finding{{
		Kind: analyze.KindClockSkew, SpanIDs: []string{"s1", "s2"}, Service: "payments", Subject: "web-1 → db-1", Value: 240,
		Summary: wantDown[0].Summary,
	}}
	if got := e.Findings(both, nil); !reflect.DeepEqual(got, wantBoth) {
		t.Fatalf("both ways:\n got %+v\nwant %+v", got, wantBoth)
	}
}

// Messaging pairs never make findings, however far apart their times.
func TestFindingsMessaging(t *testing.T) {
	e := newEstimator(t, nil)
	tr := loadTrace(t, "messaging.json")
	observeN(e, t0, 10, tr)
	if got := e.Findings(tr, nil); got != nil {
		t.Fatalf("Findings: %+v", got)
	}
	if got := estimateOf(e, "web-1", "q-1"); got != (estimate{}) {
		t.Fatalf("producer/consumer estimated: %+v", got)
	}
	if got := estimateOf(e, "web-1", "ntf-1"); got != (estimate{}) {
		t.Fatalf("producer/server estimated: %+v", got)
	}
	if got, want := estimateOf(e, "q-1", "led-1"), (estimate{ms(-30), 10, true}); got != want {
		t.Fatalf("Estimate(q-1, led-1) = %+v, want %+v", got, want)
	}
}

// Many observations (the map path) give the same findings as few.
func TestFindingsManyCalls(t *testing.T) {
	e := newEstimator(t, func(c *Config) { c.MinSamples = 1 })
	var obs []Observation
	var wantIDs []string
	for i := range 40 {
		o := obsOf("web-1", "db-1", ms(300))
		o.ChildSpanID = string(rune('a'+i%26)) + string(rune('a'+i/26))
		if i%3 == 0 {
			o.From, o.To, o.Offset = "db-1", "web-1", ms(-300)
		}
		obs = append(obs, o)
		wantIDs = append(wantIDs, o.ChildSpanID)
		obs = append(obs, obsOf("web-1", "inv-1", 0))
	}
	e.Observe(t0, obs)
	got := e.Findings(nil, obs)
	if len(got) != 1 || got[0].Value != -300 || !reflect.DeepEqual(got[0].SpanIDs, wantIDs) {
		t.Fatalf("Findings: %+v\nwant one of -300 ms (oriented db-1 → web-1) with span ids %v", got, wantIDs)
	}
}

// Estimates stored after a trace was kept give it the findings of the
// skewed pairs it crosses, oriented as its calls go, unless it has them.
func TestStoredFindings(t *testing.T) {
	tr := callTrace(ms(40)) // web-1 → db-1, 40 ms: inside the call, below any evidence
	tr.SkewedPairs = []model.ClockPair{
		{A: "db-1", B: "web-1", OffsetNanos: int64(-ms(240)), Samples: 7}, // clock(web-1) − clock(db-1)
		{A: "db-1", B: "other-1", OffsetNanos: int64(ms(500)), Samples: 9},
	}
	got := StoredFindings(tr)
	require.Len(t, got, 1)
	assert.Equal(t, "web-1 → db-1", got[0].Subject)
	assert.Equal(t, 240.0, got[0].Value, "clock(db-1) − clock(web-1)")
	assert.Equal(t, []string{"s1"}, got[0].SpanIDs)
	assert.Contains(t, got[0].Summary, "host db-1 (payments) clock is 240 ms ahead of host web-1 (checkout), as estimated over 7 traces")

	tr.Findings = []model.Finding{{Kind: analyze.KindClockSkew, Subject: "db-1 → web-1"}}
	assert.Empty(t, StoredFindings(tr), "the trace has the pair's finding already")
	tr.Findings, tr.SkewedPairs = nil, nil
	assert.Empty(t, StoredFindings(tr))
}

package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// traceConn answers a trace's spans with spans, or else two spans of
// resource 7, on hosts shop-1 and pay-1 at 1 ns, its window with the
// resource when asked for it, the tenant's skewed pairs with pairs and its
// resources in use with inUse.
type traceConn struct {
	recordingConn
	pairs, spans, inUse []string
	pairsErr            error // of a read of the tenant's pairs, when set
	// When set, a read of the tenant's pairs waits for hold to close (at
	// most heldAtMost: the test failed) and then sets heldEnded.
	hold      chan struct{}
	heldEnded atomic.Bool
}

const heldAtMost = time.Minute

func (c *traceConn) Query(ctx context.Context, query string, params Params, row func([]byte) error) error {
	c.record(query, params)
	rows := func(rs []string) error {
		for _, b := range rs {
			if err := row([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	}
	switch {
	case strings.Contains(query, "FROM "+snapshotDB+".spans"):
		if c.spans == nil {
			return rows([]string{`{"timestamp":1,"ids":"0A0B0C0D0E0F10110000000000000000","host":"shop-1","resource_id":7}`,
				`{"timestamp":1,"ids":"1A0B0C0D0E0F10110A0B0C0D0E0F1011","host":"pay-1","resource_id":7}`})
		}
		return rows(c.spans)
	case params["resource_ids"] != nil:
		return row([]byte(`{"part":4,"resource_id":7,"attributes":{"host.name":"shop-1"}}`))
	case params["max_pairs"] != nil:
		if c.hold != nil {
			select {
			case <-c.hold:
			case <-time.After(heldAtMost):
			}
			c.heldEnded.Store(true)
		}
		if c.pairsErr != nil {
			return c.pairsErr
		}
		return rows(c.pairs)
	case params["max_resources"] != nil:
		return rows(c.inUse)
	}
	return nil
}

// others is what c sent besides a trace's spans and facts, each named:
// "pairs" (the tenant's), "in use" (the tenant's resources), "window" or
// "window and resources", sorted.
func (c *traceConn) others(r *Reader) []string {
	var out []string
	for _, s := range c.sent {
		switch {
		case s.sql == r.spans || s.sql == r.facts:
		case s.sql == r.pairEstimates:
			out = append(out, "pairs")
		case s.sql == r.resourcesInUse:
			out = append(out, "in use")
		case s.sql == r.window:
			out = append(out, "window")
		case s.sql == r.windowResources:
			out = append(out, "window and resources")
		default:
			out = append(out, s.sql)
		}
	}
	slices.Sort(out)
	return out
}

// sentTo is the parameters of the statements c sent of sql.
func (c *traceConn) sentTo(sql string) []Params {
	var out []Params
	for _, s := range c.sent {
		if s.sql == sql {
			out = append(out, s.params)
		}
	}
	return out
}

// clockedReader is a reader of c on a clock the test moves.
type clockedReader struct {
	*Reader
	c     *traceConn
	clock time.Time
}

func newClockedReader(c *traceConn, cfg ReaderConfig) *clockedReader {
	cr := &clockedReader{Reader: NewReader(c, snapshotDB, cfg), c: c, clock: time.Unix(1e9, 0)}
	cr.now = func() time.Time { return cr.clock }
	return cr
}

// lookup moves the clock on by after, reads a trace (the read-th), waits for
// the reads it started in the background and returns the trace and what was
// sent besides its spans and facts (traceConn.others).
func (cr *clockedReader) lookup(t *testing.T, after time.Duration, read int) (*model.Trace, []string) {
	t.Helper()
	cr.clock = cr.clock.Add(after)
	cr.c.sent = nil
	tr, err := cr.GetTrace(context.Background(), snapshotTraceIDs[0])
	require.NoError(t, err, "read %d", read)
	cr.Wait()
	return tr, cr.c.others(cr.Reader)
}

// A trace by id is its spans and, beside them, its lines, findings and
// offsets and, when due, the tenant's skewed pairs (every pairsFresh/2) and
// resources in use (every resourcesInUseEvery); then its window only when
// the reader lacks a resource of its spans (read with the window) or the
// tenant's pairs cannot tell its skewed pairs.
func TestGetTraceStatements(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inUse []string
		first []string
	}{
		{"resource 7 not in use", nil, []string{"in use", "pairs", "window and resources"}},
		{"resource 7 in use", []string{`{"resource_id":7,"attributes":{"host.name":"shop-1"}}`}, []string{"in use", "pairs"}},
	} {
		c := &traceConn{inUse: tc.inUse}
		r := newClockedReader(c, ReaderConfig{})
		for i, step := range []struct {
			after time.Duration
			want  []string
		}{
			{0, tc.first},
			{0, nil},
			{pairsFresh/2 - time.Nanosecond, nil},
			{time.Nanosecond, []string{"pairs"}}, // pairsFresh/2 after the first
			{resourcesInUseEvery - pairsFresh/2, []string{"in use", "pairs"}},
			{2 * resourcesInUseEvery, []string{"in use", "pairs"}}, // both long stale: read, then used
		} {
			tr, others := r.lookup(t, step.after, i+1)
			require.Len(t, tr.Spans, 2)
			assert.Equal(t, "0a0b0c0d0e0f1011", tr.Spans[0].SpanID)
			assert.Equal(t, map[string]string{"host.name": "shop-1"}, tr.Spans[0].Resource, "%s, read %d", tc.name, i+1)
			assert.Equal(t, step.want, others, "%s, read %d", tc.name, i+1)
			for _, p := range c.sentTo(r.windowResources) {
				assert.Equal(t, "7", p["resource_ids"])
			}
			for _, p := range c.sentTo(r.pairEstimates) {
				assert.Equal(t, tenant.Default, p["tenant"])
			}
			for _, p := range c.sentTo(r.resourcesInUse) {
				assert.Equal(t, tenant.Default, p["tenant"])
				assert.EqualValues(t, maxResourcesInUse, p["max_resources"])
			}
		}
	}
}

// A lookup whose tenant's pairs are half of pairsFresh old answers from
// them and renews them in the background: it returns while the read runs.
func TestGetTraceRenewsInTheBackground(t *testing.T) {
	c := &traceConn{inUse: []string{`{"resource_id":7,"attributes":{}}`}}
	r := newClockedReader(c, ReaderConfig{})
	r.lookup(t, 0, 1)

	c.sent, c.hold = nil, make(chan struct{})
	r.clock = r.clock.Add(pairsFresh / 2)
	_, err := r.GetTrace(context.Background(), snapshotTraceIDs[0])
	require.NoError(t, err)
	assert.False(t, c.heldEnded.Load(), "the lookup returned once the pairs' read ended")
	close(c.hold)
	r.Wait()
	assert.True(t, c.heldEnded.Load())
	assert.Equal(t, []string{"pairs"}, c.others(r.Reader))
}

// A background read that fails is reported once, tried again after every,
// then twice as long after each failure in a row; lookups meanwhile read the
// trace's window. Its next good read is reported too.
func TestGetTraceRenewalBackoff(t *testing.T) {
	boom := errors.New("boom")
	c := &traceConn{inUse: []string{`{"resource_id":7,"attributes":{}}`}, pairsErr: boom}
	var mu sync.Mutex
	var reports []string
	r := newClockedReader(c, ReaderConfig{ReportRenewal: func(what, tn string, err error) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, fmt.Sprintf("%s of %s: %v", what, tn, err))
	}})
	every := pairsFresh / 2
	for i, step := range []struct {
		after   time.Duration
		ok      bool // the pairs' read succeeds from this step on
		want    []string
		reports []string
	}{
		{0, false, []string{"in use", "pairs", "window"}, []string{"skewed host pairs of default: reading the skewed host pairs: boom"}},
		{every - time.Nanosecond, false, []string{"window"}, nil},
		{time.Nanosecond, false, []string{"pairs", "window"}, nil}, // every after the first failure
		{2*every - time.Nanosecond, false, []string{"window"}, nil},
		{time.Nanosecond, false, []string{"pairs", "window"}, nil}, // twice every after the second
		{4 * every, true, []string{"pairs"}, []string{"skewed host pairs of default: <nil>"}},
		{every, false, []string{"pairs"}, nil}, // renewed again every, in the background
	} {
		if step.ok {
			c.pairsErr = nil
		}
		reports = nil
		_, others := r.lookup(t, step.after, i+1)
		assert.Equal(t, step.want, others, "read %d", i+1)
		assert.Equal(t, step.reports, reports, "read %d", i+1)
	}
}

func TestRenewBackoff(t *testing.T) {
	f := &refresher{every: 2 * time.Second}
	var got []time.Duration
	for n := 1; n <= 7; n++ {
		got = append(got, f.backoff(failures{n: n}))
	}
	s := time.Second
	assert.Equal(t, []time.Duration{2 * s, 4 * s, 8 * s, 16 * s, 32 * s, maxRenewBackoff, maxRenewBackoff}, got)
	f.every = 2 * time.Minute
	assert.Equal(t, 2*time.Minute, f.backoff(failures{n: 5}), "never shorter than every")
}

// Within the cap the reader sorts a trace's spans (by start, then ids) and
// keeps each once, from one statement; past it, it reads them again sorted
// by the engine and keeps the first MaxSpans.
func TestGetTraceSortsSpans(t *testing.T) {
	c := &traceConn{spans: []string{
		`{"timestamp":3,"ids":"0C00000000000001000000000000000A"}`,
		`{"timestamp":1,"ids":"0B0000000000000100000000000000AA"}`,
		`{"timestamp":3,"ids":"0C00000000000001000000000000000A"}`, // stored twice
		`{"timestamp":1,"ids":"0A000000000000010000000000000000"}`}}
	sent := func(q string) (n int) {
		for _, s := range c.sent {
			if s.sql == q {
				n++
			}
		}
		return n
	}
	r := NewReader(c, snapshotDB, ReaderConfig{})
	tr, err := r.GetTrace(context.Background(), snapshotTraceIDs[0])
	require.NoError(t, err)
	var ids []string
	for _, s := range tr.Spans {
		ids = append(ids, s.SpanID)
	}
	assert.Equal(t, []string{"0a00000000000001", "0b00000000000001", "0c00000000000001"}, ids)
	assert.False(t, tr.Truncated)
	assert.Equal(t, 1, sent(r.spans))
	assert.Zero(t, sent(r.spansOrdered))

	c.sent = nil
	r = NewReader(c, snapshotDB, ReaderConfig{MaxSpans: 3})
	tr, err = r.GetTrace(context.Background(), snapshotTraceIDs[0])
	require.NoError(t, err)
	assert.Equal(t, 1, sent(r.spansOrdered), "4 rows for a cap of 3: read again, sorted by the engine")
	assert.True(t, tr.Truncated)
	assert.Len(t, tr.Spans, 3)
}

// A trace's skewed pairs are found in the tenant's estimates: of each pair
// of two of its hosts, the latest in its window (LogWindow around its
// spans). Its window is read only when the reader kept the tenant's pairs
// without their estimates (too many) and a pair of two of its hosts was
// estimated in it.
func TestGetTraceSkewedPairs(t *testing.T) {
	pair := func(offset int64, samples int) []model.ClockPair {
		return []model.ClockPair{{A: "pay-1", B: "shop-1", OffsetNanos: offset, Samples: samples}}
	}
	for _, tc := range []struct {
		pair string
		want []model.ClockPair
		read bool
	}{
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":-10,"last_s":0,"at_s":[0,-10],"offsets_ns":[2,1],"samples":[20,10]}`,
			pair(2, 20), false},
		// Its window ends 5 min after its last span's end (1 ns): at 300 s.
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":300,"last_s":900,"at_s":[900,300,301],"offsets_ns":[3,1,2],"samples":[3,1,2]}`,
			pair(1, 1), false},
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":-900,"last_s":900,"at_s":[-900,900],"offsets_ns":[1,2],"samples":[1,2]}`,
			nil, false},
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":301,"last_s":900,"at_s":[301,900],"offsets_ns":[1,2],"samples":[1,2]}`,
			nil, false},
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":-900,"last_s":-301,"at_s":[-900,-301],"offsets_ns":[1,2],"samples":[1,2]}`,
			nil, false}, // before its first span − 5 min
		{`{"host_a":"pay-1","host_b":"db-1","first_s":0,"last_s":0,"at_s":[0],"offsets_ns":[1],"samples":[1]}`, nil, false},
		// Without the estimates, the first and last say whether to read.
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":-10,"last_s":0,"at_s":[],"offsets_ns":[],"samples":[]}`, nil, true},
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":-900,"last_s":900,"at_s":[],"offsets_ns":[],"samples":[]}`, nil, true},
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":301,"last_s":900,"at_s":[],"offsets_ns":[],"samples":[]}`, nil, false},
	} {
		c := &traceConn{pairs: []string{tc.pair}, inUse: []string{`{"resource_id":7,"attributes":{}}`}}
		r := NewReader(c, snapshotDB, ReaderConfig{})
		tr, err := r.GetTrace(context.Background(), snapshotTraceIDs[0])
		require.NoError(t, err)
		r.Wait()
		for _, p := range c.sentTo(r.pairEstimates) {
			assert.EqualValues(t, maxKnownEstimates, p["max_estimates"])
		}
		if !tc.read {
			assert.Equal(t, []string{"in use", "pairs"}, c.others(r), tc.pair)
			assert.Equal(t, tc.want, tr.SkewedPairs, tc.pair)
			continue
		}
		assert.Equal(t, []string{"in use", "pairs", "window"}, c.others(r), tc.pair)
		for _, p := range c.sentTo(r.window) {
			assert.Equal(t, "pay-1\nshop-1", p["hosts"])
		}
	}
}

// A reply whose arrays differ in length is an error: the window is read,
// and the tenant's pairs are read again pairsFresh/2 later.
func TestGetTraceSkewedPairsMalformed(t *testing.T) {
	c := &traceConn{pairs: []string{`{"host_a":"pay-1","host_b":"shop-1","first_s":0,"last_s":0,"at_s":[0],"offsets_ns":[],"samples":[1]}`},
		inUse: []string{`{"resource_id":7,"attributes":{}}`}}
	r := newClockedReader(c, ReaderConfig{})
	for i, step := range []struct {
		after time.Duration
		want  []string
	}{{0, []string{"in use", "pairs", "window"}}, {0, []string{"window"}}, {pairsFresh / 2, []string{"pairs", "window"}}} {
		_, others := r.lookup(t, step.after, i+1)
		assert.Equal(t, step.want, others, "read %d", i+1)
	}
}

func TestSplitIDs(t *testing.T) {
	for _, c := range []struct{ ids, span, parent string }{
		{"0A0B0C0D0E0F10110000000000000000", "0a0b0c0d0e0f1011", ""},
		{"0A0B0C0D0E0F1011FFEEDDCCBBAA9988", "0a0b0c0d0e0f1011", "ffeeddccbbaa9988"},
	} {
		span, parent := splitIDs(c.ids)
		assert.Equal(t, c.span, span, c.ids)
		assert.Equal(t, c.parent, parent, c.ids)
	}
}

package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// traceConn answers a trace's spans with spans, or else two spans of
// resource 7, on hosts shop-1 and pay-1 at 1 ns, its window with the
// resource when asked for it, and the tenant's skewed pairs with pairs.
type traceConn struct {
	recordingConn
	pairs, spans []string
}

func (c *traceConn) Query(ctx context.Context, query string, params Params, row func([]byte) error) error {
	c.record(query, params)
	switch {
	case strings.Contains(query, "FROM "+snapshotDB+".spans"):
		spans := c.spans
		if spans == nil {
			spans = []string{`{"timestamp":1,"ids":"0A0B0C0D0E0F10110000000000000000","host":"shop-1","resource_id":7}`,
				`{"timestamp":1,"ids":"1A0B0C0D0E0F10110A0B0C0D0E0F1011","host":"pay-1","resource_id":7}`}
		}
		for _, b := range spans {
			if err := row([]byte(b)); err != nil {
				return err
			}
		}
	case params["resource_ids"] != nil:
		return row([]byte(`{"part":4,"resource_id":7,"attributes":{"host.name":"shop-1"}}`))
	case params["max_pairs"] != nil:
		for _, b := range c.pairs {
			if err := row([]byte(b)); err != nil {
				return err
			}
		}
	}
	return nil
}

// others is what c sent besides a trace's spans and facts.
func (c *traceConn) others(r *Reader) []sentQuery {
	var out []sentQuery
	for _, s := range c.sent {
		if s.sql != r.spans && s.sql != r.facts {
			out = append(out, s)
		}
	}
	return out
}

// A trace by id is its spans and, beside them, its lines, findings and
// offsets; then its window in one statement that reads the spans' resources
// too, while the reader has not cached them. Once it has, the window is read
// only when the tenant's skewed pairs, read at most pairsFresh ago, have two
// of its hosts in it.
func TestGetTraceStatements(t *testing.T) {
	c := &traceConn{}
	r := NewReader(c, snapshotDB, ReaderConfig{})
	clock := time.Unix(1e9, 0)
	r.now = func() time.Time { return clock }
	for i, want := range []string{"window and resources", "the tenant's pairs", "", "the tenant's pairs"} {
		if i == 3 {
			clock = clock.Add(pairsFresh)
		}
		c.sent = nil
		tr, err := r.GetTrace(context.Background(), snapshotTraceIDs[0])
		require.NoError(t, err)
		require.Len(t, tr.Spans, 2)
		assert.Equal(t, "0a0b0c0d0e0f1011", tr.Spans[0].SpanID)
		assert.Equal(t, map[string]string{"host.name": "shop-1"}, tr.Spans[0].Resource, "read %d", i+1)
		// The window's statement follows the spans', maybe before the facts'.
		others := c.others(r)
		if want == "" {
			assert.Empty(t, others, "read %d", i+1)
			continue
		}
		require.Len(t, others, 1, "read %d", i+1)
		switch want {
		case "window and resources":
			assert.Contains(t, others[0].sql, "FROM "+snapshotDB+".clock_pairs")
			assert.Contains(t, others[0].sql, "FROM "+snapshotDB+".resources")
			assert.Equal(t, "7", others[0].params["resource_ids"])
		case "the tenant's pairs":
			assert.Equal(t, r.pairEstimates, others[0].sql, "read %d", i+1)
			assert.Equal(t, tenant.Default, others[0].params["tenant"])
		}
	}
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
		c := &traceConn{pairs: []string{tc.pair}}
		r := NewReader(c, snapshotDB, ReaderConfig{})
		_, err := r.GetTrace(context.Background(), snapshotTraceIDs[0]) // caches the resources
		require.NoError(t, err)
		c.sent = nil
		tr, err := r.GetTrace(context.Background(), snapshotTraceIDs[0])
		require.NoError(t, err)
		others := c.others(r)
		require.NotEmpty(t, others, tc.pair)
		assert.Equal(t, r.pairEstimates, others[0].sql)
		assert.EqualValues(t, maxKnownEstimates, others[0].params["max_estimates"])
		if !tc.read {
			assert.Len(t, others, 1, tc.pair)
			assert.Equal(t, tc.want, tr.SkewedPairs, tc.pair)
			continue
		}
		require.Len(t, others, 2, tc.pair)
		assert.Equal(t, r.window, others[1].sql)
		assert.Equal(t, "pay-1\nshop-1", others[1].params["hosts"])
	}
}

// A reply whose arrays differ in length is an error, and the window is read.
func TestGetTraceSkewedPairsMalformed(t *testing.T) {
	c := &traceConn{pairs: []string{`{"host_a":"pay-1","host_b":"shop-1","first_s":0,"last_s":0,"at_s":[0],"offsets_ns":[],"samples":[1]}`}}
	r := NewReader(c, snapshotDB, ReaderConfig{})
	for range 2 {
		_, err := r.GetTrace(context.Background(), snapshotTraceIDs[0])
		require.NoError(t, err)
	}
	others := c.others(r)
	require.Len(t, others, 3, "window and resources; the tenant's pairs; the window")
	assert.Equal(t, r.window, others[2].sql)
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

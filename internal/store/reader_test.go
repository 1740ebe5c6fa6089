package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/tenant"
)

// traceConn answers a trace's spans with two spans of resource 7, on hosts
// shop-1 and pay-1 at 1 ns, its window with the resource when asked for it,
// and the tenant's skewed pairs with pairs.
type traceConn struct {
	recordingConn
	pairs []string
}

func (c *traceConn) Query(ctx context.Context, query string, params Params, row func([]byte) error) error {
	c.record(query, params)
	switch {
	case strings.Contains(query, "FROM "+snapshotDB+".spans"):
		for _, b := range []string{`{"timestamp":1,"ids":"0A0B0C0D0E0F10110000000000000000","host":"shop-1","resource_id":7}`,
			`{"timestamp":1,"ids":"1A0B0C0D0E0F10110A0B0C0D0E0F1011","host":"pay-1","resource_id":7}`} {
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
			assert.Equal(t, r.pairRanges, others[0].sql, "read %d", i+1)
			assert.Equal(t, tenant.Default, others[0].params["tenant"])
		}
	}
}

// The window of a trace is read when a skewed pair of two of its hosts was
// estimated in it (LogWindow around its spans), and only then.
func TestGetTraceReadsTheWindowOfItsSkewedPairs(t *testing.T) {
	for _, tc := range []struct {
		pair string
		read bool
	}{
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":-10,"last_s":0}`, true},
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":300,"last_s":900}`, true}, // to its last span's end + 5 min
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":301,"last_s":900}`, false},
		{`{"host_a":"pay-1","host_b":"shop-1","first_s":-900,"last_s":-301}`, false}, // before its first span − 5 min
		{`{"host_a":"pay-1","host_b":"db-1","first_s":0,"last_s":0}`, false},
	} {
		c := &traceConn{pairs: []string{tc.pair}}
		r := NewReader(c, snapshotDB, ReaderConfig{})
		_, err := r.GetTrace(context.Background(), snapshotTraceIDs[0]) // caches the resources
		require.NoError(t, err)
		c.sent = nil
		_, err = r.GetTrace(context.Background(), snapshotTraceIDs[0])
		require.NoError(t, err)
		others := c.others(r)
		require.NotEmpty(t, others, tc.pair)
		assert.Equal(t, r.pairRanges, others[0].sql)
		if !tc.read {
			assert.Len(t, others, 1, tc.pair)
			continue
		}
		require.Len(t, others, 2, tc.pair)
		assert.Equal(t, r.window, others[1].sql)
		assert.Equal(t, "pay-1\nshop-1", others[1].params["hosts"])
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

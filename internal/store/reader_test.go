package store

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// traceConn answers a trace's spans with one span of resource 7, and its
// window with the resource when asked for it.
type traceConn struct{ recordingConn }

func (c *traceConn) Query(ctx context.Context, query string, params Params, row func([]byte) error) error {
	c.record(query, params)
	if strings.Contains(query, "FROM "+snapshotDB+".spans") {
		return row([]byte(`{"timestamp":1,"ids":"0A0B0C0D0E0F10110000000000000000","resource_id":7}`))
	}
	if _, ok := params["resource_ids"]; ok {
		return row([]byte(`{"part":4,"resource_id":7,"attributes":{"host.name":"shop-1"}}`))
	}
	return nil
}

// A trace by id is its spans and, beside them, its lines, findings and
// offsets; then its window in one statement that reads the spans' resources
// too while the reader has not cached them.
func TestGetTraceStatements(t *testing.T) {
	c := &traceConn{}
	r := NewReader(c, snapshotDB, ReaderConfig{})
	for i, withResources := range []bool{true, false} {
		c.sent = nil
		tr, err := r.GetTrace(context.Background(), snapshotTraceIDs[0])
		require.NoError(t, err)
		require.Len(t, tr.Spans, 1)
		assert.Equal(t, "0a0b0c0d0e0f1011", tr.Spans[0].SpanID)
		assert.Equal(t, map[string]string{"host.name": "shop-1"}, tr.Spans[0].Resource, "read %d", i+1)
		require.Len(t, c.sent, 3, "read %d", i+1)
		// The window's statement follows the spans', maybe before the facts'.
		var window []sentQuery
		for _, s := range c.sent {
			if s.sql != r.spans && s.sql != r.facts {
				window = append(window, s)
			}
		}
		require.Len(t, window, 1, "read %d", i+1)
		assert.Contains(t, window[0].sql, "FROM "+snapshotDB+".clock_pairs")
		assert.Equal(t, withResources, strings.Contains(window[0].sql, "FROM "+snapshotDB+".resources"), "read %d", i+1)
		assert.Equal(t, withResources, window[0].params["resource_ids"] == "7", "read %d", i+1)
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

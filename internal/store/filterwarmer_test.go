package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// partsConn lists parts of spans, newest first, each with 10 bytes of
// filters, then those of other tables ("table/name"), and fails the warm
// statement of each part in failing once.
type partsConn struct {
	recordingConn
	parts   []string
	others  []string
	failing map[string]bool
	listErr error
}

func (c *partsConn) Query(_ context.Context, query string, params Params, row func([]byte) error) error {
	c.record(query, params)
	if part, ok := params["part"].(string); ok {
		if c.failing[part] {
			delete(c.failing, part)
			return errors.New("engine busy")
		}
		return row([]byte(`{"rows":0}`))
	}
	if c.listErr != nil {
		return c.listErr
	}
	for _, p := range c.parts {
		if err := row(fmt.Appendf(nil, `{"table":"spans","name":%q,"filter_bytes":10}`, p)); err != nil {
			return err
		}
	}
	for _, p := range c.others {
		table, name, _ := strings.Cut(p, "/")
		if err := row(fmt.Appendf(nil, `{"table":%q,"name":%q,"filter_bytes":10}`, table, name)); err != nil {
			return err
		}
	}
	return nil
}

// warmed are the parts c was asked to warm since the last call.
func (c *partsConn) warmed() []string {
	var out []string
	for _, q := range c.sent {
		if p, ok := q.params["part"].(string); ok {
			out = append(out, p)
		}
	}
	c.sent = nil
	return out
}

func TestFilterWarmerReadsEachPartOnce(t *testing.T) {
	ctx := context.Background()
	c := &partsConn{parts: []string{"p3", "p2", "p1"}, failing: map[string]bool{"p2": true}}
	w := NewFilterWarmer(c, snapshotDB)
	w.Budget = 25 // two parts' filters

	n, err := w.Warm(ctx)
	require.ErrorContains(t, err, "part p2")
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"p3", "p2"}, c.warmed(), "within the budget, newest first")

	n, err = w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"p2"}, c.warmed(), "the failed part again; p1 was past the budget")

	c.parts = []string{"p4", "p3", "p2"} // p1 merged away, p4 new
	n, err = w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"p4"}, c.warmed())
}

// TestFilterWarmerTables: a part of trace_summaries is read with its own
// statement, apart from a part of spans of the same name; a table the warmer
// has no statement for is an error, not a part skipped in silence.
func TestFilterWarmerTables(t *testing.T) {
	ctx := context.Background()
	c := &partsConn{parts: []string{"p1"}, others: []string{"trace_summaries/p1"}}
	w := NewFilterWarmer(c, snapshotDB)
	n, err := w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	require.Len(t, c.sent, 3)
	assert.Contains(t, c.sent[1].sql, snapshotDB+".spans")
	assert.Contains(t, c.sent[2].sql, snapshotDB+".trace_summaries")
	assert.Contains(t, c.sent[2].sql, "trace_id = ")
	assert.Equal(t, []string{"p1", "p1"}, c.warmed())

	n, err = w.Warm(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "both read once")

	c.others = append(c.others, "logs/p9")
	_, err = w.Warm(ctx)
	require.ErrorContains(t, err, `table "logs"`)
}

func TestFilterWarmerRunReportsUntilCancelled(t *testing.T) {
	c := &partsConn{listErr: errors.New("no server")}
	w := NewFilterWarmer(c, snapshotDB)
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan error)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, time.Millisecond, func(_ int, err error) { reports <- err })
	}()
	require.ErrorContains(t, <-reports, "no server")
	require.ErrorContains(t, <-reports, "no server", "and again the next pass")
	cancel()
	select {
	case <-reports: // a pass that ended before the cancel
	case <-done:
	}
	<-done
}

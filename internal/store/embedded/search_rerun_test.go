package embedded

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/store"
)

// searchCounter counts the trace searches run through it.
type searchCounter struct {
	store.Conn
	searches atomic.Int64
}

func (c *searchCounter) Query(ctx context.Context, query string, p store.Params, row func([]byte) error) error {
	if strings.Contains(query, "passing_rows") {
		c.searches.Add(1)
	}
	return c.Conn.Query(ctx, query, p, row)
}

// A search takes a bounded number of candidate traces, newest first, then
// checks each whole. Candidates that fail the exact check can crowd out
// older traces that pass: the search then runs again with many more. When
// there were fewer candidates than it asked for, none included, the window
// held no more and one run answers.
func TestSearchRerunsOnlyWhenCandidatesRanOut(t *testing.T) {
	ctx := context.Background()
	const db = "ts_search_rerun"
	freshDatabase(t, db)
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	// span makes a batch of one span of trace id, starting at offset from
	// base.
	span := func(id byte, sid byte, parent bool, offset, dur time.Duration, order string) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "shop")
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID{0x5e, 15: id})
		s.SetSpanID(spanID(sid))
		if parent {
			s.SetParentSpanID(spanID(1))
		}
		s.SetName("GET /")
		start := base.Add(offset)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(dur)))
		if order != "" {
			s.Attributes().PutStr("app.order.id", order)
		}
		return td
	}
	write := func(td ptrace.Traces) {
		_, err := w.WriteTraces(ctx, td)
		require.NoError(t, err)
	}
	// Two slow traces (2 s), the oldest and the newest; between them 40
	// quick ones (10 ms) whose child span came in a later insert: that row
	// has no root, so it may belong to a slow trace and is a candidate of
	// minDuration 1s, which the whole trace then fails.
	write(span(1, 1, false, 0, 2*time.Second, "order-1"))
	for i := range 40 {
		id := byte(10 + i)
		write(span(id, 1, false, time.Duration(i+1)*time.Second, 10*time.Millisecond, ""))
		write(span(id, 2, true, time.Duration(i+1)*time.Second+time.Millisecond, 5*time.Millisecond, ""))
	}
	write(span(2, 1, false, 50*time.Second, 2*time.Second, "order-2"))

	c := &searchCounter{Conn: conn}
	r := store.NewReader(c, db, store.ReaderConfig{})
	search := func(f store.TracesFilter) (ids []string, runs int64) {
		t.Helper()
		f.Start, f.End = base.UnixNano(), base.Add(time.Minute).UnixNano()
		before := c.searches.Load()
		got, err := r.SearchTraces(ctx, f)
		require.NoError(t, err)
		for _, s := range got {
			ids = append(ids, s.TraceID)
		}
		return ids, c.searches.Load() - before
	}
	slow := []string{pcommon.TraceID{0x5e, 15: 2}.String(), pcommon.TraceID{0x5e, 15: 1}.String()}

	ids, runs := search(store.TracesFilter{MinDuration: time.Second, Limit: 2})
	assert.Equal(t, slow, ids, "the older slow trace is found behind 40 quick candidates")
	assert.EqualValues(t, 2, runs, "a short page of as many candidates as asked for: once more with more")

	ids, runs = search(store.TracesFilter{MinDuration: time.Second, Limit: 50})
	assert.Equal(t, slow, ids)
	assert.EqualValues(t, 1, runs, "42 candidate rows of the 116 asked for: the window held no more")

	ids, runs = search(store.TracesFilter{Attributes: []store.AttributeFilter{{Key: "app.order.id", Value: "order-1"}}, Limit: 20})
	assert.Equal(t, slow[1:], ids)
	assert.EqualValues(t, 1, runs, "one candidate: one run")

	ids, runs = search(store.TracesFilter{Attributes: []store.AttributeFilter{{Key: "app.order.id", Value: "order-3"}}, Limit: 20})
	assert.Empty(t, ids)
	assert.EqualValues(t, 1, runs, "no candidate: the window held no more")
}

package embedded

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
)

// count runs a query returning one row with a column n.
func count(t *testing.T, query string, params store.Params) uint64 {
	t.Helper()
	var n uint64
	require.NoError(t, conn.Query(context.Background(), query, params, func(b []byte) error {
		var row struct{ N uint64 }
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		n = row.N
		return nil
	}))
	return n
}

// A batch written again (as the exporter's retry does after a failure whose
// outcome it could not know) is stored once: in the tables themselves, not
// only in what the reader returns, and in the per-trace index and resources
// written with the spans. Different batches are all stored.
func TestRetriedInsertsAreIdempotent(t *testing.T) {
	ctx := context.Background()
	const idb = "ts_idempotent"
	require.NoError(t, conn.Exec(ctx, "DROP DATABASE IF EXISTS "+idb, nil))
	require.NoError(t, store.ApplySchema(ctx, conn, idb))
	w := store.NewWriter(conn, idb)
	start := time.Now().Add(-time.Minute)

	traces := func(first, n byte) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "shop")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := first; i < first+n; i++ {
			s := spans.AppendEmpty()
			s.SetTraceID(traceID(0xa0))
			s.SetSpanID(spanID(i))
			s.SetName("GET /cart")
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i) * time.Millisecond)))
		}
		return td
	}
	for range 3 {
		st, err := w.WriteTraces(ctx, traces(1, 5))
		require.NoError(t, err)
		require.Equal(t, 5, st.Written)
	}
	_, err := w.WriteTraces(ctx, traces(6, 2))
	require.NoError(t, err)

	tid := store.Params{"id": traceID(0xa0).String()}
	assert.EqualValues(t, 7, count(t, "SELECT count() AS n FROM "+idb+".spans WHERE trace_id = {id:String}", tid))
	assert.EqualValues(t, 7, count(t, "SELECT sum(span_count) AS n FROM "+idb+".trace_summaries WHERE trace_id = {id:String}", tid))
	assert.EqualValues(t, 1, count(t, "SELECT count() AS n FROM "+idb+".resources", nil))

	ld := plog.NewLogs()
	rec := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	rec.SetTimestamp(pcommon.NewTimestampFromTime(start))
	rec.Body().SetStr("payment declined")
	rec.SetTraceID(traceID(0xa0))
	for range 2 {
		_, err := w.WriteLogs(ctx, ld)
		require.NoError(t, err)
	}
	assert.EqualValues(t, 1, count(t, "SELECT count() AS n FROM "+idb+".logs WHERE trace_id = {id:String}", tid))

	findings := []model.Finding{{TraceID: traceID(0xa0).String(), TimeUnixNano: uint64(start.UnixNano()),
		Kind: "slowest_hop", Service: "shop", Subject: "shop GET /cart", SpanIDs: []string{spanID(1).String()}, Value: 5}}
	clocks := []model.ClockOffset{{TraceID: traceID(0xa0).String(), TimeUnixNano: uint64(start.UnixNano()), Host: "pay-1", OffsetNanos: 3e8, Source: "estimate"}}
	for range 2 {
		require.NoError(t, w.WriteFindings(ctx, findings))
		require.NoError(t, w.WriteClockOffsets(ctx, clocks))
	}
	assert.EqualValues(t, 1, count(t, "SELECT count() AS n FROM "+idb+".trace_facts WHERE trace_id = {id:String} AND fact = 'finding'", tid))
	assert.EqualValues(t, 1, count(t, "SELECT count() AS n FROM "+idb+".trace_facts WHERE trace_id = {id:String} AND fact = 'clock_offset'", tid))
}

// A kept trace handed on again inside another batch (a sampler read its
// spans again after a crash, in distributed mode) makes new rows, which
// every read returns once: the trace's spans, its findings and offsets, and
// its summary in a search.
func TestTraceStoredAgainInAnotherBatchIsReadOnce(t *testing.T) {
	ctx := context.Background()
	const idb = "ts_again"
	require.NoError(t, conn.Exec(ctx, "DROP DATABASE IF EXISTS "+idb, nil))
	require.NoError(t, store.ApplySchema(ctx, conn, idb))
	w := store.NewWriter(conn, idb)
	start := time.Now().Add(-time.Minute)
	batch := func(ids ...byte) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "shop")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for _, id := range ids {
			for i := byte(1); i <= 3; i++ {
				s := spans.AppendEmpty()
				s.SetTraceID(traceID(id))
				s.SetSpanID(spanID(i))
				if i > 1 {
					s.SetParentSpanID(spanID(1))
				}
				s.SetName("GET /cart")
				s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
				s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(10-i) * time.Millisecond)))
			}
		}
		return td
	}
	findings := []model.Finding{{TraceID: traceID(0xb1).String(), TimeUnixNano: uint64(start.UnixNano()),
		Kind: "slowest_hop", Service: "shop", Subject: "shop GET /cart", SpanIDs: []string{spanID(1).String()}, Value: 5}}
	_, err := w.WriteTraces(ctx, batch(0xb1))
	require.NoError(t, err)
	require.NoError(t, w.WriteFindings(ctx, findings))
	_, err = w.WriteTraces(ctx, batch(0xb1, 0xb2)) // another batch: other rows, other tokens
	require.NoError(t, err)
	require.NoError(t, w.WriteFindings(ctx, append(findings, model.Finding{TraceID: traceID(0xb2).String(),
		TimeUnixNano: uint64(start.UnixNano()), Kind: "slowest_hop", Service: "shop", Subject: "shop GET /cart",
		SpanIDs: []string{spanID(1).String()}, Value: 5})))
	tid := store.Params{"id": traceID(0xb1).String()}
	require.EqualValues(t, 6, count(t, "SELECT count() AS n FROM "+idb+".spans WHERE trace_id = {id:String}", tid),
		"stored twice, as the test means")

	r := store.NewReader(conn, idb, store.ReaderConfig{})
	tr, err := r.GetTrace(ctx, traceID(0xb1).String())
	require.NoError(t, err)
	assert.Len(t, tr.Spans, 3)
	assert.Len(t, tr.Findings, 1)
	found, err := r.SearchTraces(ctx, store.TracesFilter{Service: "shop", Start: start.Add(-time.Hour).UnixNano(),
		End: time.Now().UnixNano(), Limit: 10})
	require.NoError(t, err)
	require.Len(t, found, 2)
	for _, s := range found {
		assert.EqualValues(t, 3, s.SpanCount, s.TraceID)
	}
}

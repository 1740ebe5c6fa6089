package embedded

import (
	"context"
	"fmt"
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

// A backfill (a file_log reading old files, a client with a bad clock) sends
// batches whose rows fall on many days. The engine refuses an insert into
// more than 100 day partitions; the writer must split such a batch instead
// of failing it, for logs, spans and the rows written with spans.
func TestBackfillOverManyDaysIsStored(t *testing.T) {
	ctx := context.Background()
	const bdb = "ts_backfill"
	freshDatabase(t, bdb)
	require.NoError(t, store.ApplySchema(ctx, conn, bdb))
	w := store.NewWriter(conn, bdb)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const days = 150 // a push of 150 lines, one line a day back

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "backfill")
	recs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for d := range days {
		r := recs.AppendEmpty()
		r.SetTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Duration(d) * 24 * time.Hour)))
		r.Body().SetStr(fmt.Sprintf("line %d", d))
	}
	st, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	assert.Equal(t, days, st.Written)
	assert.Equal(t, uint64(days), count(t, "SELECT count() AS n FROM "+bdb+".logs", nil))
	assert.Equal(t, uint64(days), count(t, "SELECT uniqExact(toDate(timestamp)) AS n FROM "+bdb+".logs", nil))

	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "backfill")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	var findings []model.Finding
	var offsets []model.ClockOffset
	for d := range days {
		start := now.Add(-time.Duration(d) * 24 * time.Hour)
		id := traceID(0xaa)
		id[0], id[1] = byte(d>>8), byte(d)
		for i := range 2 { // a root and a child, one trace a day
			s := spans.AppendEmpty()
			s.SetTraceID(id)
			s.SetSpanID(spanID(byte(i + 1)))
			if i == 1 {
				s.SetParentSpanID(spanID(1))
			}
			s.SetName(fmt.Sprintf("op %d", i))
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Millisecond)))
		}
		findings = append(findings, model.Finding{TraceID: id.String(), TimeUnixNano: uint64(start.UnixNano()),
			Kind: "slowest_hop", Service: "backfill", Subject: "backfill op 0", Value: 1})
		offsets = append(offsets, model.ClockOffset{TraceID: id.String(), TimeUnixNano: uint64(start.UnixNano()),
			Host: "h", Source: "estimate"})
	}
	st, err = w.WriteTraces(ctx, td)
	require.NoError(t, err)
	assert.Equal(t, 2*days, st.Written)
	require.NoError(t, w.WriteFindings(ctx, findings))
	require.NoError(t, w.WriteClockOffsets(ctx, offsets))
	for table, want := range map[string]uint64{"spans": 2 * days, "trace_summaries": days, "trace_facts": 2 * days} {
		assert.Equal(t, want, count(t, "SELECT count() AS n FROM "+bdb+"."+table, nil), table)
	}
	// One summary a trace: a trace's spans are not split between inserts.
	assert.Equal(t, uint64(days), count(t, "SELECT uniqExact(trace_id) AS n FROM "+bdb+".trace_summaries", nil))
}

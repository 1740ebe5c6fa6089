package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
)

// Findings and clock offsets appended to a batch of kept spans come back
// from it as they were, and the writer stores them in their own tables, not
// as spans.
func TestAnalysisTravelsWithTheSpans(t *testing.T) {
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	findings := []model.Finding{
		{TraceID: trace, TimeUnixNano: 1796010663450975897, Kind: "retry_fanout", Service: "frontend",
			Subject: "frontend → payments POST /charge", SpanIDs: []string{"00f067aa0ba902b7", "00f067aa0ba902b8"},
			Value: 27, Summary: "3 attempts at each of 3 layers"},
		{TraceID: trace, TimeUnixNano: 1796010663450975897, Kind: "slowest_hop", Service: "db", Value: 0.25},
	}
	clocks := []model.ClockOffset{{TraceID: trace, TimeUnixNano: 1796010663450975897, Host: "pay-1", OffsetNanos: -300_000_000, Source: "estimate"}}

	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "frontend")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(pcommon.TraceID{0x4b, 0xf9})
	s.SetSpanID(pcommon.SpanID{1})
	s.SetStartTimestamp(1796010663450975897)
	AppendAnalysis(td, findings, clocks)
	AppendAnalysis(td, nil, nil)
	require.Equal(t, 2, td.ResourceSpans().Len(), "one resource for the analysis, none when there is nothing")

	gotF, gotC := AnalysisOf(td)
	assert.Equal(t, findings, gotF)
	assert.Equal(t, clocks, gotC)

	c := &captureConn{}
	st, err := NewWriter(c, "db").WriteTraces(context.Background(), td)
	require.NoError(t, err)
	assert.Equal(t, WriteStats{Written: 1}, st, "the analysis rows are not spans")
	require.Len(t, c.inserts["db.spans"], 1)
	assert.Equal(t, 1, blockRows(c.inserts["db.spans"][0]))
	require.Len(t, c.inserts["db.findings"], 1)
	assert.Equal(t, 2, blockRows(c.inserts["db.findings"][0]))
	require.Len(t, c.inserts["db.trace_clock"], 1)
	assert.Equal(t, 1, blockRows(c.inserts["db.trace_clock"][0]))

	// A batch of nothing but findings (their trace's spans went earlier).
	only := ptrace.NewTraces()
	AppendAnalysis(only, findings[:1], nil)
	c = &captureConn{}
	st, err = NewWriter(c, "db").WriteTraces(context.Background(), only)
	require.NoError(t, err)
	assert.Zero(t, st.Written)
	assert.Empty(t, c.inserts["db.spans"])
	require.Len(t, c.inserts["db.findings"], 1)
}

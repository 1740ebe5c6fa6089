package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// Findings and clock offsets appended to a batch of kept spans come back
// from it as they were, and the writer stores them in their own tables, not
// as spans.
func TestAnalysisTravelsWithTheSpans(t *testing.T) {
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	findings := []model.Finding{
		{TraceID: trace, TimeUnixNano: 1796010663450975897, Kind: "retry_fanout", Service: "frontend",
			Subject: "frontend → payments POST /charge", SpanIDs: []string{"00f067aa0ba902b7", "00f067aa0ba902b8"},
			Value: 27, Summary: "3 attempts at each of 3 layers", Tenant: "acme"},
		{TraceID: trace, TimeUnixNano: 1796010663450975897, Kind: "slowest_hop", Service: "db", Value: 0.25},
	}
	clocks := []model.ClockOffset{
		{TraceID: trace, TimeUnixNano: 1796010663450975897, Host: "pay-1", OffsetNanos: -300_000_000, Source: "estimate"},
		{TraceID: trace, TimeUnixNano: 1796010663450975897, Host: "pay-1", OffsetNanos: 5, Source: "estimate", Tenant: "acme"},
	}
	red := []model.RED{
		{TimeUnixNano: 1796010660000000000, Service: "cat", Operation: "GET /cat", Instance: "cat-4",
			Dimensions: map[string]string{"service.version": "1.2"}, Requests: 40, Errors: 16,
			Latency: map[int32]uint64{440: 24, 518: 16}, ErrorLatency: map[int32]uint64{518: 16}, Tenant: "globex"},
		{TimeUnixNano: 1796010670000000000, Service: "cat", Dimensions: map[string]string{}, Latency: map[int32]uint64{},
			ErrorLatency: map[int32]uint64{}},
	}

	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "frontend")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(pcommon.TraceID{0x4b, 0xf9})
	s.SetSpanID(pcommon.SpanID{1})
	s.SetStartTimestamp(1796010663450975897)
	pairs := []model.ClockPair{{TimeUnixNano: 1796010660000000000, A: "a", B: "b", OffsetNanos: 7, Samples: 3, Tenant: "acme"},
		{TimeUnixNano: 1796010660000000000, A: "a", B: "b", OffsetNanos: 8, Samples: 4}}
	AppendAnalysis(td, Analysis{Findings: findings, Clocks: clocks, RED: red, Pairs: pairs})
	AppendAnalysis(td, Analysis{})
	require.Equal(t, 2, td.ResourceSpans().Len(), "one resource for the analysis, none when there is nothing")

	assert.Equal(t, Analysis{Findings: findings, Clocks: clocks, RED: red, Pairs: pairs}, AnalysisOf(td))

	c := &captureConn{}
	st, err := NewWriter(c, "db").WriteTraces(context.Background(), td)
	require.NoError(t, err)
	assert.Equal(t, WriteStats{Written: 1}, st, "the analysis rows are not spans")
	require.Len(t, c.inserts["db.spans"], 1)
	assert.Equal(t, 1, blockRows(c.inserts["db.spans"][0]))
	require.Len(t, c.inserts["db.trace_facts"], 1, "findings and clock offsets in one insert")
	facts := decodeNative(t, c.inserts["db.trace_facts"][0])
	require.Len(t, facts, 4)
	for i, want := range []string{"1", "1", "2", "2"} { // factFinding, factClockOffset
		assert.Equal(t, json.Number(want), facts[i]["fact"], "row %d", i)
	}
	assert.Equal(t, findings[0].Kind, facts[0]["kind"], "a column: findings across traces read it")
	var f factFields
	require.NoError(t, json.Unmarshal([]byte(facts[0]["fields"].(string)), &f))
	assert.Equal(t, findings[0].Kind, f.Kind)
	assert.Equal(t, findings[0].Summary, f.Summary)
	require.NoError(t, json.Unmarshal([]byte(facts[2]["fields"].(string)), &f))
	assert.Equal(t, clocks[0].Host, f.Host)
	assert.EqualValues(t, clocks[0].OffsetNanos, f.OffsetNs)
	require.Len(t, c.inserts["db.red"], 1)
	assert.Equal(t, 2, blockRows(c.inserts["db.red"][0]))

	// A batch of nothing but findings (their trace's spans went earlier).
	only := ptrace.NewTraces()
	AppendAnalysis(only, Analysis{Findings: findings[:1]})
	c = &captureConn{}
	st, err = NewWriter(c, "db").WriteTraces(context.Background(), only)
	require.NoError(t, err)
	assert.Zero(t, st.Written)
	assert.Empty(t, c.inserts["db.spans"])
	require.Len(t, c.inserts["db.trace_facts"], 1)
}

// The default tenant travels as no attribute at all, and comes back as
// none (the Tenant fields' default).
func TestAnalysisOfTheDefaultTenant(t *testing.T) {
	td := ptrace.NewTraces()
	AppendAnalysis(td, Analysis{Findings: []model.Finding{{Kind: "k", Tenant: tenant.Default}, {Kind: "k"}}})
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		_, ok := spans.At(i).Attributes().Get(attrTenant)
		assert.False(t, ok)
	}
	assert.Equal(t, []model.Finding{{Kind: "k"}, {Kind: "k"}}, AnalysisOf(td).Findings)
}

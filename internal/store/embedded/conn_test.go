package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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

// chDB opens one data directory per process, so the package shares one store.
var conn *Conn

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tracesift-chdb-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	conn, err = Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	conn.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

const db = "ts_test"

func traceID(b byte) pcommon.TraceID {
	var id pcommon.TraceID
	for i := range id {
		id[i] = b
	}
	return id
}

func spanID(b byte) pcommon.SpanID {
	var id pcommon.SpanID
	for i := range id {
		id[i] = b
	}
	return id
}

// The engine's statistics are off for every statement of the session
// (store.SessionSettings).
func TestSessionSettings(t *testing.T) {
	ctx := context.Background()
	set, err := store.SessionSettings(ctx, conn)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"use_statistics": "0"}, set, "this engine has the setting")
	var got struct {
		Value string `json:"value"`
	}
	require.NoError(t, conn.Query(ctx, "SELECT value FROM system.settings WHERE name = 'use_statistics'", nil,
		func(row []byte) error { return json.Unmarshal(row, &got) }))
	assert.Equal(t, "0", got.Value)
}

func TestSchemaAppliesTwice(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	require.NoError(t, store.ApplySchema(ctx, conn, db))
}

func TestWriteAndReadTrace(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{LogWindow: time.Minute})

	base := time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	rs.Resource().Attributes().PutStr("host.name", "node-1")
	ss := rs.ScopeSpans().AppendEmpty()
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(traceID(0xab))
	root.SetSpanID(spanID(1))
	root.SetName("GET /checkout")
	root.SetKind(ptrace.SpanKindServer)
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(base))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(250 * time.Millisecond)))
	root.Status().SetCode(ptrace.StatusCodeError)
	root.Status().SetMessage("it's broken")
	root.Attributes().PutInt("http.response.status_code", 500)
	ev := root.Events().AppendEmpty()
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.type", "java.lang.IllegalStateException")
	child := ss.Spans().AppendEmpty()
	child.SetTraceID(traceID(0xab))
	child.SetSpanID(spanID(2))
	child.SetParentSpanID(spanID(1))
	child.SetName("SELECT orders")
	child.SetKind(ptrace.SpanKindClient)
	child.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(10 * time.Millisecond)))
	child.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(20 * time.Millisecond)))
	bad := ss.Spans().AppendEmpty() // no ids: skipped whole
	bad.SetName("broken")

	st, err := w.WriteTraces(ctx, td)
	require.NoError(t, err)
	assert.Equal(t, store.WriteStats{Written: 2, Invalid: 1}, st)

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "checkout")
	recs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i, msg := range []string{"second", "first"} {
		lr := recs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(2-i) * time.Millisecond)))
		lr.Body().SetStr(msg)
		lr.SetSeverityText("ERROR")
		lr.SetTraceID(traceID(0xab))
		lr.SetSpanID(spanID(1))
	}
	far := recs.AppendEmpty() // far from the spans: the trace's all the same
	far.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(-time.Hour)))
	far.SetTraceID(traceID(0xab))
	far.Body().SetStr("old")
	st, err = w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	assert.Equal(t, 3, st.Written)

	got, err := r.GetTrace(ctx, traceID(0xab).String())
	require.NoError(t, err)
	require.Len(t, got.Spans, 2)
	s := got.Spans[0]
	assert.Equal(t, "GET /checkout", s.Name)
	assert.Equal(t, model.KindServer, s.Kind)
	assert.Equal(t, "checkout", s.Service)
	assert.Equal(t, "node-1", s.Host)
	assert.Equal(t, uint64(base.UnixNano()), s.StartUnixNano, "nanosecond precision survives")
	assert.Equal(t, uint64(250*time.Millisecond), s.Duration())
	assert.Equal(t, model.StatusError, s.StatusCode)
	assert.Equal(t, "it's broken", s.StatusMessage)
	assert.Equal(t, "500", s.Attributes["http.response.status_code"])
	require.Len(t, s.Events, 1)
	assert.Equal(t, "java.lang.IllegalStateException", s.Events[0].Attributes["exception.type"])
	assert.Equal(t, spanID(1).String(), got.Spans[1].ParentSpanID)
	assert.Equal(t, "", s.ParentSpanID)

	require.Len(t, got.Logs, 3)
	assert.Equal(t, "old", got.Logs[0].Body, "logs in time order")
	assert.Equal(t, "first", got.Logs[1].Body)
	assert.Equal(t, "second", got.Logs[2].Body)
	assert.Equal(t, spanID(1).String(), got.Logs[1].SpanID)
	assert.Empty(t, got.Findings)

	_, err = r.GetTrace(ctx, traceID(0xcd).String())
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestRetriedBatchDoesNotDuplicateSpansInReads(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{})
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(traceID(0x11))
	s.SetSpanID(spanID(0x11))
	// A fixed time, outside the windows the other tests of this database
	// search.
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Millisecond)))
	for range 2 {
		_, err := w.WriteTraces(ctx, td)
		require.NoError(t, err)
	}
	got, err := r.GetTrace(ctx, traceID(0x11).String())
	require.NoError(t, err)
	assert.Len(t, got.Spans, 1)
}

func TestInjectionIsInert(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	n := 0
	err := conn.Query(ctx, "SELECT count() AS n FROM "+db+".spans WHERE trace_id = {id:String}",
		store.Params{"id": `x' OR '1'='1`}, func([]byte) error { n++; return nil })
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	var out []string
	err = conn.Query(ctx, "SELECT {s:String} AS s", store.Params{"s": `'; DROP TABLE x; --\`},
		func(b []byte) error { out = append(out, string(b)); return nil })
	require.NoError(t, err)
	assert.Equal(t, []string{`{"s":"'; DROP TABLE x; --\\"}`}, out)
}

func TestFindingsStoredAndAggregated(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{LogWindow: time.Minute})
	base := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)

	// The trace must be stored for GetTrace to find its window.
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(traceID(0x77))
	sp.SetSpanID(spanID(1))
	sp.SetName("POST /order")
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Second)))
	_, err := w.WriteTraces(ctx, td)
	require.NoError(t, err)

	edge := "checkout → payments POST /charge"
	var rows []model.Finding
	for i, v := range []float64{27, 9, 3} {
		rows = append(rows, model.Finding{TraceID: traceID(0x77 + byte(i)).String(), TimeUnixNano: uint64(base.UnixNano()),
			Kind: "retry_fanout", Service: "checkout", Subject: edge, SpanIDs: []string{spanID(1).String()}, Value: v,
			Summary: "3 attempts × 3 × 3 = 27 calls"})
	}
	rows = append(rows, model.Finding{TraceID: traceID(0x77).String(), TimeUnixNano: uint64(base.UnixNano()),
		Kind: "clock_skew", Service: "payments", Subject: "web-1 → pay-1", Value: math.NaN(), Summary: "odd value"})
	require.NoError(t, w.WriteFindings(ctx, rows))
	require.NoError(t, w.WriteClockOffsets(ctx, []model.ClockOffset{{TraceID: traceID(0x77).String(),
		TimeUnixNano: uint64(base.UnixNano()), Host: "pay-1", OffsetNanos: -240_000_000, Source: "estimate"}}))

	got, err := r.GetTrace(ctx, traceID(0x77).String())
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"pay-1": -240_000_000}, got.ClockOffsets)
	require.Len(t, got.Findings, 2)
	assert.Equal(t, model.Finding{TraceID: traceID(0x77).String(), Kind: "clock_skew", SpanIDs: []string{}, Service: "payments", Subject: "web-1 → pay-1",
		Value: 0, Summary: "odd value"}, got.Findings[0], "NaN stored as 0, not failing the batch")
	assert.Equal(t, edge, got.Findings[1].Subject)
	assert.Equal(t, []string{spanID(1).String()}, got.Findings[1].SpanIDs)
	assert.Equal(t, 27.0, got.Findings[1].Value)

	sums, err := r.GetFindingSummaries(ctx, store.FindingsFilter{Kind: "retry_fanout",
		Start: base.Add(-time.Minute).UnixNano(), End: base.Add(time.Minute).UnixNano(), Limit: 10})
	require.NoError(t, err)
	require.Len(t, sums, 1)
	s := sums[0]
	assert.Equal(t, "retry_fanout", s.Kind)
	assert.Equal(t, edge, s.Subject)
	assert.EqualValues(t, 3, s.Count)
	assert.EqualValues(t, 3, s.Traces)
	assert.Equal(t, 13.0, s.AvgValue)
	assert.Equal(t, 9.0, s.P50Value)
	assert.Equal(t, 27.0, s.MaxValue)
	assert.Equal(t, []string{traceID(0x77).String(), traceID(0x78).String(), traceID(0x79).String()}, s.ExampleTraceIDs, "worst first")
	assert.Equal(t, uint64(base.UnixNano()), s.LastSeenUnixNano)

	// Findings about no one trace (across traces) count no trace.
	require.NoError(t, w.WriteFindings(ctx, []model.Finding{{TimeUnixNano: uint64(base.UnixNano()), Kind: "retry_budget",
		Service: "checkout", Subject: "checkout → payments", SpanIDs: []string{}, Value: 0.2}}))
	sums, err = r.GetFindingSummaries(ctx, store.FindingsFilter{Kind: "retry_budget",
		Start: base.Add(-time.Minute).UnixNano(), End: base.Add(time.Minute).UnixNano(), Limit: 10})
	require.NoError(t, err)
	require.Len(t, sums, 1)
	assert.EqualValues(t, 1, sums[0].Count)
	assert.Zero(t, sums[0].Traces)
	assert.Empty(t, sums[0].ExampleTraceIDs)

	none, err := r.GetFindingSummaries(ctx, store.FindingsFilter{Service: "x' OR 1=1 --",
		Start: base.Add(-time.Minute).UnixNano(), End: base.Add(time.Minute).UnixNano(), Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, none, "a filter value is a value, never SQL")
}

func TestSearchLogs(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{LogWindow: time.Minute})
	base := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

	// Trace 0x91 is stored (kept), 0x92 is not.
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "payments")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(traceID(0x91))
	sp.SetSpanID(spanID(1))
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Second)))
	_, err := w.WriteTraces(ctx, td)
	require.NoError(t, err)

	ld := plog.NewLogs()
	add := func(service, sev, body string, at time.Duration, trace byte) {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", service)
		rl.Resource().Attributes().PutStr("env", map[string]string{"payments": "prod", "checkout": "staging"}[service])
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.Attributes().PutStr("thread.name", map[bool]string{true: "main", false: "worker-1"}[at < 3*time.Second])
		lr.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(at)))
		lr.SetSeverityText(sev)
		lr.Body().SetStr(body)
		if trace != 0 {
			lr.SetTraceID(traceID(trace))
		}
	}
	add("payments", "ERROR", "Card declined by acquirer: insufficient funds", 1*time.Second, 0x91)
	add("payments", "INFO", "card accepted", 2*time.Second, 0x92)
	add("checkout", "WARN", "Retrying card payment after timeout", 3*time.Second, 0)
	add("checkout", "INFO", "cart rendered in 12ms", 4*time.Second, 0)
	add("payments", "ERROR", "card declined again", time.Hour, 0x91) // outside the window below
	_, err = w.WriteLogs(ctx, ld)
	require.NoError(t, err)

	search := func(f store.LogsFilter) []string {
		t.Helper()
		if f.Start == 0 {
			f.Start, f.End = base.UnixNano(), base.Add(time.Minute).UnixNano()
		}
		if f.Limit == 0 {
			f.Limit = 100
		}
		got, err := r.SearchLogs(ctx, f)
		require.NoError(t, err)
		var bodies []string
		for _, l := range got {
			bodies = append(bodies, l.Body)
		}
		return bodies
	}
	assert.Equal(t, []string{"Retrying card payment after timeout", "card accepted", "Card declined by acquirer: insufficient funds"},
		search(store.LogsFilter{Words: store.SearchWords("CARD")}), "whole words, any case, newest first")
	assert.Equal(t, []string{"Card declined by acquirer: insufficient funds"},
		search(store.LogsFilter{Words: store.SearchWords("card declined")}), "every word must appear")
	assert.Empty(t, search(store.LogsFilter{Words: store.SearchWords("decline")}), "tokens, not substrings")
	assert.Equal(t, []string{"card accepted", "Card declined by acquirer: insufficient funds"},
		search(store.LogsFilter{Service: "payments"}))
	assert.Equal(t, []string{"Card declined by acquirer: insufficient funds"}, search(store.LogsFilter{Severity: "error"}))
	assert.Equal(t, []string{"card accepted"}, search(store.LogsFilter{TraceID: traceID(0x92).String()}))
	assert.Equal(t, []string{"cart rendered in 12ms"}, search(store.LogsFilter{Limit: 1}))
	assert.Empty(t, search(store.LogsFilter{Service: "x' OR 1=1 --", Words: []string{"card"}}), "values are values, never SQL")
	attrs := func(kv ...string) []store.AttributeFilter {
		var out []store.AttributeFilter
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, store.AttributeFilter{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	assert.Equal(t, []string{"card accepted", "Card declined by acquirer: insufficient funds"},
		search(store.LogsFilter{Attributes: attrs("thread.name", "main")}), "a log attribute")
	assert.Equal(t, []string{"cart rendered in 12ms", "Retrying card payment after timeout"},
		search(store.LogsFilter{Attributes: attrs("env", "staging")}), "a resource attribute (a Loki stream's label)")
	assert.Equal(t, []string{"Retrying card payment after timeout"},
		search(store.LogsFilter{Words: store.SearchWords("card"), Attributes: attrs("env", "staging", "thread.name", "worker-1")}),
		"every filter must hold")
	assert.Empty(t, search(store.LogsFilter{Attributes: attrs("thread.name", "main", "env", "staging")}))
	assert.Empty(t, search(store.LogsFilter{Attributes: attrs("env' OR 1=1 --", "prod")}), "keys are values too")

	got, err := r.SearchLogs(ctx, store.LogsFilter{TraceID: traceID(0x91).String(), Start: base.UnixNano(),
		End: base.Add(2 * time.Hour).UnixNano(), Limit: 10})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.True(t, got[0].Kept, "its trace is stored")
	assert.Equal(t, "card declined again", got[0].Body)
	notKept, err := r.SearchLogs(ctx, store.LogsFilter{TraceID: traceID(0x92).String(), Start: base.UnixNano(),
		End: base.Add(time.Minute).UnixNano(), Limit: 10})
	require.NoError(t, err)
	require.Len(t, notKept, 1)
	assert.False(t, notKept[0].Kept)

	_, err = r.SearchLogs(ctx, store.LogsFilter{Words: make([]string, store.MaxSearchWords+1), Limit: 1})
	assert.Error(t, err)
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	ttl := func(table string) string {
		var out string
		require.NoError(t, conn.Query(ctx, "SELECT engine_full FROM system.tables WHERE database = {db:String} AND name = {t:String}",
			store.Params{"db": db, "t": table}, func(b []byte) error {
				var row struct {
					Engine string `json:"engine_full"`
				}
				err := json.Unmarshal(b, &row)
				out = row.Engine
				return err
			}))
		return out
	}
	r := store.Retention{Traces: 7 * 24 * time.Hour, Logs: 36 * time.Hour}
	require.NoError(t, store.ApplyRetention(ctx, conn, db, r))
	require.NoError(t, store.ApplyRetention(ctx, conn, db, r), "idempotent")
	assert.Contains(t, ttl("spans"), "TTL toDateTime(timestamp) + toIntervalSecond(604800)")
	assert.Contains(t, ttl("spans"), "ttl_only_drop_parts = 1")
	assert.Contains(t, ttl("trace_summaries"), "TTL toDateTime(start) + toIntervalSecond(604800)")
	assert.Contains(t, ttl("trace_summaries"), "ttl_only_drop_parts = 1")
	assert.Contains(t, ttl("logs"), "TTL toDateTime(timestamp) + toIntervalSecond(129600)")
	assert.Contains(t, ttl("trace_facts"), "TTL toDateTime(timestamp) + toIntervalSecond(604800) WHERE fact != 'line', "+
		"toDateTime(timestamp) + toIntervalSecond(129600) WHERE fact = 'line'", "the lines by the logs' retention")
	assert.NotContains(t, ttl("trace_facts"), "ttl_only_drop_parts", "rows of two retentions expire row by row")
	assert.Contains(t, ttl("findings"), "toIntervalSecond(604800)", "rows written before schema 020")
	assert.Contains(t, ttl("resources"), "TTL toDateTime(last_seen) + toIntervalSecond(691200)", "the traces' retention and a day")
	assert.NotContains(t, ttl("resources"), "ttl_only_drop_parts", "expired row by row")
	require.NoError(t, store.ApplyRetention(ctx, conn, db, store.Retention{Traces: 36 * time.Hour, Logs: 7 * 24 * time.Hour}))
	assert.Contains(t, ttl("resources"), "TTL toDateTime(last_seen) + toIntervalSecond(691200)", "the logs' retention, longer, and a day")
	require.NoError(t, store.ApplyRetention(ctx, conn, db, store.Retention{Traces: 36 * time.Hour}))
	assert.NotContains(t, ttl("resources"), "TTL", "logs kept forever keep their resources")
	assert.Contains(t, ttl("trace_facts"), "TTL toDateTime(timestamp) + toIntervalSecond(129600) WHERE fact != 'line' SETTINGS",
		"lines kept forever")
	require.NoError(t, store.ApplyRetention(ctx, conn, db, store.Retention{Traces: 36 * time.Hour, Logs: 36 * time.Hour}))
	assert.Contains(t, ttl("trace_facts"), "TTL toDateTime(timestamp) + toIntervalSecond(129600) SETTINGS", "one retention")
	assert.Contains(t, ttl("trace_facts"), "ttl_only_drop_parts = 1", "one retention: parts dropped whole")

	require.NoError(t, store.ApplyRetention(ctx, conn, db, store.Retention{}), "0 keeps forever")
	require.NoError(t, store.ApplyRetention(ctx, conn, db, store.Retention{}), "also when there is no TTL to remove")
	assert.NotContains(t, ttl("spans"), "TTL")
	assert.NotContains(t, ttl("logs"), "TTL")
	assert.NotContains(t, ttl("trace_facts"), "TTL")
	assert.NotContains(t, ttl("resources"), "TTL")
	assert.Error(t, store.ApplyRetention(ctx, conn, db, store.Retention{Logs: -time.Hour}))
}

// trace_facts holds rows of both retentions: a trace's lines go by the
// logs', its findings and clock offsets by the traces'.
func TestRetentionOfTraceLinesAndFacts(t *testing.T) {
	ctx := context.Background()
	const rdb = "ts_retention_lines"
	freshDatabase(t, rdb)
	require.NoError(t, store.ApplySchema(ctx, conn, rdb))
	w := store.NewWriter(conn, rdb)
	at := time.Now().Add(-3 * 24 * time.Hour)
	id := traceID(0x61).String()
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
	lr.SetTraceID(traceID(0x61))
	lr.Body().SetStr("three days old")
	_, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	require.NoError(t, w.WriteFacts(ctx, []model.Finding{{TraceID: id, TimeUnixNano: uint64(at.UnixNano()), Kind: "slowest_hop",
		Service: "shop", Subject: "shop GET /cart", Value: 2}},
		[]model.ClockOffset{{TraceID: id, TimeUnixNano: uint64(at.UnixNano()), Host: "cart-1", OffsetNanos: 5, Source: "estimate"}}))
	facts := func() string {
		rows := queryRows(t, "SELECT fact, count() AS n FROM "+rdb+".trace_facts GROUP BY fact ORDER BY fact", nil)
		return fmt.Sprint(rows)
	}
	require.Equal(t, "[map[fact:finding n:1] map[fact:clock_offset n:1] map[fact:line n:1]]", facts())

	require.NoError(t, store.ApplyRetention(ctx, conn, rdb, store.Retention{Traces: 7 * 24 * time.Hour, Logs: 24 * time.Hour}))
	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+rdb+".trace_facts FINAL", nil))
	assert.Equal(t, "[map[fact:finding n:1] map[fact:clock_offset n:1]]", facts(), "the line expired, the facts not")
}

// A search reads the newest sixteenth of its range first and the rest only
// for what is missing: no line twice, none lost at the boundary, newest first.
func TestSearchLogsNewestFirstInTwoPasses(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{LogWindow: time.Minute})
	start := time.Date(2026, 11, 30, 13, 0, 0, 0, time.UTC)
	end := start.Add(160 * time.Second) // the cut is at start+150s
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "split-svc")
	recs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for _, at := range []time.Duration{10 * time.Second, 149*time.Second + 999_999_999, 150 * time.Second, 155 * time.Second} {
		lr := recs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(at)))
		lr.Body().SetStr(fmt.Sprintf("splitword at %s", at))
	}
	_, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	search := func(limit int) []string {
		got, err := r.SearchLogs(ctx, store.LogsFilter{Words: []string{"splitword"}, Service: "split-svc",
			Start: start.UnixNano(), End: end.UnixNano(), Limit: limit})
		require.NoError(t, err)
		var out []string
		for _, l := range got {
			out = append(out, l.Body)
		}
		return out
	}
	assert.Equal(t, []string{"splitword at 2m35s", "splitword at 2m30s"}, search(2), "filled by the newest sixteenth")
	assert.Equal(t, []string{"splitword at 2m35s", "splitword at 2m30s", "splitword at 2m29.999999999s", "splitword at 10s"},
		search(10), "the rest of the range for what is missing, nothing twice")
	assert.Equal(t, []string{"splitword at 2m35s", "splitword at 2m30s", "splitword at 2m29.999999999s"}, search(3))
}

func TestSearchTraces(t *testing.T) {
	ctx := context.Background()
	// A database of its own: other tests write traces at the time they run,
	// which can fall in this one's fixed window.
	const db = "ts_search_traces"
	freshDatabase(t, db)
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	r := store.NewReader(conn, db, store.ReaderConfig{})
	base := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	type call struct {
		service, name string
		start, dur    time.Duration
		err           bool
		attrs         map[string]any
	}
	add := func(id byte, calls ...call) {
		td := ptrace.NewTraces()
		for i, c := range calls {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", c.service)
			sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.SetTraceID(traceID(id))
			sp.SetSpanID(spanID(byte(i + 1)))
			if i > 0 {
				sp.SetParentSpanID(spanID(1))
			}
			sp.SetName(c.name)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(c.start)))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(c.start + c.dur)))
			if c.err {
				sp.Status().SetCode(ptrace.StatusCodeError)
			}
			require.NoError(t, sp.Attributes().FromRaw(c.attrs))
		}
		_, err := w.WriteTraces(ctx, td)
		require.NoError(t, err)
	}
	add(0xa1, call{"shop-web", "GET /cart", 0, 50 * time.Millisecond, false, nil},
		call{"shop-db", "SELECT cart", 10 * time.Millisecond, 20 * time.Millisecond, false, map[string]any{"db.system": "postgresql"}})
	add(0xa2, call{"shop-web", "POST /pay", time.Second, 1500 * time.Millisecond, false, nil},
		call{"shop-pay", "charge", time.Second + 100*time.Millisecond, time.Second, true,
			map[string]any{"payment.provider": "acme", "db.system": "postgresql"}})
	add(0xa3, call{"shop-web", "GET /cart", 2 * time.Second, 200 * time.Millisecond, false, nil})
	add(0xa4, call{"shop-admin", "GET /report", 3 * time.Second, 5 * time.Second, false, nil})

	search := func(f store.TracesFilter) []string {
		t.Helper()
		f.Start, f.End = base.UnixNano(), base.Add(time.Minute).UnixNano()
		if f.Limit == 0 {
			f.Limit = 100
		}
		got, err := r.SearchTraces(ctx, f)
		require.NoError(t, err)
		var ids []string
		for _, s := range got {
			ids = append(ids, s.TraceID[30:])
		}
		return ids
	}
	assert.Equal(t, []string{"a4", "a3", "a2", "a1"}, search(store.TracesFilter{}), "newest first")
	assert.Equal(t, []string{"a4", "a3"}, search(store.TracesFilter{Limit: 2}))
	assert.Equal(t, []string{"a2", "a1"}, search(store.TracesFilter{Limit: 2, Offset: 2}), "the next page")
	assert.Empty(t, search(store.TracesFilter{Limit: 2, Offset: 4}))
	pg := store.AttributeFilter{Key: "db.system", Value: "postgresql"}
	assert.Equal(t, []string{"a2", "a1"}, search(store.TracesFilter{Attributes: []store.AttributeFilter{pg}}))
	assert.Equal(t, []string{"a2"}, search(store.TracesFilter{Attributes: []store.AttributeFilter{pg,
		{Key: "payment.provider", Value: "acme"}}}), "every filter, on any span")
	assert.Empty(t, search(store.TracesFilter{Attributes: []store.AttributeFilter{{Key: "db.system'] OR 1=1 --", Value: "x"}}}))
	assert.Equal(t, []string{"a3", "a2", "a1"}, search(store.TracesFilter{Service: "shop-web"}))
	assert.Equal(t, []string{"a1"}, search(store.TracesFilter{Service: "shop-db"}), "any service the trace crosses")
	assert.Equal(t, []string{"a3", "a1"}, search(store.TracesFilter{Operation: "GET /cart"}), "the root span's name")
	assert.Equal(t, []string{"a1"}, search(store.TracesFilter{SpanName: "SELECT cart"}), "any span's name")
	assert.Equal(t, []string{"a1"}, search(store.TracesFilter{Service: "shop-db", SpanName: "SELECT cart"}))
	assert.Empty(t, search(store.TracesFilter{Service: "shop-web", SpanName: "SELECT cart"}), "a span of that service")
	assert.Empty(t, search(store.TracesFilter{SpanName: "x' OR 1=1 --"}))
	assert.Equal(t, []string{"a4", "a3", "a2"}, search(store.TracesFilter{MinDuration: 200 * time.Millisecond}), "inclusive")
	assert.Equal(t, []string{"a4", "a2"}, search(store.TracesFilter{MinDuration: time.Second}))
	assert.Equal(t, []string{"a3", "a1"}, search(store.TracesFilter{MaxDuration: 200 * time.Millisecond}), "inclusive")
	assert.Equal(t, []string{"a2"}, search(store.TracesFilter{ErrorsOnly: true}))
	assert.Empty(t, search(store.TracesFilter{Service: "x' OR 1=1 --"}))

	got, err := r.SearchTraces(ctx, store.TracesFilter{Service: "shop-pay", Start: base.UnixNano(), End: base.Add(time.Minute).UnixNano(), Limit: 10})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, model.TraceSummary{TraceID: traceID(0xa2).String(), RootService: "shop-web", RootName: "POST /pay",
		StartUnixNano: uint64(base.Add(time.Second).UnixNano()), DurationNano: uint64(1500 * time.Millisecond),
		SpanCount: 2, ErrorCount: 1, Services: []string{"shop-pay", "shop-web"}}, got[0])

	svcs, err := r.Services(ctx, base.UnixNano(), base.Add(time.Minute).UnixNano())
	require.NoError(t, err)
	assert.Subset(t, svcs, []string{"shop-admin", "shop-db", "shop-pay", "shop-web"})
	ops, err := r.Operations(ctx, "shop-web", base.UnixNano(), base.Add(time.Minute).UnixNano())
	require.NoError(t, err)
	assert.Equal(t, []string{"GET /cart", "POST /pay"}, ops)

	deps, err := r.Dependencies(ctx, base.UnixNano(), base.Add(time.Minute).UnixNano())
	require.NoError(t, err)
	assert.Equal(t, []model.Dependency{{Parent: "shop-web", Child: "shop-db", Calls: 1, P99Nanos: uint64(20 * time.Millisecond)},
		{Parent: "shop-web", Child: "shop-pay", Calls: 1, Errors: 1, P99Nanos: uint64(time.Second)}},
		deps, "calls between services; a1's and a2's only (a3 and a4 have one span each)")
	deps, err = r.Dependencies(ctx, base.Add(time.Second).UnixNano(), base.Add(time.Minute).UnixNano())
	require.NoError(t, err)
	assert.Equal(t, []model.Dependency{{Parent: "shop-web", Child: "shop-pay", Calls: 1, Errors: 1, P99Nanos: uint64(time.Second)}},
		deps, "both ends in the window")
}

// Inserts leave no file behind, and a process's insert directory is
// removed by the next one to open a store once its process is gone.
func TestInsertFilesAreRemoved(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(traceID(0x71))
	sp.SetSpanID(spanID(1))
	_, err := store.NewWriter(conn, db).WriteTraces(ctx, td)
	require.NoError(t, err)
	left, err := os.ReadDir(conn.insertDir)
	require.NoError(t, err)
	assert.Empty(t, left, "insert files left in %s", conn.insertDir)

	// A cleaner of $TMPDIR removed the directory: the next insert makes it
	// again.
	require.NoError(t, os.RemoveAll(conn.insertDir))
	sp.SetSpanID(spanID(2))
	_, err = store.NewWriter(conn, db).WriteTraces(ctx, td)
	require.NoError(t, err)
	assert.DirExists(t, conn.insertDir)

	dir := t.TempDir()
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	names := map[string]bool{ // name: removed
		fmt.Sprintf("tracesift-inserts-%d-a", gone.Process.Pid): true,
		fmt.Sprintf("tracesift-inserts-%d-b", os.Getpid()):      false,
		"tracesift-inserts-1-c":                                 false, // pid 1 runs
		"tracesift-inserts-x-d":                                 false,
		"other":                                                 false,
	}
	for name := range names {
		require.NoError(t, os.Mkdir(filepath.Join(dir, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "rows-1"), []byte("x"), 0o644))
	}
	removeStaleInsertDirs(dir)
	for name, removed := range names {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.Equal(t, removed, os.IsNotExist(err), name)
	}
}

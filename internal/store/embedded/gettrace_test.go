package embedded

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tenant"
)

// statementCounter counts the statements run through it: n those of a
// trace, tenant those that renew what the reader keeps of the tenant (its
// skewed pairs, its resources in use), which a lookup starts when they are
// due, beside its own; facts those of a trace that read trace_facts.
type statementCounter struct {
	store.Conn
	n, tenant, facts atomic.Int64
}

func (c *statementCounter) Query(ctx context.Context, query string, p store.Params, row func([]byte) error) error {
	if p["max_pairs"] != nil || p["max_resources"] != nil {
		c.tenant.Add(1)
	} else {
		c.n.Add(1)
	}
	if strings.Contains(query, ".trace_facts\n") {
		c.facts.Add(1)
	}
	return c.Conn.Query(ctx, query, p, row)
}

// reset sets the counts to 0.
func (c *statementCounter) reset() {
	c.n.Store(0)
	c.tenant.Store(0)
	c.facts.Store(0)
}

// getTraceBase is when the traces of these tests start.
var getTraceBase = time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)

// shopTrace is trace id of tenant tn: a span on host shop-1 from at for a
// second, and with more, a child on pay-1.
func shopTrace(id byte, tn string, at time.Time, more bool) ptrace.Traces {
	td := ptrace.NewTraces()
	hosts := []string{"shop-1"}
	if more {
		hosts = append(hosts, "pay-1")
	}
	for i, host := range hosts {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "shop")
		rs.Resource().Attributes().PutStr("host.name", host)
		tenant.Stamp(rs.Resource().Attributes(), tn)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(traceID(id))
		sp.SetSpanID(spanID(byte(i + 1)))
		if i > 0 {
			sp.SetParentSpanID(spanID(1))
		}
		sp.SetName("GET /cart")
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Second)))
	}
	return td
}

// shopStore is a fresh database db holding shopTrace(id, tn, getTraceBase,
// more), and its writer.
func shopStore(t *testing.T, db string, id byte, tn string, more bool) *store.Writer {
	t.Helper()
	freshDatabase(t, db)
	require.NoError(t, store.ApplySchema(context.Background(), conn, db))
	w := store.NewWriter(conn, db)
	_, err := w.WriteTraces(context.Background(), shopTrace(id, tn, getTraceBase, more))
	require.NoError(t, err)
	return w
}

// A trace by id is two statements: its spans and, at the same time, its
// lines, findings and clock offsets. A third reads its window's skewed pairs,
// with the resources the reader has not cached, while it lacks one: those in
// use, the tenant's (read beside the first lookup, with its skewed pairs),
// it has. One when there is no such trace.
func TestTraceReadInTwoOrThreeStatements(t *testing.T) {
	ctx := context.Background()
	const tdb = "ts_get_trace"
	w := shopStore(t, tdb, 0x91, tenant.Default, false)

	counter := &statementCounter{Conn: conn}
	r := store.NewReader(counter, tdb, store.ReaderConfig{})
	want := map[string]string{"service.name": "shop", "host.name": "shop-1"}
	read := func(what string, id byte, statements, tenantReads int64) {
		t.Helper()
		counter.reset()
		tr, err := r.GetTrace(ctx, traceID(id).String())
		require.NoError(t, err, what)
		r.Wait()
		require.Len(t, tr.Spans, 1, what)
		assert.Equal(t, want, tr.Spans[0].Resource, what)
		assert.Nil(t, tr.SkewedPairs)
		assert.Equal(t, statements, counter.n.Load(), what)
		if tenantReads >= 0 { // later ones hang on the clock
			assert.Equal(t, tenantReads, counter.tenant.Load(), what)
		}
	}
	read("a resource not in use: read with the window", 0x91, 3, 2)
	read("the resource cached, the tenant's pairs known", 0x91, 2, -1)
	read("again", 0x91, 2, -1)
	counter.reset()
	_, err := r.GetTrace(ctx, traceID(0x92).String())
	require.ErrorIs(t, err, store.ErrNotFound)
	r.Wait()
	assert.EqualValues(t, 2, counter.n.Load(), "no spans: no window statement")

	// Its spans now come again: a new reader has the resource from the first.
	_, err = w.WriteTraces(ctx, shopTrace(0x93, tenant.Default, time.Now(), false))
	require.NoError(t, err)
	r = store.NewReader(counter, tdb, store.ReaderConfig{})
	read("a resource in use", 0x91, 2, 2)
}

// A trace with nothing but spans reads as empty logs, findings and offsets,
// and no skewed pairs, although another tenant stored all of those for the
// same trace id and hosts, at the same time.
func TestTraceWithoutLogsOrFindings(t *testing.T) {
	ctx := context.Background()
	const tdb = "ts_get_trace_bare"
	w := shopStore(t, tdb, 0x93, tenant.Default, true)

	// acme's trace of the same id, hosts and time, with all the rest.
	td, a := shopTrace(0x93, "acme", getTraceBase, true), store.Analysis{}
	at := uint64(getTraceBase.UnixNano())
	a.Findings = []model.Finding{{TraceID: traceID(0x93).String(), TimeUnixNano: at, Kind: "slowest_hop", Service: "shop",
		Subject: "shop → pay", Value: 1, Tenant: "acme"}}
	a.Clocks = []model.ClockOffset{{TraceID: traceID(0x93).String(), TimeUnixNano: at, Host: "shop-1", OffsetNanos: 5,
		Tenant: "acme"}}
	a.Pairs = []model.ClockPair{{TimeUnixNano: at, A: "pay-1", B: "shop-1", OffsetNanos: 7, Samples: 3, Tenant: "acme"}}
	store.AppendAnalysis(td, a)
	_, err := w.WriteTraces(ctx, td)
	require.NoError(t, err)
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "shop")
	tenant.Stamp(rl.Resource().Attributes(), "acme")
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(getTraceBase))
	lr.SetTraceID(traceID(0x93))
	lr.Body().SetStr("acme's line")
	_, err = w.WriteLogs(ctx, ld)
	require.NoError(t, err)

	r := store.NewReader(conn, tdb, store.ReaderConfig{})
	tr, err := r.GetTrace(ctx, traceID(0x93).String())
	require.NoError(t, err)
	require.Len(t, tr.Spans, 2)
	assert.Equal(t, []model.Log{}, tr.Logs)
	assert.Equal(t, []model.Finding{}, tr.Findings)
	assert.Equal(t, map[string]int64{}, tr.ClockOffsets)
	assert.Nil(t, tr.SkewedPairs)

	mine, err := r.GetTrace(tenant.NewContext(ctx, "acme"), traceID(0x93).String())
	require.NoError(t, err)
	assert.Len(t, mine.Spans, 2)
	require.Len(t, mine.Logs, 1)
	assert.Equal(t, "acme's line", mine.Logs[0].Body)
	assert.Len(t, mine.Findings, 1)
	assert.Equal(t, map[string]int64{"shop-1": 5}, mine.ClockOffsets)
	assert.Equal(t, []model.ClockPair{{A: "pay-1", B: "shop-1", OffsetNanos: 7, Samples: 3}}, mine.SkewedPairs)
}

// The trace's logs are the lines with its id, however far from its spans
// (schema 019: by its id alone, as its findings), its earliest MaxLogs, in
// time order, a line stored twice once; its findings are ordered by kind,
// the greatest value first, each once; an offset stored twice is one.
func TestTraceWindowLogsAndFindings(t *testing.T) {
	ctx := context.Background()
	const tdb = "ts_get_trace_window"
	w := shopStore(t, tdb, 0x94, tenant.Default, false)

	ld := plog.NewLogs()
	recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	line := func(id byte, at time.Duration, body string) {
		lr := recs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(getTraceBase.Add(at)))
		lr.SetTraceID(traceID(id))
		lr.Body().SetStr(body)
	}
	// The spans' window, widened by LogWindow, is [base − 1 min, base + 1 s +
	// 1 min]; stored out of order.
	line(0x94, time.Second+time.Minute, "last in the window")
	line(0x94, 500*time.Millisecond, "third")
	line(0x94, -time.Minute, "first in the window")
	line(0x94, -2*time.Hour, "two hours before")
	line(0x94, time.Second+time.Minute+time.Nanosecond, "after the window")
	line(0x94, 0, "second")
	line(0x95, 0, "another trace's")
	_, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	// "second" again, in another insert (a repeated insert is dropped whole).
	recs.RemoveIf(func(lr plog.LogRecord) bool { return lr.Body().Str() != "second" })
	line(0x95, time.Second, "another trace's, later")
	_, err = w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	require.EqualValues(t, 2, count(t, "SELECT count() AS n FROM "+tdb+".logs WHERE body = 'second'", nil),
		"stored twice, as the test means")

	at := uint64(getTraceBase.UnixNano())
	finding := func(kind string, value float64) model.Finding {
		return model.Finding{TraceID: traceID(0x94).String(), TimeUnixNano: at, Kind: kind, Service: "shop",
			Subject: "shop GET /cart", SpanIDs: []string{spanID(1).String()}, Value: value, Summary: kind}
	}
	findings := []model.Finding{finding("slowest_hop", 2), finding("critical_path", 1), finding("slowest_hop", 9)}
	offsets := []model.ClockOffset{{TraceID: traceID(0x94).String(), TimeUnixNano: at, Host: "shop-1", OffsetNanos: -3}}
	for range 2 { // stored twice, as after a sampler's crash (in other inserts: not dropped as repeated)
		require.NoError(t, w.WriteFindings(ctx, findings))
		require.NoError(t, w.WriteClockOffsets(ctx, offsets))
		far := at + uint64(2*time.Hour) // past the window: still the trace's, read by its id alone
		findings = append(findings, finding("far", 1))
		findings[len(findings)-1].TimeUnixNano = far
		offsets = append(offsets, model.ClockOffset{TraceID: traceID(0x94).String(), TimeUnixNano: far, Host: "pay-1", OffsetNanos: 8})
	}
	require.EqualValues(t, 7, count(t, "SELECT count() AS n FROM "+tdb+".trace_facts WHERE fact = 'finding'", nil), "stored twice, as the test means")

	bodies := func(logs []model.Log) []string {
		var out []string
		for _, l := range logs {
			out = append(out, l.Body)
		}
		return out
	}
	r := store.NewReader(conn, tdb, store.ReaderConfig{LogWindow: time.Minute})
	tr, err := r.GetTrace(ctx, traceID(0x94).String())
	require.NoError(t, err)
	assert.Equal(t, []string{"two hours before", "first in the window", "second", "third", "last in the window",
		"after the window"}, bodies(tr.Logs))
	for _, l := range tr.Logs {
		assert.Equal(t, traceID(0x94).String(), l.TraceID)
	}
	var kinds []string
	var values []float64
	for _, f := range tr.Findings {
		kinds, values = append(kinds, f.Kind), append(values, f.Value)
	}
	assert.Equal(t, []string{"critical_path", "far", "slowest_hop", "slowest_hop"}, kinds)
	assert.Equal(t, []float64{1, 1, 9, 2}, values)
	assert.Equal(t, map[string]int64{"shop-1": -3, "pay-1": 8}, tr.ClockOffsets)

	tr, err = store.NewReader(conn, tdb, store.ReaderConfig{LogWindow: time.Minute, MaxLogs: 2}).GetTrace(ctx, traceID(0x94).String())
	require.NoError(t, err)
	assert.Equal(t, []string{"two hours before", "first in the window"}, bodies(tr.Logs), "the earliest MaxLogs")
	assert.Len(t, tr.Findings, 4, "every finding (7 rows): MaxLogs caps the lines alone")
	assert.Equal(t, map[string]int64{"shop-1": -3, "pay-1": 8}, tr.ClockOffsets)
}

// A trace's log lines name their resource by id (schema 017): a line of a
// span's resource gets it from the spans' read, a line of a resource no span
// has gets it in one more statement (then from the cache), and a line
// written before, which carries its resource, keeps it. Log search gives
// the same resources and finds lines by a resource attribute either way.
func TestTraceLogResources(t *testing.T) {
	ctx := context.Background()
	const tdb = "ts_get_trace_log_resources"
	w := shopStore(t, tdb, 0x96, tenant.Default, false)

	ld := plog.NewLogs()
	line := func(attrs map[string]string, at time.Duration, body string) {
		rl := ld.ResourceLogs().AppendEmpty()
		for k, v := range attrs {
			rl.Resource().Attributes().PutStr(k, v)
		}
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(getTraceBase.Add(at)))
		lr.SetTraceID(traceID(0x96))
		lr.Body().SetStr(body)
	}
	shop := map[string]string{"service.name": "shop", "host.name": "shop-1"}
	shipper := map[string]string{"service.name": "log-shipper", "host.name": "agent-7"}
	line(shop, 100*time.Millisecond, "the span's resource")
	line(shipper, 200*time.Millisecond, "a resource no span has")
	_, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	require.EqualValues(t, 0, count(t, "SELECT count() AS n FROM "+tdb+".logs WHERE resource_id = 0 OR length(resource) > 0", nil),
		"new lines name their resource by id only")
	require.NoError(t, conn.Exec(ctx, "INSERT INTO "+tdb+".logs (timestamp, observed_timestamp, trace_id, body, service, resource) "+
		"VALUES (fromUnixTimestamp64Nano({at:Int64}), fromUnixTimestamp64Nano({at:Int64}), {id:String}, 'written before schema 017', "+
		"'legacy', map('service.name', 'legacy'))",
		store.Params{"at": getTraceBase.Add(300 * time.Millisecond).UnixNano(), "id": traceID(0x96).String()}))

	counter := &statementCounter{Conn: conn}
	r := store.NewReader(counter, tdb, store.ReaderConfig{})
	want := map[string]map[string]string{"the span's resource": shop, "a resource no span has": shipper,
		"written before schema 017": {"service.name": "legacy"}}
	for i, read := range []string{"resources from the table", "resources from the cache"} {
		counter.reset()
		tr, err := r.GetTrace(ctx, traceID(0x96).String())
		require.NoError(t, err, read)
		r.Wait()
		require.Len(t, tr.Logs, 3, read)
		for _, l := range tr.Logs {
			assert.Equal(t, want[l.Body], l.Resource, "%s: %s", read, l.Body)
		}
		assert.EqualValues(t, 4-2*i, counter.n.Load(), "%s: the log-shipper's resource is read once", read)
	}

	from, to := getTraceBase.UnixNano(), getTraceBase.Add(time.Second).UnixNano()
	for key, value := range map[string]string{"host.name": "agent-7", "service.name": "legacy"} {
		got, err := r.SearchLogs(ctx, store.LogsFilter{Attributes: []store.AttributeFilter{{Key: key, Value: value}},
			Start: from, End: to, Limit: 10})
		require.NoError(t, err)
		require.Len(t, got, 1, "%s=%s", key, value)
		assert.Equal(t, want[got[0].Body], got[0].Resource)
	}
	got, err := store.NewReader(conn, tdb, store.ReaderConfig{}).SearchLogs(ctx, store.LogsFilter{Start: from, End: to, Limit: 10})
	require.NoError(t, err)
	require.Len(t, got, 3)
	for _, l := range got {
		assert.Equal(t, want[l.Body], l.Resource, "a new reader's search: %s", l.Body)
	}
}

// A trace by id reads a finding's value from fields, where this version
// writes it, and so reads trace_facts once without its value column. A
// trace with a finding that a collector of an earlier version wrote (its
// value in the column alone, as during a rolling upgrade) is read again with
// the column, and reads the same.
func TestTraceFindingValues(t *testing.T) {
	ctx := context.Background()
	const tdb = "ts_get_trace_finding_values"
	w := shopStore(t, tdb, 0x9a, tenant.Default, false)
	_, err := w.WriteTraces(ctx, shopTrace(0x9b, tenant.Default, getTraceBase, false))
	require.NoError(t, err)
	at := getTraceBase.UnixNano()
	finding := func(id byte, kind string, value float64) model.Finding {
		return model.Finding{TraceID: traceID(id).String(), TimeUnixNano: uint64(at), Kind: kind, Service: "shop",
			Subject: "shop GET /cart", SpanIDs: []string{"0102030405060708"}, Value: value, Summary: "took long"}
	}
	earlier := func(f model.Finding) {
		require.NoError(t, conn.Exec(ctx, "INSERT INTO "+tdb+".trace_facts (tenant, trace_id, fact, timestamp, kind, "+
			"service, subject, value, fields) VALUES ('default', {id:String}, 'finding', fromUnixTimestamp64Nano({at:Int64}), "+
			"{kind:String}, 'shop', 'shop GET /cart', toFloat64({value:String}), {fields:String})", store.Params{
			"id": f.TraceID, "at": at, "kind": f.Kind, "value": fmt.Sprint(f.Value), "fields": `{"kind":"` + f.Kind +
				`","service":"shop","subject":"shop GET /cart","span_ids":["0102030405060708"],"summary":"took long"}`}))
	}
	earlier(finding(0x9a, "by an earlier collector", 2.5))
	earlier(finding(0x9a, "not a number", math.NaN())) // JSON has no NaN: null
	require.NoError(t, w.WriteFacts(ctx, []model.Finding{finding(0x9a, "by this one", 0), finding(0x9b, "by this one", 1.5)},
		[]model.ClockOffset{{TraceID: traceID(0x9b).String(), TimeUnixNano: uint64(at), Host: "cart-1", OffsetNanos: 5}}))

	counter := &statementCounter{Conn: conn}
	r := store.NewReader(counter, tdb, store.ReaderConfig{})
	read := func(id byte, factReads int64) *model.Trace {
		t.Helper()
		counter.reset()
		tr, err := r.GetTrace(ctx, traceID(id).String())
		require.NoError(t, err)
		r.Wait()
		assert.Equal(t, factReads, counter.facts.Load(), "reads of trace_facts")
		for i := range tr.Findings {
			tr.Findings[i].TimeUnixNano = uint64(at) // not read by a trace by id
		}
		return tr
	}
	tr := read(0x9a, 2)
	assert.ElementsMatch(t, []model.Finding{finding(0x9a, "by an earlier collector", 2.5), finding(0x9a, "not a number", 0),
		finding(0x9a, "by this one", 0)}, tr.Findings)
	tr = read(0x9b, 1)
	assert.Equal(t, []model.Finding{finding(0x9b, "by this one", 1.5)}, tr.Findings)
	assert.Equal(t, map[string]int64{"cart-1": 5}, tr.ClockOffsets)
}

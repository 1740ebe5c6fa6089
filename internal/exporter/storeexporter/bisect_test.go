package storeexporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tracesift/tracesift/internal/exporter/storeexporter/internal/metadatatest"
	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
)

const poison = "poison"

var (
	refusal   = errors.New("Code: 131. DB::Exception: String too long for type FixedString. (TOO_LARGE_STRING_SIZE)")
	transient = errors.New("dial tcp 127.0.0.1:9000: connection refused")
)

// storedRecord is a record as the fake store keeps it: its name (a span's
// name, a log record's body) with its resource's attributes and scope.
type storedRecord struct {
	name     string
	resource map[string]any
	scope    string
}

// refusingWriter is a recordWriter whose store refuses, permanently, every
// write holding a record named poison or of a resource whose service is
// poison (or every write, refuseAll), and keeps the records of the others.
// Like the tables, which drop an insert whose rows they already hold
// (store.InsertStatement), it keeps a write it already took once.
type refusingWriter struct {
	mu        sync.Mutex
	refuseAll bool
	// failAt makes the write of that number (from 1) fail transiently.
	failAt int
	writes int
	taken  map[string]bool
	stored []storedRecord
}

func (w *refusingWriter) write(key string, records []storedRecord) (store.WriteStats, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	switch {
	case w.writes == w.failAt:
		return store.WriteStats{}, transient
	case w.refuseAll:
		return store.WriteStats{}, fmt.Errorf("inserting %d records: %w", len(records), refusal)
	}
	for _, r := range records {
		if r.name == poison || r.resource["service.name"] == poison {
			return store.WriteStats{}, fmt.Errorf("inserting %d records: %w", len(records), refusal)
		}
	}
	if w.taken == nil {
		w.taken = map[string]bool{}
	}
	if !w.taken[key] {
		w.taken[key] = true
		w.stored = append(w.stored, records...)
	}
	return store.WriteStats{Written: len(records)}, nil
}

func (w *refusingWriter) WriteTraces(_ context.Context, td ptrace.Traces) (store.WriteStats, error) {
	var records []storedRecord
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				records = append(records, storedRecord{s.Name(), rs.Resource().Attributes().AsRaw(), ss.Scope().Name()})
			}
		}
	}
	key, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		return store.WriteStats{}, err
	}
	return w.write(string(key), records)
}

func (w *refusingWriter) WriteLogs(_ context.Context, ld plog.Logs) (store.WriteStats, error) {
	var records []storedRecord
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				records = append(records, storedRecord{lr.Body().Str(), rl.Resource().Attributes().AsRaw(), sl.Scope().Name()})
			}
		}
	}
	key, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	if err != nil {
		return store.WriteStats{}, err
	}
	return w.write(string(key), records)
}

func (w *refusingWriter) writeCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes
}

// testExporter is an exporter of signal writing to w, with its metrics in tt.
func testExporter(t *testing.T, w recordWriter, signal string) (*storeExporter, *componenttest.Telemetry) {
	t.Helper()
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	e, err := newExporter(metadatatest.NewSettings(tt), createDefaultConfig().(*Config), signal)
	require.NoError(t, err)
	e.writer = w
	return e, tt
}

// counted is the value of one of the exporter's counters for signal; 0 if
// it has recorded nothing.
func counted(t *testing.T, tt *componenttest.Telemetry, name, signal string) int64 {
	t.Helper()
	m, err := tt.GetMetric("otelcol_" + name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int sum", name)
	var n int64
	for _, dp := range sum.DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key("signal"))
		assert.Equal(t, signal, v.AsString())
		n += dp.Value
	}
	return n
}

// resourceOf is where the test batches' record i comes from: two resources,
// the second with two scopes.
func resourceOf(i int) (map[string]any, string) {
	if i < 4 {
		return map[string]any{"service.name": "cart", "host.name": "h1"}, "cart.http"
	}
	scope := "web.http"
	if i >= 7 {
		scope = "web.db"
	}
	return map[string]any{"service.name": "web", "host.name": "h2"}, scope
}

// putResource sets a resource's attributes in a fixed order, so that a
// batch built twice is the same.
func putResource(attrs pcommon.Map, res map[string]any) {
	attrs.PutStr("service.name", res["service.name"].(string))
	attrs.PutStr("host.name", res["host.name"].(string))
}

// tenSpans is a batch of ten spans over two resources, span 6 named
// poison.
func tenSpans() ptrace.Traces {
	td := ptrace.NewTraces()
	var ss ptrace.ScopeSpans
	lastScope := ""
	for i := range 10 {
		res, scope := resourceOf(i)
		if scope != lastScope {
			if i == 0 || i == 4 {
				rs := td.ResourceSpans().AppendEmpty()
				putResource(rs.Resource().Attributes(), res)
				rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
			}
			rss := td.ResourceSpans()
			ss = rss.At(rss.Len() - 1).ScopeSpans().AppendEmpty()
			ss.Scope().SetName(scope)
			lastScope = scope
		}
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID{1, byte(i)})
		s.SetSpanID(pcommon.SpanID{2, byte(i)})
		s.SetName(fmt.Sprintf("span-%d", i))
		if i == 6 {
			s.SetName(poison)
		}
	}
	return td
}

// tenLogs is tenSpans' batch as log records, record 3 poison.
func tenLogs() plog.Logs {
	ld := plog.NewLogs()
	var sl plog.ScopeLogs
	lastScope := ""
	for i := range 10 {
		res, scope := resourceOf(i)
		if scope != lastScope {
			if i == 0 || i == 4 {
				rl := ld.ResourceLogs().AppendEmpty()
				putResource(rl.Resource().Attributes(), res)
			}
			rls := ld.ResourceLogs()
			sl = rls.At(rls.Len() - 1).ScopeLogs().AppendEmpty()
			sl.Scope().SetName(scope)
			lastScope = scope
		}
		body := fmt.Sprintf("span-%d", i)
		if i == 3 {
			body = poison
		}
		sl.LogRecords().AppendEmpty().Body().SetStr(body)
	}
	return ld
}

// assertStoredAllBut checks that the store holds each of the ten records
// but the poisoned one once, with its resource and scope.
func assertStoredAllBut(t *testing.T, stored []storedRecord, poisoned int) {
	t.Helper()
	var want []storedRecord
	for i := range 10 {
		if i != poisoned {
			res, scope := resourceOf(i)
			want = append(want, storedRecord{fmt.Sprintf("span-%d", i), res, scope})
		}
	}
	assert.ElementsMatch(t, want, stored)
}

// maxWrites bounds the writes of a batch of n records with one the store
// refuses: the batch, then at most two a halving.
func maxWrites(n int) int { return 1 + 2*bits.Len(uint(n-1)) }

// A span the store refuses costs only itself: the other spans of its batch,
// from other clients too, are stored with their resources and scopes, it is
// counted, and the batch is not failed.
func TestRefusedSpanIsDroppedAlone(t *testing.T) {
	w := &refusingWriter{}
	e, tt := testExporter(t, w, "traces")
	require.NoError(t, e.pushTraces(context.Background(), tenSpans()))
	assertStoredAllBut(t, w.stored, 6)
	assert.LessOrEqual(t, w.writeCount(), maxWrites(10))
	assert.Equal(t, int64(1), counted(t, tt, "tracesift_store_records_rejected", "traces"))
	assert.Equal(t, int64(9), counted(t, tt, "tracesift_store_records_written", "traces"))
}

func TestRefusedLogRecordIsDroppedAlone(t *testing.T) {
	w := &refusingWriter{}
	e, tt := testExporter(t, w, "logs")
	require.NoError(t, e.pushLogs(context.Background(), tenLogs()))
	assertStoredAllBut(t, w.stored, 3)
	assert.LessOrEqual(t, w.writeCount(), maxWrites(10))
	assert.Equal(t, int64(1), counted(t, tt, "tracesift_store_records_rejected", "logs"))
	assert.Equal(t, int64(9), counted(t, tt, "tracesift_store_records_written", "logs"))
}

// An error that may pass is returned to be retried, the batch whole.
func TestTransientErrorIsRetriedWhole(t *testing.T) {
	w := &refusingWriter{failAt: 1}
	e, tt := testExporter(t, w, "traces")
	err := e.pushTraces(context.Background(), tenSpans())
	require.ErrorIs(t, err, transient)
	assert.False(t, consumererror.IsPermanent(err))
	assert.Equal(t, 1, w.writeCount(), "not bisected")
	assert.Empty(t, w.stored)
	assert.Zero(t, counted(t, tt, "tracesift_store_records_rejected", "traces"))
}

// An error that may pass while the halves are written fails the batch, to
// be retried: nothing is counted yet, and the retry cuts the same halves,
// whose writes the store already holds once.
func TestTransientErrorWhileBisectingRetriesTheBatch(t *testing.T) {
	w := &refusingWriter{failAt: 4}
	e, tt := testExporter(t, w, "logs")
	ld := tenLogs()
	err := e.pushLogs(context.Background(), ld)
	require.ErrorIs(t, err, transient)
	assert.False(t, consumererror.IsPermanent(err))
	assert.NotEmpty(t, w.stored, "some halves were stored before the error")
	assert.Zero(t, counted(t, tt, "tracesift_store_records_rejected", "logs"))
	assert.Zero(t, counted(t, tt, "tracesift_store_records_written", "logs"))

	require.NoError(t, e.pushLogs(context.Background(), ld))
	assertStoredAllBut(t, w.stored, 3)
	assert.Equal(t, int64(1), counted(t, tt, "tracesift_store_records_rejected", "logs"))
	assert.Equal(t, int64(9), counted(t, tt, "tracesift_store_records_written", "logs"))
}

// A client whose every record the store refuses (say, for a resource
// attribute) costs only its records, and a few writes, not two a record.
func TestRefusedResourceIsDroppedInFewWrites(t *testing.T) {
	w := &refusingWriter{}
	e, tt := testExporter(t, w, "traces")
	td := ptrace.NewTraces()
	for r := range 8 {
		rs := td.ResourceSpans().AppendEmpty()
		svc := fmt.Sprintf("svc-%d", r)
		if r == 5 {
			svc = poison
		}
		rs.Resource().Attributes().PutStr("service.name", svc)
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := range 8 {
			s := spans.AppendEmpty()
			s.SetTraceID(pcommon.TraceID{1, byte(r), byte(i)})
			s.SetSpanID(pcommon.SpanID{2, byte(r), byte(i)})
			s.SetName(fmt.Sprintf("span-%d-%d", r, i))
		}
	}
	require.NoError(t, e.pushTraces(context.Background(), td))
	assert.Len(t, w.stored, 56)
	for _, r := range w.stored {
		assert.NotEqual(t, poison, r.resource["service.name"])
	}
	assert.LessOrEqual(t, w.writeCount(), maxWrites(64))
	assert.Equal(t, int64(8), counted(t, tt, "tracesift_store_records_rejected", "traces"))
}

// A store that refuses everything (its tables not matching) costs a
// bounded number of writes a batch, not two a record, and the batch fails
// permanently, so that the exporter helper counts and logs it too.
func TestBatchRefusedWholeIsBoundedAndFails(t *testing.T) {
	w := &refusingWriter{refuseAll: true}
	e, tt := testExporter(t, w, "traces")
	td := ptrace.NewTraces()
	for r := range 256 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", r))
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := range 4 {
			s := spans.AppendEmpty()
			s.SetTraceID(pcommon.TraceID{1, byte(r), byte(i)})
			s.SetSpanID(pcommon.SpanID{2, byte(r), byte(i)})
		}
	}
	err := e.pushTraces(context.Background(), td)
	require.ErrorIs(t, err, refusal)
	assert.True(t, consumererror.IsPermanent(err))
	assert.LessOrEqual(t, w.writeCount(), 1+2*isolatedRefusals*10)
	assert.Equal(t, int64(1024), counted(t, tt, "tracesift_store_records_rejected", "traces"))
	assert.Zero(t, counted(t, tt, "tracesift_store_records_written", "traces"))
}

// Halves are copies: the batch is left as it was (the exporter does not
// mutate its input), and each half keeps its records' resources and scopes,
// schema URLs included.
func TestSplitTracesCopiesResourcesAndScopes(t *testing.T) {
	td := tenSpans()
	before, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	first, rest := splitTraces(td, 5)
	after, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	assert.Equal(t, 5, first.SpanCount())
	assert.Equal(t, 5, rest.SpanCount())
	// span 4 starts the second resource: the first half holds a resource of
	// it, the rest the same resource with its other spans and both scopes.
	require.Equal(t, 2, first.ResourceSpans().Len())
	require.Equal(t, 1, rest.ResourceSpans().Len())
	for _, rs := range []ptrace.ResourceSpans{first.ResourceSpans().At(1), rest.ResourceSpans().At(0)} {
		assert.Equal(t, map[string]any{"service.name": "web", "host.name": "h2"}, rs.Resource().Attributes().AsRaw())
		assert.Equal(t, "https://opentelemetry.io/schemas/1.26.0", rs.SchemaUrl())
	}
	assert.Equal(t, "span-5", rest.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Name())
	assert.Equal(t, 2, rest.ResourceSpans().At(0).ScopeSpans().Len())
}

// dedupConn is a store.Conn that keeps each table's inserts and drops an
// insert it already holds, as the tables do by deduplication token; it
// refuses inserts into refuseTable that hold poison.
type dedupConn struct {
	mu          sync.Mutex
	refuseTable string
	tried       map[string]int
	kept        map[string][][]byte
}

func (c *dedupConn) Insert(_ context.Context, table string, _ store.Format, rows []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tried[table]++
	if table == c.refuseTable && bytes.Contains(rows, []byte(poison)) {
		return refusal
	}
	for _, k := range c.kept[table] {
		if bytes.Equal(k, rows) {
			return nil
		}
	}
	c.kept[table] = append(c.kept[table], bytes.Clone(rows))
	return nil
}

func (*dedupConn) Exec(context.Context, string, store.Params) error { return nil }
func (*dedupConn) Query(context.Context, string, store.Params, func([]byte) error) error {
	return nil
}
func (*dedupConn) Close() error { return nil }

// When a table written after the spans refuses a row (here a RED row the
// sampler sent along), the batch is written again table by table: the
// spans and their trace summaries, already stored, are the same inserts
// again, which the tables drop, so no trace counts its spans twice; only
// the refused table's rows are halved.
func TestRefusalAfterTheSpansWritesThemOnce(t *testing.T) {
	conn := &dedupConn{refuseTable: "db.red", tried: map[string]int{}, kept: map[string][][]byte{}}
	e, tt := testExporter(t, store.NewWriter(conn, "db"), "traces")
	td := tenSpans()
	td.ResourceSpans().At(1).ScopeSpans().At(0).Spans().At(2).SetName("span-6") // the spans are all fine here
	now := uint64(time.Now().UnixNano())
	var red []model.RED
	for _, svc := range []string{"svc-a", "svc-b", poison, "svc-c"} {
		red = append(red, model.RED{TimeUnixNano: now, Service: svc, Operation: "GET /", Requests: 3})
	}
	store.AppendAnalysis(td, store.Analysis{RED: red})

	require.NoError(t, e.pushTraces(context.Background(), td))
	assert.Equal(t, 2, conn.tried["db.spans"], "the spans are written again")
	assert.Len(t, conn.kept["db.spans"], 1, "as the same insert")
	assert.Len(t, conn.kept["db.trace_summaries"], 1)
	allRED := bytes.Join(conn.kept["db.red"], nil)
	for _, svc := range []string{"svc-a", "svc-b", "svc-c"} {
		assert.Equal(t, 1, bytes.Count(allRED, []byte(svc)), svc)
	}
	assert.NotContains(t, string(allRED), poison)
	assert.Equal(t, int64(1), counted(t, tt, "tracesift_store_records_rejected", "traces"))
	assert.Equal(t, int64(10), counted(t, tt, "tracesift_store_records_written", "traces"))
}

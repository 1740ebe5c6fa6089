package embedded

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/store"
)

// randomBatches makes n batches of spans of 60 traces: 1–12 spans each over
// up to four services (two hosts each), some without a root, some with two,
// some with errors, each trace's spans spread over the batches and over
// resource blocks, as a sampler emitting partial traces would.
func randomBatches(r *rand.Rand, n int, start time.Time) []ptrace.Traces {
	out := make([]ptrace.Traces, n)
	blocks := make([]map[string]ptrace.SpanSlice, n)
	for b := range out {
		out[b], blocks[b] = ptrace.NewTraces(), map[string]ptrace.SpanSlice{}
	}
	services := []string{"web", "cart", "pay", "db"}
	for tr := range 60 {
		id := pcommon.TraceID{0xc0, byte(tr), 15: 1}
		spans := 1 + r.IntN(12)
		for s := range spans {
			svc, host := services[r.IntN(len(services))], fmt.Sprint("node-", r.IntN(2))
			b := r.IntN(n)
			key := svc + "/" + host
			ss, ok := blocks[b][key]
			if !ok {
				rs := out[b].ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", svc)
				rs.Resource().Attributes().PutStr("host.name", host)
				ss = rs.ScopeSpans().AppendEmpty().Spans()
				blocks[b][key] = ss
			}
			sp := ss.AppendEmpty()
			sp.SetTraceID(id)
			sp.SetSpanID(pcommon.SpanID{byte(tr), byte(s), 1})
			if s > 0 && r.IntN(8) > 0 { // most spans have a parent; some traces two roots
				sp.SetParentSpanID(pcommon.SpanID{byte(tr), 0, 1})
			}
			sp.SetName(fmt.Sprint("op-", r.IntN(5)))
			at := start.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Duration(r.IntN(3000)) * time.Millisecond)))
			if r.IntN(10) == 0 {
				sp.Status().SetCode(ptrace.StatusCodeError)
			}
		}
	}
	return out
}

// The writer's trace_summaries rows say of each trace what the engine
// computes from its stored spans, with the definition of the materialized
// view that filled them before schema 008; and every span's resource is
// read back.
func TestTraceRowsMatchTheSpans(t *testing.T) {
	ctx := context.Background()
	const db = "ts_tracerows"
	freshDatabase(t, db)
	require.NoError(t, store.ApplySchema(ctx, conn, db))
	w := store.NewWriter(conn, db)
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, td := range randomBatches(rand.New(rand.NewPCG(7, 8)), 3, start) {
		_, err := w.WriteTraces(ctx, td)
		require.NoError(t, err)
	}

	fromSpans := queryRows(t, `SELECT trace_id, toString(min(timestamp)) AS first,
		toString(max(addNanoseconds(timestamp, duration_ns))) AS last,
		maxIf(toString(service), substring(ids, 9, 8) = unhex('0000000000000000')) AS root_service,
		maxIf(toString(name), substring(ids, 9, 8) = unhex('0000000000000000')) AS root_name,
		count() AS spans, countIf(status_code = 'ERROR') AS errors,
		arraySort(groupUniqArray(toString(service))) AS services
		FROM `+db+`.spans GROUP BY trace_id ORDER BY trace_id`, nil)
	require.Len(t, fromSpans, 60)
	fromSummaries := queryRows(t, `SELECT trace_id, toString(min(start)) AS first,
		toString(max(addNanoseconds(start, duration_ns))) AS last,
		max(toString(root_service)) AS root_service, max(toString(root_name)) AS root_name,
		sum(span_count) AS spans, sum(error_count) AS errors,
		arraySort(arrayMap(s -> toString(s), groupUniqArrayArray(services))) AS services
		FROM `+db+`.trace_summaries GROUP BY trace_id ORDER BY trace_id`, nil)
	assert.Equal(t, fromSpans, fromSummaries, "trace_summaries")

	// Eight resources (four services on two hosts), each stored once.
	assert.EqualValues(t, 8, count(t, "SELECT uniqExact(resource_id) AS n FROM "+db+".resources", nil))
	assert.EqualValues(t, 0, count(t, "SELECT count() AS n FROM "+db+".spans WHERE resource_id = 0 OR length(resource) > 0", nil),
		"span rows name their resource and do not carry it")
	r := store.NewReader(conn, db, store.ReaderConfig{})
	for _, tr := range []byte{0, 17, 59} {
		got, err := r.GetTrace(ctx, pcommon.TraceID{0xc0, tr, 15: 1}.String())
		require.NoError(t, err)
		for _, s := range got.Spans {
			assert.Equal(t, map[string]string{"service.name": s.Service, "host.name": s.Host}, s.Resource, "span %s", s.SpanID)
		}
	}
}

// failingConn fails the first insert into one table, as a store that went
// away in the middle of a write would.
type failingConn struct {
	store.Conn
	table  string
	failed bool
}

func (c *failingConn) Insert(ctx context.Context, table string, f store.Format, rows []byte) error {
	if table == c.table && !c.failed {
		c.failed = true
		return errors.New("dial tcp: connection refused")
	}
	return c.Conn.Insert(ctx, table, f, rows)
}

// A write that fails after some of its inserts went through, retried with
// the same batch, leaves each table as one successful write would.
func TestWriteFailingMidwayRetriesToOneCopy(t *testing.T) {
	ctx := context.Background()
	td := randomBatches(rand.New(rand.NewPCG(9, 10)), 1, time.Now().Add(-time.Hour))[0]
	want := map[string]uint64{}
	for _, table := range []string{"", "resources", "spans", "trace_summaries"} {
		db := "ts_midway_" + table
		if table == "" {
			db = "ts_midway_none"
		}
		freshDatabase(t, db)
		require.NoError(t, store.ApplySchema(ctx, conn, db))
		w := store.NewWriter(&failingConn{Conn: conn, table: db + "." + table}, db)
		_, err := w.WriteTraces(ctx, td)
		if table != "" {
			require.Error(t, err, "the insert into %s fails", table)
			_, err = w.WriteTraces(ctx, td)
		}
		require.NoError(t, err)
		got := tableCounts(t, db)
		if table == "" {
			want = got
			require.NotZero(t, want["spans"])
			continue
		}
		assert.Equal(t, want, got, "after a failed insert into %s and a retry", table)
	}
}

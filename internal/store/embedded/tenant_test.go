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
	"github.com/tracesift/tracesift/internal/tenant"
)

// Tenants on the real engine: rows of several tenants with the same ids, each
// read by its own tenant alone; rows stored before tenants are the default
// tenant's.

// tenantBase is when the tenants' traces start: on the hour, so that an
// hour's RED is read from the rollup.
var tenantBase = time.Date(2026, 11, 30, 17, 0, 0, 0, time.UTC)

// tenantTrace is trace 0x71 as tenant tn (index k) sends it, with its
// analysis: the same ids, services and resources in every tenant but for
// the names that say whose it is and the numbers (k+1 …).
func tenantTrace(td ptrace.Traces, a *store.Analysis, tn string, k int) {
	for i, s := range []struct{ service, host, name string }{
		{"shop", "shop-1", "GET /" + tn},
		{"pay-" + tn, "pay-1", "charge"},
	} {
		rs := td.ResourceSpans().AppendEmpty()
		attrs := rs.Resource().Attributes()
		attrs.PutStr("service.name", s.service)
		attrs.PutStr("host.name", s.host)
		attrs.PutStr("deployment.environment", "prod")
		tenant.Stamp(attrs, tn)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(traceID(0x71))
		sp.SetSpanID(spanID(byte(i + 1)))
		if i > 0 {
			sp.SetParentSpanID(spanID(1))
		}
		sp.SetName(s.name)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(tenantBase.Add(time.Duration(i) * time.Millisecond)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(tenantBase.Add(100 * time.Millisecond)))
		sp.Attributes().PutStr("order.id", "42")
	}
	field := tn // the model's Tenant: empty for the default
	if tn == tenant.Default {
		field = ""
	}
	id, at := traceID(0x71).String(), uint64(tenantBase.UnixNano())
	a.Findings = append(a.Findings, model.Finding{TraceID: id, TimeUnixNano: at, Kind: "retry_fanout", Service: "shop",
		Subject: "shop → pay", Value: float64(k + 1), Summary: tn, Tenant: field})
	a.Clocks = append(a.Clocks, model.ClockOffset{TraceID: id, TimeUnixNano: at, Host: "pay-1", OffsetNanos: int64(k+1) * 1000,
		Source: "estimate", Tenant: field})
	for _, d := range []time.Duration{0, 10 * time.Second} {
		a.RED = append(a.RED, model.RED{TimeUnixNano: uint64(tenantBase.Add(d).UnixNano()), Service: "shop", Operation: "GET /",
			Instance: "shop-1", Dimensions: map[string]string{}, Requests: uint64(10 * (k + 1)), Errors: uint64(k),
			Latency: map[int32]uint64{100: uint64(10 * (k + 1))}, ErrorLatency: map[int32]uint64{100: uint64(k)}, Tenant: field})
	}
	a.Pairs = append(a.Pairs, model.ClockPair{TimeUnixNano: uint64(tenantBase.Add(10 * time.Second).UnixNano()), A: "pay-1",
		B: "shop-1", OffsetNanos: int64(k+1) * 1e6, Samples: k + 1, Tenant: field})
}

// tenantLogs is a line of trace 0x71, alike in every tenant but for its
// tenant.
func tenantLogs(tn string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "pay")
	tenant.Stamp(rl.Resource().Attributes(), tn)
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(tenantBase.Add(50 * time.Millisecond)))
	lr.SetTraceID(traceID(0x71))
	lr.SetSpanID(spanID(2))
	lr.Body().SetStr("card declined")
	return ld
}

var tenantNames = []string{tenant.Default, "acme", "globex"}

func TestTenantsReadTheirOwn(t *testing.T) {
	ctx := context.Background()
	const tdb = "ts_tenants"
	freshDatabase(t, tdb)
	require.NoError(t, store.ApplySchema(ctx, conn, tdb))
	w := store.NewWriter(conn, tdb)

	// The tenants' traces in one batch, their lines in batches alike but
	// for the tenant (as inserts, they are not one repeated).
	td, a := ptrace.NewTraces(), store.Analysis{}
	for k, tn := range tenantNames {
		tenantTrace(td, &a, tn, k)
	}
	store.AppendAnalysis(td, a)
	st, err := w.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.Equal(t, 6, st.Written)
	for _, tn := range tenantNames {
		_, err := w.WriteLogs(ctx, tenantLogs(tn))
		require.NoError(t, err)
	}

	r := store.NewReader(conn, tdb, store.ReaderConfig{LogWindow: time.Minute})
	checkTenants(t, r)
	// Merged, the tables that merge rows of one key (resources, the RED
	// rollup) keep each tenant's apart.
	for _, table := range []string{"resources", "red_rollup", "spans", "trace_summaries", "logs", "trace_facts"} {
		require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+tdb+"."+table+" FINAL", nil), table)
	}
	checkTenants(t, store.NewReader(conn, tdb, store.ReaderConfig{LogWindow: time.Minute}))
	rows := queryRows(t, "SELECT tenant, count() AS n FROM "+tdb+".resources GROUP BY tenant ORDER BY tenant", nil)
	assert.Equal(t, "[map[n:3 tenant:acme] map[n:3 tenant:default] map[n:3 tenant:globex]]", fmt.Sprint(rows),
		"each tenant's two resources of spans and one of logs")
}

// checkTenants reads the store of TestTenantsReadTheirOwn as each tenant,
// as none (the default) and as a tenant with nothing stored.
func checkTenants(t *testing.T, r *store.Reader) {
	t.Helper()
	id := traceID(0x71).String()
	from, to := tenantBase.Add(-time.Minute).UnixNano(), tenantBase.Add(time.Minute).UnixNano()
	hour := store.REDFilter{Service: "shop", GroupBy: "instance", Start: tenantBase.UnixNano(),
		End: tenantBase.Add(time.Hour - 1).UnixNano()}
	edge := hour
	edge.End = tenantBase.Add(5 * time.Second).UnixNano() // the 10 s rows

	ctxs := map[string]context.Context{"": context.Background()}
	for _, tn := range append(tenantNames, "initech") {
		ctxs[tn] = tenant.NewContext(context.Background(), tn)
	}
	for name, ctx := range ctxs {
		k := -1 // the tenant's index; none stored for initech
		for i, tn := range tenantNames {
			if tn == name || name == "" && tn == tenant.Default {
				k = i
			}
		}
		tn := tenant.FromContext(ctx)
		t.Run(fmt.Sprintf("as %q", name), func(t *testing.T) {
			tr, err := r.GetTrace(ctx, id)
			found, serr := r.SearchTraces(ctx, store.TracesFilter{Start: from, End: to, Limit: 10})
			require.NoError(t, serr)
			byAttr, serr := r.SearchTraces(ctx, store.TracesFilter{Start: from, End: to, Limit: 10,
				Attributes: []store.AttributeFilter{{Key: "order.id", Value: "42"}}})
			require.NoError(t, serr)
			logs, serr := r.SearchLogs(ctx, store.LogsFilter{Words: []string{"declined"}, Start: from, End: to, Limit: 10})
			require.NoError(t, serr)
			traceLogs, serr := r.SearchLogs(ctx, store.LogsFilter{TraceID: id, Start: from, End: to, Limit: 10})
			require.NoError(t, serr)
			services, serr := r.Services(ctx, from, to)
			require.NoError(t, serr)
			ops, serr := r.Operations(ctx, "shop", from, to)
			require.NoError(t, serr)
			deps, serr := r.Dependencies(ctx, from, to)
			require.NoError(t, serr)
			sums, serr := r.GetFindingSummaries(ctx, store.FindingsFilter{Start: from, End: to, Limit: 10})
			require.NoError(t, serr)
			redHour, serr := r.RED(ctx, hour)
			require.NoError(t, serr)
			redEdge, serr := r.RED(ctx, edge)
			require.NoError(t, serr)
			tallies, serr := r.REDTallies(ctx, hour, 100)
			require.NoError(t, serr)
			pairs, serr := r.ClockPairs(ctx, from, to)
			require.NoError(t, serr)

			if k < 0 {
				require.ErrorIs(t, err, store.ErrNotFound, "another tenant's trace is one that does not exist")
				assert.Empty(t, found)
				assert.Empty(t, byAttr)
				assert.Empty(t, logs)
				assert.Empty(t, traceLogs)
				assert.Empty(t, services)
				assert.Empty(t, ops)
				assert.Empty(t, deps)
				assert.Empty(t, sums)
				assert.Empty(t, redHour)
				assert.Empty(t, redEdge)
				assert.Empty(t, tallies)
				assert.Empty(t, pairs)
				return
			}
			require.NoError(t, err)
			require.Len(t, tr.Spans, 2)
			assert.Equal(t, "GET /"+tn, tr.Spans[0].Name)
			assert.Equal(t, "pay-"+tn, tr.Spans[1].Service)
			assert.Equal(t, map[string]string{"service.name": "shop", "host.name": "shop-1", "deployment.environment": "prod"},
				tr.Spans[0].Resource, "the tenant is not among the resource's attributes")
			require.Len(t, tr.Logs, 1)
			assert.Equal(t, "card declined", tr.Logs[0].Body)
			assert.Equal(t, []model.Finding{{TraceID: id, Kind: "retry_fanout", SpanIDs: []string{}, Service: "shop",
				Subject: "shop → pay", Value: float64(k + 1), Summary: tn}}, tr.Findings)
			assert.Equal(t, map[string]int64{"pay-1": int64(k+1) * 1000}, tr.ClockOffsets)
			assert.Equal(t, []model.ClockPair{{A: "pay-1", B: "shop-1", OffsetNanos: int64(k+1) * 1e6, Samples: k + 1}}, tr.SkewedPairs)

			want := []model.TraceSummary{{TraceID: id, RootService: "shop", RootName: "GET /" + tn,
				StartUnixNano: uint64(tenantBase.UnixNano()), DurationNano: uint64(100 * time.Millisecond), SpanCount: 2,
				Services: []string{"pay-" + tn, "shop"}}}
			assert.Equal(t, want, found)
			assert.Equal(t, want, byAttr)
			require.Len(t, logs, 1)
			assert.True(t, logs[0].Kept, "the tenant's trace is stored")
			assert.Len(t, traceLogs, 1)
			assert.Equal(t, []string{"pay-" + tn, "shop"}, services)
			assert.Equal(t, []string{"GET /" + tn}, ops)
			require.Len(t, deps, 1)
			assert.Equal(t, model.Dependency{Parent: "shop", Child: "pay-" + tn, Calls: 1}, model.Dependency{
				Parent: deps[0].Parent, Child: deps[0].Child, Calls: deps[0].Calls})
			require.Len(t, sums, 1)
			assert.Equal(t, uint64(1), sums[0].Count)
			assert.InDelta(t, float64(k+1), sums[0].MaxValue, 0)
			require.Len(t, redHour, 1)
			assert.Equal(t, uint64(20*(k+1)), redHour[0].Requests, "the tenant's series, two intervals")
			assert.Equal(t, uint64(2*k), redHour[0].Errors)
			require.Len(t, redEdge, 1)
			assert.Equal(t, uint64(10*(k+1)), redEdge[0].Requests, "the first interval")
			require.Len(t, tallies, 1)
			assert.Equal(t, uint64(20*(k+1)), tallies[0].Requests)
			assert.Equal(t, []model.ClockPair{{TimeUnixNano: uint64(tenantBase.Add(10 * time.Second).UnixNano()), A: "pay-1",
				B: "shop-1", OffsetNanos: int64(k+1) * 1e6, Samples: k + 1}}, pairs)
		})
	}
}

// Rows stored by the schema before tenants (version 14) are the default
// tenant's once the store is upgraded: read by a caller of no tenant (or
// the default), by no other; the RED rollup of before and a tenant's rows
// of the same series, merged, stay apart.
func TestRowsBeforeTenantsAreTheDefaults(t *testing.T) {
	ctx := context.Background()
	const tdb = "ts_tenants_before"
	freshDatabase(t, tdb)
	migs, err := store.Migrations(tdb)
	require.NoError(t, err)
	before := 0
	for i, m := range migs {
		if m.Name == "014_red_rollups" {
			before = i + 1
		}
	}
	require.Equal(t, 14, before)
	schemaUpTo(t, tdb, before)
	oldColumns := columnsOf(t, tdb)
	require.NotContains(t, oldColumns, "spans.tenant")
	writeOldRows(t, tdb)
	redAt := time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC)
	secs := redAt.Unix()
	for _, stmt := range []string{
		fmt.Sprintf("INSERT INTO %s.red (timestamp, service, operation, instance, dimensions, requests, errors, latency, error_latency) "+
			"VALUES (toDateTime(%d), 'cat', 'GET /cat', 'cat-1', map(), 7, 1, map(100, 7), map(100, 1))", tdb, secs),
		fmt.Sprintf("INSERT INTO %s.clock_pairs (timestamp, host_a, host_b, offset_ns, samples) VALUES (toDateTime(%d), 'db-1', 'web-1', -5, 3)",
			tdb, secs),
		fmt.Sprintf("INSERT INTO %s.resources (resource_id, last_seen, attributes) VALUES (77, toDateTime(%d), map('service.name', 'billing'))",
			tdb, secs),
		fmt.Sprintf("INSERT INTO %s.spans (timestamp, trace_id, span_id, name, kind, service, duration_ns, status_code, resource_id) "+
			"VALUES (toDateTime64(%d, 9), '%s', '%s', 'invoice', 'server', 'billing', 1000, 'UNSET', 77)", tdb, secs, traceID(0x63), spanID(1)),
	} {
		require.NoError(t, conn.Exec(ctx, stmt, nil))
	}

	require.NoError(t, store.ApplySchema(ctx, conn, tdb))
	assert.Equal(t, buildSchema(t), recordedVersions(t, tdb))
	checkNewColumnDefaults(t, tdb, oldColumns)
	for _, table := range []string{"spans", "logs", "findings", "trace_clock", "trace_summaries", "resources", "red", "red_rollup",
		"clock_pairs"} {
		n := queryRows(t, "SELECT countIf(tenant = 'default') AS d, count() AS n FROM "+tdb+"."+table, nil)[0]
		assert.NotEqual(t, "0", fmt.Sprint(n["n"]), "%s: rows written before", table)
		assert.Equal(t, n["n"], n["d"], "%s: the rows written before are the default tenant's", table)
	}

	// Read as none and as the default, through every read; as another
	// tenant, not at all.
	checkOldRowsRead(t, tdb, oldColumns)
	r := store.NewReader(conn, tdb, store.ReaderConfig{LogWindow: time.Minute})
	def, acme := tenant.NewContext(ctx, tenant.Default), tenant.NewContext(ctx, "acme")
	for _, c := range []context.Context{ctx, def} {
		tr, err := r.GetTrace(c, traceID(0x63).String())
		require.NoError(t, err)
		require.Len(t, tr.Spans, 1)
		assert.Equal(t, map[string]string{"service.name": "billing"}, tr.Spans[0].Resource, "the resource written before")
	}
	_, err = r.GetTrace(acme, traceID(0x61).String())
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = r.GetTrace(acme, traceID(0x63).String())
	require.ErrorIs(t, err, store.ErrNotFound)
	from, to := migrationBase.Add(-time.Minute).UnixNano(), migrationBase.Add(time.Minute).UnixNano()
	found, err := r.SearchTraces(acme, store.TracesFilter{Start: from, End: to, Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, found)
	logs, err := r.SearchLogs(acme, store.LogsFilter{Words: []string{"acquirer"}, Start: from, End: to, Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, logs)
	sums, err := r.GetFindingSummaries(acme, store.FindingsFilter{Start: from, End: to, Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, sums)
	services, err := r.Services(acme, from, to)
	require.NoError(t, err)
	assert.Empty(t, services)
	pairs, err := r.ClockPairs(def, redAt.UnixNano(), redAt.Add(time.Minute).UnixNano())
	require.NoError(t, err)
	assert.Len(t, pairs, 1)
	pairs, err = r.ClockPairs(acme, redAt.UnixNano(), redAt.Add(time.Minute).UnixNano())
	require.NoError(t, err)
	assert.Empty(t, pairs)

	// The RED of before, from the rollup (the hour) and the rows (its
	// first seconds); acme's of the same series, written since, merged
	// with it, apart from it.
	require.NoError(t, store.NewWriter(conn, tdb).WriteRED(ctx, []model.RED{{TimeUnixNano: uint64(redAt.UnixNano()), Service: "cat",
		Operation: "GET /cat", Instance: "cat-1", Dimensions: map[string]string{}, Requests: 5, Latency: map[int32]uint64{100: 5},
		ErrorLatency: map[int32]uint64{}, Tenant: "acme"}}))
	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+tdb+".red_rollup FINAL", nil))
	hour := store.REDFilter{Service: "cat", GroupBy: "instance", Start: redAt.UnixNano(), End: redAt.Add(time.Hour - 1).UnixNano()}
	edge := hour
	edge.End = redAt.Add(5 * time.Second).UnixNano()
	for _, c := range []struct {
		ctx  context.Context
		want uint64
	}{{ctx, 7}, {def, 7}, {acme, 5}} {
		for _, f := range []store.REDFilter{hour, edge} {
			got, err := r.RED(c.ctx, f)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, c.want, got[0].Requests, "%s", tenant.FromContext(c.ctx))
		}
	}
}

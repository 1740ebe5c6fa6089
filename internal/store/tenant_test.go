package store

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// tenantBatch is one trace and one log line of tenant t (none: the default),
// alike for every tenant but for it.
func tenantBatch(t string) (ptrace.Traces, plog.Logs) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "shop")
	tenant.Stamp(rs.Resource().Attributes(), t)
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{1})
	sp.SetStartTimestamp(1_700_000_000_000_000_000)
	AppendAnalysis(td, Analysis{
		Findings: []model.Finding{{TraceID: "01000000000000000000000000000000", TimeUnixNano: 1_700_000_000_000_000_000, Kind: "k", Tenant: t}},
		Clocks:   []model.ClockOffset{{TraceID: "01000000000000000000000000000000", TimeUnixNano: 1_700_000_000_000_000_000, Host: "h", Tenant: t}},
		RED:      []model.RED{{TimeUnixNano: 1_700_000_000_000_000_000, Service: "shop", Requests: 1, Tenant: t}},
		Pairs:    []model.ClockPair{{TimeUnixNano: 1_700_000_000_000_000_000, A: "a", B: "b", Tenant: t}},
	})
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "shop")
	tenant.Stamp(rl.Resource().Attributes(), t)
	rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("line")
	return td, ld
}

// Every row the writer makes carries its tenant in the tenant column (the
// default for none), not among the resource's attributes; batches that
// differ in their tenant alone make other rows, so another insert token.
func TestRowsCarryTheirTenant(t *testing.T) {
	tables := []string{"db.spans", "db.trace_summaries", "db.resources", "db.logs", "db.trace_facts",
		"db.red", "db.clock_pairs"}
	inserts := map[string]map[string][]byte{} // by tenant, table
	for _, tn := range []string{"", tenant.Default, "acme", "globex"} {
		td, ld := tenantBatch(tn)
		c := &captureConn{}
		w := NewWriter(c, "db")
		_, err := w.WriteTraces(context.Background(), td)
		require.NoError(t, err)
		_, err = w.WriteLogs(context.Background(), ld)
		require.NoError(t, err)
		want := tn
		if want == "" {
			want = tenant.Default
		}
		inserts[tn] = map[string][]byte{}
		for _, table := range tables {
			require.Len(t, c.inserts[table], 1, table)
			block := c.inserts[table][0]
			inserts[tn][table] = block
			rows := decodeNative(t, block)
			if table == "db.trace_facts" {
				require.Len(t, rows, 2, "a finding and a clock offset")
			} else {
				require.Len(t, rows, 1, table)
			}
			for _, row := range rows {
				assert.Equal(t, want, row["tenant"], "%s of tenant %q", table, tn)
				for _, col := range []string{"attributes", "resource"} {
					if m, ok := row[col].(map[string]any); ok && table != "db.spans" {
						assert.NotContains(t, m, tenant.Attribute, "%s.%s: the tenant is a column", table, col)
					}
				}
			}
		}
	}
	for _, table := range tables {
		assert.Equal(t, inserts[""][table], inserts[tenant.Default][table], "%s: no tenant is the default", table)
		for _, pair := range [][2]string{{"", "acme"}, {"acme", "globex"}} {
			a, b := inserts[pair[0]][table], inserts[pair[1]][table]
			assert.NotEqual(t, insertToken(a), insertToken(b), "%s: tenants %q and %q, one token", table, pair[0], pair[1])
		}
	}
	// A resource alike in two tenants has two ids; the default's is the id
	// it had before tenants.
	id := func(tn string) json.Number {
		return decodeNative(t, inserts[tn]["db.resources"])[0]["resource_id"].(json.Number)
	}
	assert.NotEqual(t, id("acme"), id("globex"))
	assert.NotEqual(t, id(""), id("acme"))
	keys, values := appendNativeString(nil, "service.name"), appendNativeString(nil, "shop")
	assert.Equal(t, json.Number(uintText(resourceID(keys, values, 1, nil))), id(""))
}

func uintText(v uint64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Two tenants' traces of one id in one batch are two traces: a summary each.
func TestTraceSummariesByTenant(t *testing.T) {
	td := ptrace.NewTraces()
	for _, tn := range []string{"acme", "", "acme", "globex"} {
		a, _ := tenantBatch(tn)
		a.ResourceSpans().At(0).CopyTo(td.ResourceSpans().AppendEmpty())
	}
	w := writeTraces(t, td)
	var got []any
	for _, row := range decodeNative(t, w.summaries) {
		got = append(got, []any{row["tenant"], row["trace_id"], row["span_count"]})
	}
	assert.Equal(t, []any{
		[]any{"acme", "01000000000000000000000000000000", json.Number("2")},
		[]any{"default", "01000000000000000000000000000000", json.Number("1")},
		[]any{"globex", "01000000000000000000000000000000", json.Number("1")},
	}, got)
	assert.Len(t, decodeNative(t, w.groups), 3, "a resource per tenant")
}

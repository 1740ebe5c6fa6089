package tailsampler

import (
	"context"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tenant"
)

// consumeAs hands td over as tenant's (tenant.Default: a request without
// tenancy).
func (h *harness) consumeAs(tn string, td ptrace.Traces) {
	h.t.Helper()
	ctx := context.Background()
	if tn != tenant.Default {
		ctx = tenant.NewContext(ctx, tn)
	}
	require.NoError(h.t, h.p.ConsumeTraces(ctx, td))
}

// analysisRows records what the sampler appends for the store, as it made
// it (the store's encoding of the tenant is the store's).
type analysisRows struct {
	mu  sync.Mutex
	all store.Analysis
}

func captureAnalysis(t *testing.T) *analysisRows {
	rows := &analysisRows{}
	orig := appendAnalysis
	appendAnalysis = func(td ptrace.Traces, a store.Analysis) {
		rows.mu.Lock()
		rows.all.Findings = append(rows.all.Findings, a.Findings...)
		rows.all.Clocks = append(rows.all.Clocks, a.Clocks...)
		rows.all.Pairs = append(rows.all.Pairs, a.Pairs...)
		rows.all.RED = append(rows.all.RED, a.RED...)
		rows.mu.Unlock()
		orig(td, a)
	}
	t.Cleanup(func() { appendAnalysis = orig })
	return rows
}

// keptByTenant indexes the kept spans by the tenant their resource is
// stamped with, then trace id; analysis resources are left out.
func keptByTenant(t *testing.T, h *harness) map[string]map[pcommon.TraceID][]pcommon.SpanID {
	out := map[string]map[pcommon.TraceID][]pcommon.SpanID{}
	for _, td := range h.sink.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			if store.IsAnalysis(rs) {
				continue
			}
			attrs := rs.Resource().Attributes()
			tn := tenant.Of(attrs)
			if v, ok := attrs.Get(tenant.Attribute); ok {
				assert.NotEqual(t, tenant.Default, v.Str(), "the default tenant is stored as no attribute")
			}
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					if out[tn] == nil {
						out[tn] = map[pcommon.TraceID][]pcommon.SpanID{}
					}
					out[tn][sp.TraceID()] = append(out[tn][sp.TraceID()], sp.SpanID())
				}
			}
		}
	}
	return out
}

// withTenantAttr is td with every resource claiming tenant tn, as a client
// may send it.
func withTenantAttr(td ptrace.Traces, tn string) ptrace.Traces {
	for _, rs := range td.ResourceSpans().All() {
		rs.Resource().Attributes().PutStr(tenant.Attribute, tn)
	}
	return td
}

// Two tenants sending one trace id have two traces, decided apart: only
// the failing one is kept, stamped with its tenant whatever its client
// claimed; a default-tenant request's claim is removed.
func TestTenantsOfOneTraceIDAreApart(t *testing.T) {
	for _, shards := range []int{1, 4} {
		cfg := testConfig()
		cfg.NumShards = shards
		h := newHarness(t, cfg)
		// Trace 1: acme's fails (and claims to be globex's), globex's is
		// healthy. Trace 2: the default tenant's fails (claiming acme),
		// acme's is healthy. The same span ids too.
		h.consumeAs("acme", withTenantAttr(request(t, "svc",
			spanSpec{trace: 1, span: 1, dur: time.Millisecond},
			spanSpec{trace: 1, span: 2, parent: 1, dur: time.Millisecond, err: true}), "globex"))
		h.consumeAs("globex", request(t, "svc",
			spanSpec{trace: 1, span: 1, dur: time.Millisecond},
			spanSpec{trace: 1, span: 2, parent: 1, dur: time.Millisecond}))
		h.consumeAs(tenant.Default, withTenantAttr(request(t, "svc",
			spanSpec{trace: 2, span: 1, dur: time.Millisecond, err: true}), "acme"))
		h.consumeAs("acme", request(t, "svc", spanSpec{trace: 2, span: 1, dur: time.Millisecond}))
		h.decideAfterWait()

		assert.EqualValues(t, 4, h.counter("otelcol_tracesift_sampler_traces_decided"), "four traces")
		assert.EqualValues(t, 2, h.counter("otelcol_tracesift_sampler_traces_decided", attribute.String("reason", "error")))
		got := keptByTenant(t, h)
		assert.Equal(t, map[string]map[pcommon.TraceID][]pcommon.SpanID{
			"acme":         {tid(1): {sid(1), sid(2)}},
			tenant.Default: {tid(2): {sid(1)}},
		}, got, "shards=%d", shards)

		// Late spans follow their own trace's decision: acme's trace 1 is
		// kept, globex's dropped.
		h.sink.Reset()
		h.consumeAs("globex", request(t, "svc", spanSpec{trace: 1, span: 3, parent: 1, dur: time.Millisecond}))
		h.consumeAs("acme", request(t, "svc", spanSpec{trace: 1, span: 4, parent: 1, dur: time.Millisecond}))
		h.barrier()
		assert.Equal(t, map[string]map[pcommon.TraceID][]pcommon.SpanID{"acme": {tid(1): {sid(4)}}},
			keptByTenant(t, h), "shards=%d", shards)
	}
}

// A trace's key is its id XOR its tenant's key, the id itself for the
// default tenant: the decision log records it so, and decisions remembered
// by key are followed by that tenant's late spans only.
func TestDecisionsAreKeyedByTenant(t *testing.T) {
	h := newHarness(t, testConfig())
	log := &decisionRecorder{}
	h.p.decisions = log
	acme := tenant.Key("acme")
	withTenant := func(tn string) context.Context { return tenant.NewContext(context.Background(), tn) }
	consume := func(ctx context.Context, td ptrace.Traces) {
		req, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		require.NoError(t, h.p.ConsumeRawTracesWithReceipt(ctx, req, NewReceipt(h.offset.Add(1), func() {})))
	}
	consume(withTenant("acme"), request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true}))
	consume(context.Background(), request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond}))
	h.decideAfterWait()
	assert.ElementsMatch(t, []Decision{
		{TraceID: keyed(tid(1), &acme), Kept: true, Through: 1},
		{TraceID: tid(1), Kept: false, Through: 2},
	}, log.got)

	// Another sampler decided acme's trace 5 (kept): acme's late span of it
	// follows; the default tenant's trace 5 is a trace of its own.
	require.NoError(t, h.p.Remember(context.Background(), []Decision{{TraceID: keyed(tid(5), &acme), Kept: true, Through: 9}}))
	h.offset.Store(100) // spans read after the decision
	h.sink.Reset()
	consume(withTenant("acme"), request(t, "svc", spanSpec{trace: 5, span: 2, parent: 1, dur: time.Millisecond}))
	consume(context.Background(), request(t, "svc", spanSpec{trace: 5, span: 2, parent: 1, dur: time.Millisecond}))
	h.barrier()
	assert.Equal(t, map[string]map[pcommon.TraceID][]pcommon.SpanID{"acme": {tid(5): {sid(2)}}}, keptByTenant(t, h))
	assert.Len(t, h.p.shards[0].traces, 1, "the default tenant's trace 5 is buffered")
}

// Findings and clock offsets carry their trace's tenant, and the clock-skew
// estimate of one tenant's hosts is not another's with the same names.
func TestAnalysisIsPerTenant(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	cfg.KeepClockSkew = true
	rows := captureAnalysis(t)
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))
	// acme's pay-1 runs 300 ms ahead; the default tenant's pay-1, another
	// host of the same name, is in sync. The same trace ids.
	for n := uint64(1); n <= 6; n++ {
		h.consumeAs("acme", checkoutTrace(n, 300*time.Millisecond))
		h.consumeAs(tenant.Default, checkoutTrace(n, 0))
		h.decideAfterWait()
		h.clock.Advance(time.Second)
	}
	h.clock.Advance(time.Minute)
	h.consumeAs("acme", checkoutTrace(7, 300*time.Millisecond))
	h.consumeAs(tenant.Default, checkoutTrace(7, 0))
	h.decideAfterWait()
	require.NoError(t, h.p.Shutdown(context.Background()))

	sixth := tid(6)
	skew := map[string][]model.Finding{}
	for _, f := range rows.all.Findings {
		if f.Kind == analyze.KindClockSkew && f.TraceID == hex.EncodeToString(sixth[:]) {
			skew[f.Tenant] = append(skew[f.Tenant], f)
		}
	}
	require.Len(t, skew["acme"], 1)
	assert.InDelta(t, 300, skew["acme"][0].Value, 1)
	assert.Empty(t, skew[""], "the default tenant's hosts are not acme's")
	retries := map[string]int{}
	for _, f := range rows.all.Findings {
		if f.Kind == analyze.KindRetryFanout {
			retries[f.Tenant]++
		}
	}
	assert.Equal(t, map[string]int{"acme": 7, "": 7}, retries, "each tenant's traces analyzed as theirs")
	require.NotEmpty(t, rows.all.Clocks)
	for _, c := range rows.all.Clocks {
		assert.Equal(t, "acme", c.Tenant, "only acme's clocks are off")
	}
	require.Len(t, rows.all.Pairs, 1)
	assert.Equal(t, "acme", rows.all.Pairs[0].Tenant)
	assert.Equal(t, "pay-1", rows.all.Pairs[0].A)

	// keep_clock_skew: a healthy trace crossing acme's skewed pair is kept
	// for acme only.
	h2 := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))
	for n := uint64(1); n <= 6; n++ {
		h2.consumeAs("acme", checkoutTrace(n, 300*time.Millisecond))
		h2.decideAfterWait()
		h2.clock.Advance(2 * time.Second)
	}
	h2.sink.Reset()
	healthy := func() ptrace.Traces {
		td := checkoutTrace(100, 300*time.Millisecond)
		for _, rs := range td.ResourceSpans().All() {
			for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
				sp.Status().SetCode(ptrace.StatusCodeOk)
			}
		}
		return td
	}
	h2.consumeAs("acme", healthy())
	h2.consumeAs("globex", healthy())
	h2.decideAfterWait()
	kept := keptByTenant(t, h2)
	assert.Contains(t, kept["acme"], tid(100))
	assert.NotContains(t, kept, "globex")
}

// RED counts each tenant's traffic in series of its own, each row carrying
// its tenant.
func TestREDIsPerTenant(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	rows := captureAnalysis(t)
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))
	for n := uint64(1); n <= 3; n++ {
		h.consumeAs("acme", request(t, "cat", spanSpec{trace: n, span: 1, dur: time.Millisecond, err: true}))
		h.consumeAs(tenant.Default, request(t, "cat", spanSpec{trace: n, span: 1, dur: time.Millisecond}))
	}
	h.consumeAs(tenant.Default, request(t, "cat", spanSpec{trace: 9, span: 1, dur: time.Millisecond}))
	h.barrier()
	require.NoError(t, h.p.Shutdown(context.Background()))
	type tally struct{ requests, errors uint64 }
	got := map[string]tally{}
	for _, r := range rows.all.RED {
		require.Equal(t, "cat", r.Service)
		s := got[r.Tenant]
		s.requests += r.Requests
		s.errors += r.Errors
		got[r.Tenant] = s
	}
	assert.Equal(t, map[string]tally{"acme": {3, 3}, "": {4, 0}}, got)
}

// The tenant table gives the default tenant index 0 and its zero key, and
// one index per tenant however often it is asked.
func TestTenantTable(t *testing.T) {
	tt := newTenantTable()
	assert.Zero(t, tt.intern(tenant.Default))
	assert.Zero(t, tt.intern(""))
	a, b := tt.intern("acme"), tt.intern("globex")
	assert.NotEqual(t, a, b)
	assert.Equal(t, a, tt.intern("acme"))
	assert.Equal(t, tenantInfo{name: tenant.Default}, *tt.get(0))
	assert.Equal(t, tenantInfo{name: "acme", key: tenant.Key("acme"), row: "acme"}, *tt.get(a))
	k := tt.get(a).key
	assert.Equal(t, tid(3), keyed(keyed(tid(3), &k), &k))
}

// Traces of several tenants kept in one pass, in any order, are each
// stamped and analyzed as their tenant's.
func TestKeptBatchOfSeveralTenants(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	rows := captureAnalysis(t)
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))
	tenants := []string{tenant.Default, "acme", tenant.Default, "globex", "acme"}
	for i, tn := range tenants {
		h.consumeAs(tn, withTenantAttr(request(t, "svc", spanSpec{trace: uint64(i + 1), span: 1, dur: time.Millisecond, err: true}), "initech"))
	}
	h.decideAfterWait()
	require.Len(t, h.sink.AllTraces(), 1, "one pass, one batch")
	got := keptByTenant(t, h)
	assert.Equal(t, map[string]map[pcommon.TraceID][]pcommon.SpanID{
		tenant.Default: {tid(1): {sid(1)}, tid(3): {sid(1)}},
		"acme":         {tid(2): {sid(1)}, tid(5): {sid(1)}},
		"globex":       {tid(4): {sid(1)}},
	}, got)
	byTrace := map[string]string{}
	for _, f := range rows.all.Findings {
		byTrace[f.TraceID] = f.Tenant
	}
	require.Len(t, byTrace, len(tenants))
	for i, tn := range tenants {
		id := tid(uint64(i + 1))
		want := tn
		if tn == tenant.Default {
			want = ""
		}
		assert.Equal(t, want, byTrace[hex.EncodeToString(id[:])], "trace %d", i+1)
	}
}

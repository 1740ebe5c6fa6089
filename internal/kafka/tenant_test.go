package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tailsampler"
	"github.com/tracesift/tracesift/internal/tenant"
)

func TestTenantHeaderAndKey(t *testing.T) {
	assert.Equal(t, tenant.Default, tenantOf(nil))
	assert.Equal(t, tenant.Default, tenantOf([]kgo.Header{{Key: TenantHeader}}))
	assert.Equal(t, "acme", tenantOf([]kgo.Header{{Key: "other", Value: []byte("x")}, {Key: TenantHeader, Value: []byte("acme")}}))
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	zero := tenant.Key(tenant.Default)
	assert.Equal(t, id, traceKey(id, &zero), "the default tenant's key is the trace id")
	acme := tenant.Key("acme")
	assert.NotEqual(t, id, traceKey(id, &acme))
	assert.Equal(t, id, traceKey(traceKey(id, &acme), &acme))
}

// spansRequest is one root span of trace id on service svc, failed or not.
func spansRequest(t *testing.T, id pcommon.TraceID, failed bool) []byte {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(id)
	sp.SetSpanID(pcommon.SpanID{1})
	sp.SetName("GET /")
	sp.SetKind(ptrace.SpanKindServer)
	now := time.Now()
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Millisecond)))
	if failed {
		sp.Status().SetCode(ptrace.StatusCodeError)
	}
	req, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return req
}

// The gateway produces a request's spans with its tenant (a header) in the
// partition of each trace's key; a sampler reads them as that tenant's, so
// two tenants' traces of one id are decided apart, and records the
// decisions by key in the partition of the trace's spans.
func TestTenantRoundTrip(t *testing.T) {
	ctx := context.Background()
	cfg := startBroker(t, 4)

	// The gateway: acme's trace fails, the default tenant's healthy trace
	// has the same id.
	gw := NewSpanProducer(cfg, zap.NewNop(), func(context.Context, int) {})
	require.NoError(t, gw.Start(ctx, componenttest.NewNopHost()))
	id := pcommon.TraceID{0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	require.NoError(t, gw.ConsumeRawTraces(tenant.NewContext(ctx, "acme"), spansRequest(t, id, true)))
	require.NoError(t, gw.ConsumeRawTraces(ctx, spansRequest(t, id, false)))
	require.NoError(t, gw.Shutdown(ctx))

	acmeKey := tenant.Key("acme")
	keyA := traceKey(id, &acmeKey)
	type produced struct {
		partition int
		key       []byte
		tenant    string
		headers   int
	}
	var got []produced
	for p := range cfg.Partitions {
		conn, err := kgo.DialLeader(ctx, "tcp", cfg.Brokers[0], cfg.Topics.Spans, p)
		require.NoError(t, err)
		first, last, err := conn.ReadOffsets()
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		r := kgo.NewReader(kgo.ReaderConfig{Brokers: cfg.brokers(), Topic: cfg.Topics.Spans, Partition: p, MaxWait: 100 * time.Millisecond})
		for range last - first {
			m, err := r.FetchMessage(ctx)
			require.NoError(t, err)
			got = append(got, produced{m.Partition, m.Key, tenantOf(m.Headers), len(m.Headers)})
		}
		require.NoError(t, r.Close())
	}
	slices.SortFunc(got, func(a, b produced) int { return b.headers - a.headers })
	assert.Equal(t, []produced{
		{partitionOf(keyA[:], cfg.Partitions), keyA[:], "acme", 1},
		{partitionOf(id[:], cfg.Partitions), id[:], tenant.Default, 0},
	}, got)

	// A sampler of the consumer group.
	scfg := tailsampler.NewFactory().CreateDefaultConfig().(*tailsampler.Config)
	scfg.NumShards = 1
	scfg.DecisionWait = 200 * time.Millisecond
	scfg.MaxWait = time.Second
	scfg.BaselineRatio = 0
	scfg.GoMemoryLimit = -1
	sink := new(consumertest.TracesSink)
	log := NewDecisionLog(&cfg, nil)
	defer log.Close()
	s, err := tailsampler.NewReceipted(processor.Settings{ID: component.MustNewID("tracesift_sampler"),
		TelemetrySettings: componenttest.NewNopTelemetrySettings()}, scfg, sink, log)
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, s.Shutdown(ctx)) }()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = NewSamplerConsumer(cfg, GroupConfig{ID: "samplers", SessionTimeout: 10 * time.Second, CommitInterval: time.Second},
			s, 1000, zap.NewNop()).Run(runCtx)
	}()
	defer func() { stop(); <-done }()

	// The decisions, by key, in the partitions of the spans.
	decisions := func() []tailsampler.Decision {
		var all []tailsampler.Decision
		parts := []int{partitionOf(keyA[:], cfg.Partitions), partitionOf(id[:], cfg.Partitions)}
		for _, p := range slices.Compact(slices.Sorted(slices.Values(parts))) {
			ds, err := loadDecisions(ctx, &cfg, p, 100)
			require.NoError(t, err)
			all = append(all, ds...)
		}
		return all
	}
	require.Eventually(t, func() bool { return len(decisions()) >= 2 }, time.Minute, 200*time.Millisecond)
	ds := decisions()
	require.Len(t, ds, 2, "%+v", ds)
	byKey := map[pcommon.TraceID]bool{}
	for _, d := range ds {
		byKey[d.TraceID] = d.Kept
	}
	assert.Equal(t, map[pcommon.TraceID]bool{pcommon.TraceID(keyA): true, id: false}, byKey)

	// Only acme's trace is kept, stamped as acme's.
	var kept []string
	for _, td := range sink.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			if store.IsAnalysis(rs) {
				continue
			}
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					require.Equal(t, id, sp.TraceID())
					kept = append(kept, tenant.Of(rs.Resource().Attributes()))
				}
			}
		}
	}
	assert.Equal(t, []string{"acme"}, kept)
}

package tailsampler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/store"
)

// redRows collects the RED rows the sampler sent, summed by series.
func redRows(h *harness) map[string]model.RED {
	out := map[string]model.RED{}
	for _, td := range h.sink.AllTraces() {
		for _, r := range store.AnalysisOf(td).RED {
			k := fmt.Sprintf("%s|%s|%s|%s", r.Service, r.Operation, r.Instance, r.Dimensions["service.version"])
			sum := out[k]
			sum.Service, sum.Operation, sum.Instance = r.Service, r.Operation, r.Instance
			sum.Requests += r.Requests
			sum.Errors += r.Errors
			if sum.Latency == nil {
				sum.Latency = map[int32]uint64{}
			}
			red.Sketch(sum.Latency).Merge(r.Latency)
			out[k] = sum
		}
	}
	return out
}

// sentFindings are the findings of a kind the sampler sent.
func sentFindings(h *harness, kind string) []model.Finding {
	var out []model.Finding
	for _, td := range h.sink.AllTraces() {
		for _, f := range store.AnalysisOf(td).Findings {
			if f.Kind == kind {
				out = append(out, f)
			}
		}
	}
	return out
}

// RED counts every entry span received, whatever the sampler keeps: the
// dropped healthy traces, the kept ones, late spans; errors are status ERROR
// or a timeout.
func TestREDCountsAllTraffic(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))

	td := ptrace.NewTraces()
	for n := uint64(1); n <= 40; n++ {
		// A root server span on cat-1 or cat-2 with a client and an internal child.
		specs := []spanSpec{
			{trace: n, span: 1, dur: 30 * time.Millisecond, err: n%10 == 0},
			{trace: n, span: 2, parent: 1, dur: 10 * time.Millisecond},
		}
		appendResource(t, td, "cat", specs...)
		rs := td.ResourceSpans().At(td.ResourceSpans().Len() - 1)
		rs.Resource().Attributes().PutStr("service.instance.id", fmt.Sprintf("cat-%d", 1+n%2))
		rs.Resource().Attributes().PutStr("service.version", "1.0")
		rs.ScopeSpans().At(0).Spans().At(0).SetKind(ptrace.SpanKindServer)
		rs.ScopeSpans().At(0).Spans().At(1).SetKind(ptrace.SpanKindClient)
	}
	// A consumer span (not a root) that timed out, on a host with no instance id.
	timedOut := request(t, "worker", spanSpec{trace: 100, span: 5, parent: 4, dur: time.Second,
		attrs: map[string]any{"error.type": "java.net.SocketTimeoutException"}})
	timedOut.ResourceSpans().At(0).Resource().Attributes().PutStr("host.name", "node-7")
	timedOut.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetKind(ptrace.SpanKindConsumer)
	h.consume(td)
	h.consume(timedOut)
	h.decideAfterWait()
	// A late span of a decided trace: a root again, counted too.
	h.consume(request(t, "cat", spanSpec{trace: 3, span: 9, dur: time.Millisecond}))
	h.barrier()
	require.NoError(t, h.p.Shutdown(context.Background()))

	got := redRows(h)
	assert.Equal(t, uint64(20), got["cat|op|cat-1|1.0"].Requests)
	assert.Equal(t, uint64(4), got["cat|op|cat-1|1.0"].Errors, "traces 10, 20, 30, 40 (even: cat-1)")
	assert.Equal(t, uint64(20), got["cat|op|cat-2|1.0"].Requests)
	assert.Zero(t, got["cat|op|cat-2|1.0"].Errors)
	assert.Equal(t, uint64(1), got["cat|op||"].Requests, "the late root, no instance")
	w := got["worker|op|node-7|"]
	assert.Equal(t, uint64(1), w.Requests, "host.name names the instance when nothing else does")
	assert.Equal(t, uint64(1), w.Errors, "a timeout is an error")
	assert.Len(t, got, 4, "client and internal spans are not requests")
	p99 := red.Sketch(got["cat|op|cat-1|1.0"].Latency).Quantile(0.99)
	assert.InEpsilon(t, 30e6, p99, red.RelativeAccuracy)
	assert.EqualValues(t, 4, h.counter("otelcol_tracesift_sampler_red_rows"), "one row a series and flush (the last, at shutdown)")
}

// A series is one row however its spans come: resources of one request
// share nothing, in whatever order they come.
func TestREDSeriesAcrossResources(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))
	for i, instances := range [][]string{{"cat-1", "cat-2"}, {"cat-2", "cat-1"}} {
		td := ptrace.NewTraces()
		for j, inst := range instances {
			appendResource(t, td, "cat", spanSpec{trace: uint64(10*i + j + 1), span: 1, dur: time.Millisecond})
			td.ResourceSpans().At(j).Resource().Attributes().PutStr("service.instance.id", inst)
		}
		h.consume(td)
	}
	h.barrier()
	require.NoError(t, h.p.Shutdown(context.Background()))
	got := redRows(h)
	assert.Equal(t, uint64(2), got["cat|op|cat-1|"].Requests)
	assert.Equal(t, uint64(2), got["cat|op|cat-2|"].Requests)
	assert.EqualValues(t, 2, h.counter("otelcol_tracesift_sampler_red_rows"), "one row a series")
}

// Without a store to send them to, RED rows are not counted at all.
func TestREDNeedsAStore(t *testing.T) {
	h := newHarness(t, testConfig())
	assert.Nil(t, h.p.red)
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	cfg.RED.Enabled = false
	assert.Nil(t, newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()})).p.red)
}

// An instance much slower than its peers is an instance_outlier finding,
// sent with the RED rows.
func TestInstanceOutlierFound(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))
	td := ptrace.NewTraces()
	n := uint64(0)
	for _, inst := range []string{"cat-1", "cat-2", "cat-3", "cat-4"} {
		for i := range 30 {
			n++
			dur := time.Duration(30+i%5) * time.Millisecond
			if inst == "cat-4" {
				dur = 900 * time.Millisecond
			}
			appendResource(t, td, "cat", spanSpec{trace: n, span: 1, start: time.Duration(i) * time.Second, dur: dur})
			rs := td.ResourceSpans().At(td.ResourceSpans().Len() - 1)
			rs.Resource().Attributes().PutStr("service.instance.id", inst)
		}
	}
	h.consume(td)
	h.barrier()
	require.NoError(t, h.p.Shutdown(context.Background()))
	found := sentFindings(h, red.KindInstanceOutlier)
	require.Len(t, found, 1)
	assert.Equal(t, "cat op on cat-4", found[0].Subject)
	assert.Contains(t, found[0].Summary, "cat-4: p99 9")
	assert.Contains(t, found[0].Summary, "on its 3 peers")
}

// Configured dimensions come from the span, else from its resource.
func TestREDDimensionsFromSpansAndResources(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	cfg.RED.Dimensions = []string{"http.route", "user.tier"}
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))
	td := request(t, "cat",
		spanSpec{trace: 1, span: 1, dur: time.Millisecond, attrs: map[string]any{"http.route": "/cats/{id}", "user.tier": "gold"}},
		spanSpec{trace: 2, span: 1, dur: time.Millisecond, attrs: map[string]any{"http.route": "/cats/{id}"}},
		spanSpec{trace: 3, span: 1, dur: time.Millisecond})
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("user.tier", "free")
	h.consume(td)
	h.barrier()
	require.NoError(t, h.p.Shutdown(context.Background()))
	got := map[string]uint64{}
	for _, td := range h.sink.AllTraces() {
		for _, r := range store.AnalysisOf(td).RED {
			got[r.Dimensions["http.route"]+"|"+r.Dimensions["user.tier"]] += r.Requests
		}
	}
	assert.Equal(t, map[string]uint64{"/cats/{id}|gold": 1, "/cats/{id}|free": 1, "|free": 1}, got)
}

// RED rows and outlier findings the next consumer rejects are counted as
// dropped.
func TestREDRowsRejectedAreCounted(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}),
		withNext(consumertest.NewErr(errors.New("store unavailable"))))
	h.consume(request(t, "cat", spanSpec{trace: 1, span: 1, dur: time.Millisecond}))
	h.barrier()
	require.NoError(t, h.p.Shutdown(context.Background()))
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_red_rows_dropped"))
	assert.Zero(t, h.counter("otelcol_tracesift_sampler_red_rows"))
}

// The retry budget counts every call of all traffic: checkout's calls to
// payments retry after a 503 in 12 of 60 requests (12 retries in 72 calls,
// over the 10 % budget); its calls to stock are resent 3 times in 63 calls
// (HTTP resend count, within the budget); its 5 calls a request to the
// catalogue all succeed (a loop, not retries). One finding, for payments.
func TestRetryBudgetOnAllTraffic(t *testing.T) {
	cfg := testConfig()
	cfg.Analyze.Store = component.MustNewID("tracesift_store")
	h := newHarness(t, cfg, withHost(storeHost{componenttest.NewNopHost()}))
	td := ptrace.NewTraces()
	for n := uint64(1); n <= 60; n++ {
		specs := []spanSpec{{trace: n, span: 1, dur: 100 * time.Millisecond},
			{trace: n, span: 2, parent: 1, dur: 10 * time.Millisecond, attrs: map[string]any{"server.address": "payments"}},
			{trace: n, span: 3, parent: 1, start: 20 * time.Millisecond, dur: 5 * time.Millisecond,
				attrs: map[string]any{"peer.service": "stock"}}}
		if n%5 == 0 { // the first attempt failed with a 503, the second succeeded
			specs[1].attrs = map[string]any{"server.address": "payments", "http.response.status_code": 503}
			specs = append(specs, spanSpec{trace: n, span: 4, parent: 1, start: 12 * time.Millisecond, dur: 5 * time.Millisecond,
				attrs: map[string]any{"server.address": "payments", "http.response.status_code": 200}})
		}
		if n%20 == 0 { // stock answered the second attempt, sent again by the HTTP client
			specs = append(specs, spanSpec{trace: n, span: 5, parent: 1, start: 30 * time.Millisecond, dur: time.Millisecond,
				attrs: map[string]any{"peer.service": "stock", "http.request.resend_count": 1}})
		}
		for k := range uint64(5) {
			specs = append(specs, spanSpec{trace: n, span: 10 + k, parent: 1, start: time.Duration(40+k) * time.Millisecond,
				dur: time.Millisecond, attrs: map[string]any{"server.address": "catalogue"}})
		}
		appendResource(t, td, "checkout", specs...)
		spans := td.ResourceSpans().At(td.ResourceSpans().Len() - 1).ScopeSpans().At(0).Spans()
		spans.At(0).SetKind(ptrace.SpanKindServer)
		for i := 1; i < spans.Len(); i++ {
			spans.At(i).SetKind(ptrace.SpanKindClient)
			spans.At(i).SetName("POST")
		}
	}
	h.consume(td)
	h.barrier()
	require.NoError(t, h.p.Shutdown(context.Background()))

	got := sentFindings(h, red.KindRetryBudget)
	require.Len(t, got, 1)
	assert.Equal(t, "checkout → payments", got[0].Subject)
	assert.Equal(t, 0.1667, got[0].Value)
	assert.Contains(t, got[0].Summary, "17 % of 72 calls were retries (12)")
	assert.EqualValues(t, 1, h.counter("otelcol_tracesift_sampler_findings", attribute.String("kind", red.KindRetryBudget)))
}

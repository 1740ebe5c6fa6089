package tailsampler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// decisionRecorder is a DecisionLog that remembers, or fails when told to.
type decisionRecorder struct {
	mu   sync.Mutex
	got  []Decision
	fail bool
}

func (d *decisionRecorder) Record(_ context.Context, ds []Decision) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail {
		return errors.New("broker down")
	}
	d.got = append(d.got, ds...)
	return nil
}

// consumeWithReceipt hands td over as the message at the next offset.
func (h *harness) consumeWithReceipt(td ptrace.Traces) *atomic.Int32 {
	h.t.Helper()
	return h.consumeAt(h.offset.Add(1), td)
}

func (h *harness) consumeAt(offset int64, td ptrace.Traces) *atomic.Int32 {
	h.t.Helper()
	req, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(h.t, err)
	done := new(atomic.Int32)
	require.NoError(h.t, h.p.ConsumeRawTracesWithReceipt(context.Background(), req, NewReceipt(offset, func() { done.Add(1) })))
	return done
}

// A receipt is done once every trace of its request is decided and
// forwarded or dropped, and the decisions recorded; not before, and never
// when the decisions could not be recorded.
func TestReceiptSettlesWhenEveryTraceIsDecided(t *testing.T) {
	h := newHarness(t, testConfig())
	log := &decisionRecorder{}
	h.p.decisions = log
	// Trace 1 fails (kept), trace 2 is healthy (dropped); the receipt
	// covers both, and trace 2 gets a second request later.
	r1 := h.consumeWithReceipt(request(t, "svc",
		spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true},
		spanSpec{trace: 2, span: 2, parent: 9, dur: time.Millisecond}))
	h.clock.Advance(time.Second)
	r2 := h.consumeWithReceipt(request(t, "svc", spanSpec{trace: 2, span: 9, dur: time.Millisecond}))
	h.barrier()
	assert.Zero(t, r1.Load(), "nothing decided yet")
	h.decideAfterWait()
	assert.Equal(t, int32(1), r1.Load())
	assert.Equal(t, int32(1), r2.Load())
	assert.ElementsMatch(t, []Decision{{TraceID: tid(1), Kept: true, Through: 1}, {TraceID: tid(2), Kept: false, Through: 2}}, log.got)
	assert.Equal(t, 1, h.sink.SpanCount())

	// A late span of the kept trace is forwarded and settles its receipt
	// at once; the decision is recorded again, through its offset.
	h.clock.Advance(time.Minute)
	r3 := h.consumeWithReceipt(request(t, "svc", spanSpec{trace: 1, span: 3, parent: 1, dur: time.Millisecond}))
	h.barrier()
	assert.Equal(t, int32(1), r3.Load())
	assert.Equal(t, Decision{TraceID: tid(1), Kept: true, Through: 3}, log.got[len(log.got)-1])
	assert.Equal(t, 2, h.sink.SpanCount())

	// Decisions that cannot be recorded settle nothing.
	log.fail = true
	r4 := h.consumeWithReceipt(request(t, "svc", spanSpec{trace: 4, span: 4, dur: time.Millisecond}))
	h.decideAfterWait()
	assert.Zero(t, r4.Load())
}

// Kept spans that cannot be forwarded settle nothing.
func TestReceiptNotSettledWhenForwardFails(t *testing.T) {
	h := newHarness(t, testConfig(), withNext(consumertest.NewErr(errors.New("kafka down"))))
	r := h.consumeWithReceipt(request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true}))
	h.decideAfterWait()
	assert.Zero(t, r.Load())
}

// Discard forgets buffered traces that came with receipts, undecided; what
// came without stays. Remember makes late spans follow a decision taken
// elsewhere.
func TestDiscardAndRemember(t *testing.T) {
	h := newHarness(t, testConfig())
	r := h.consumeWithReceipt(request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true}))
	h.consume(request(t, "svc", spanSpec{trace: 2, span: 2, dur: time.Millisecond, err: true}))
	h.barrier()
	require.NoError(t, h.p.Discard(context.Background()))
	require.NoError(t, h.p.Remember(context.Background(), []Decision{{TraceID: tid(3), Kept: true, Through: -1},
		{TraceID: tid(5), Kept: false, Through: -1}}))
	h.consume(request(t, "svc",
		spanSpec{trace: 3, span: 3, parent: 1, dur: time.Millisecond},
		spanSpec{trace: 5, span: 5, dur: time.Millisecond, err: true}))
	h.decideAfterWait()
	assert.Zero(t, r.Load(), "a discarded trace's receipt is never done")
	spans, _ := keptSpans(h.sink)
	assert.Contains(t, spans, tid(2))
	assert.NotContains(t, spans, tid(1), "discarded, not decided")
	assert.Contains(t, spans, tid(3), "a late span of a trace kept elsewhere")
	assert.NotContains(t, spans, tid(5), "a late span of a trace dropped elsewhere, though it failed")
	assert.Zero(t, h.counter("otelcol_tracesift_sampler_traces_buffered"))
}

// After a crash, a sampler reads a partition again from its committed
// offset: the spans of a remembered trace up to the decision's offset were
// stored already and are skipped (their receipts done), later ones follow
// the decision.
func TestReplayedSpansAreNotForwardedTwice(t *testing.T) {
	h := newHarness(t, testConfig())
	log := &decisionRecorder{}
	h.p.decisions = log
	require.NoError(t, h.p.Remember(context.Background(), []Decision{{TraceID: tid(1), Kept: true, Through: 5}}))
	again := h.consumeAt(4, request(t, "svc", spanSpec{trace: 1, span: 1, dur: time.Millisecond, err: true}))
	late := h.consumeAt(7, request(t, "svc", spanSpec{trace: 1, span: 2, parent: 1, dur: time.Millisecond}))
	h.barrier()
	assert.Equal(t, int32(1), again.Load())
	assert.Equal(t, int32(1), late.Load())
	spans, _ := keptSpans(h.sink)
	assert.Equal(t, []pcommon.SpanID{sid(2)}, spans[tid(1)], "only the span past the decision")
	assert.Equal(t, []Decision{{TraceID: tid(1), Kept: true, Through: 7}}, log.got)
}

package tailsampler

import (
	"container/list"
	"context"
	"math"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// traceChunk is the part of one trace found in one request, with what the
// keep rules need already extracted so the shard never rescans spans.
type traceChunk struct {
	id       pcommon.TraceID
	spans    ptrace.Traces
	count    int
	minStart pcommon.Timestamp // math.MaxUint64 while no span had a start time
	maxEnd   pcommon.Timestamp // 0 while no span had an end time
	reason   Reason            // strongest span reason (error/timeout) so far
}

func newTraceChunk(id pcommon.TraceID) traceChunk {
	return traceChunk{id: id, spans: ptrace.NewTraces(), minStart: math.MaxUint64}
}

// add folds one span into the chunk's summary. Zero timestamps are ignored:
// a span without a start time would otherwise make its trace decades long,
// hence "slow".
func (c *traceChunk) add(span ptrace.Span) {
	c.count++
	if st := span.StartTimestamp(); st != 0 && st < c.minStart {
		c.minStart = st
	}
	if et := span.EndTimestamp(); et > c.maxEnd {
		c.maxEnd = et
	}
	// Error is the strongest span reason: once seen, nothing can change it.
	if c.reason != ReasonError {
		c.reason = stronger(c.reason, spanReason(span))
	}
}

// shardMsg is either a batch of trace chunks or a decision pass request; both
// share the queue so that a pass sees every batch sent before it.
type shardMsg struct {
	chunks []traceChunk
	at     time.Time // arrival of chunks
	pass   *decisionPass
}

type decisionPass struct {
	now  time.Time
	done chan struct{}
}

// trace is a buffered, undecided trace.
type trace struct {
	traceChunk
	firstSeen time.Time
	lastSeen  time.Time
	elem      *list.Element // in shard.order
}

func (t *trace) endToEnd() time.Duration {
	if t.minStart == math.MaxUint64 || t.maxEnd <= t.minStart {
		return 0
	}
	return time.Duration(t.maxEnd - t.minStart)
}

// shard owns the traces whose id hashes to it; only its goroutine touches its
// state.
type shard struct {
	id int
	p  *sampler // read-only configuration and collaborators
	in chan shardMsg

	traces map[pcommon.TraceID]*trace
	// order holds the buffered traces by last arrival, oldest first, so a
	// decision pass stops at the first trace that is not quiet yet: O(expired).
	order       list.List
	lastArrival time.Time
	cache       decisionCache
}

func newShard(id int, p *sampler, queueSize int) *shard {
	return &shard{
		id:     id,
		p:      p,
		in:     make(chan shardMsg, queueSize),
		traces: make(map[pcommon.TraceID]*trace),
		cache:  newDecisionCache(p.rules.cacheSize),
	}
}

// run is the shard's goroutine. It exits once the queue is closed and
// drained, after deciding every trace still buffered.
func (s *shard) run(ctx context.Context, tick time.Duration) {
	var tickC <-chan time.Time
	if tick > 0 {
		t := time.NewTicker(tick)
		defer t.Stop()
		tickC = t.C
	}
	for {
		select {
		case msg, ok := <-s.in:
			switch {
			case !ok:
				s.flush(ctx)
				return
			case msg.pass != nil:
				s.decideQuiet(ctx, msg.pass.now)
				close(msg.pass.done)
			default:
				s.ingest(ctx, msg.chunks, msg.at)
			}
		case <-tickC:
			s.decideQuiet(ctx, s.p.now())
		}
	}
}

func (s *shard) ingest(ctx context.Context, chunks []traceChunk, at time.Time) {
	// Concurrent senders can enqueue slightly out of arrival order; never
	// letting the clock go back keeps s.order sorted by lastSeen, which the
	// early exit of decideQuiet relies on.
	now := at
	if now.Before(s.lastArrival) {
		now = s.lastArrival
	}
	s.lastArrival = now
	var (
		late                  ptrace.Traces
		lateKept, lateDropped int
		added                 int
	)
	for i := range chunks {
		c := &chunks[i]
		if kept, decided := s.cache.get(c.id); decided {
			if kept {
				if lateKept == 0 {
					late = ptrace.NewTraces()
				}
				c.spans.ResourceSpans().MoveAndAppendTo(late.ResourceSpans())
				lateKept += c.count
			} else {
				lateDropped += c.count
			}
			continue
		}
		t, ok := s.traces[c.id]
		if !ok {
			t = &trace{traceChunk: *c, firstSeen: now, lastSeen: now}
			t.elem = s.order.PushBack(t)
			s.traces[c.id] = t
			added++
			continue
		}
		c.spans.ResourceSpans().MoveAndAppendTo(t.spans.ResourceSpans())
		t.count += c.count
		t.minStart = min(t.minStart, c.minStart)
		t.maxEnd = max(t.maxEnd, c.maxEnd)
		t.reason = stronger(t.reason, c.reason)
		t.lastSeen = now
		s.order.MoveToBack(t.elem)
	}

	tel := s.p.tel
	mctx := context.Background()
	if added > 0 {
		tel.tracesBuffered.Add(mctx, int64(added))
	}
	if lateDropped > 0 {
		tel.spansLate.Add(mctx, int64(lateDropped), tel.lateDropped)
		tel.spansDropped.Add(mctx, int64(lateDropped))
	}
	if lateKept > 0 {
		tel.spansLate.Add(mctx, int64(lateKept), tel.lateKept)
		s.forward(ctx, late, lateKept)
	}
}

// decideQuiet decides the traces that received no span for decision_wait and
// forwards the kept ones in a single call.
func (s *shard) decideQuiet(ctx context.Context, now time.Time) {
	var out keptBatch
	for e := s.order.Front(); e != nil; e = s.order.Front() {
		t := e.Value.(*trace)
		if now.Sub(t.lastSeen) < s.p.rules.wait {
			break
		}
		s.decideTrace(t, &out)
	}
	s.forward(ctx, out.td, out.spans)
}

// flush decides everything still buffered, at shutdown.
func (s *shard) flush(ctx context.Context) {
	var out keptBatch
	for e := s.order.Front(); e != nil; e = s.order.Front() {
		s.decideTrace(e.Value.(*trace), &out)
	}
	s.forward(ctx, out.td, out.spans)
}

// keptBatch collects the traces kept in one pass; td is created on first use
// because most passes keep nothing.
type keptBatch struct {
	td    ptrace.Traces
	spans int
}

func (k *keptBatch) add(t *trace) {
	if k.spans == 0 {
		k.td = ptrace.NewTraces()
	}
	t.spans.ResourceSpans().MoveAndAppendTo(k.td.ResourceSpans())
	k.spans += t.count
}

// decideTrace removes t from the buffer, remembers the decision and, if kept,
// moves its spans into out.
func (s *shard) decideTrace(t *trace, out *keptBatch) {
	s.order.Remove(t.elem)
	delete(s.traces, t.id)

	r := s.p.rules
	reason := decide(t.reason, t.endToEnd(), r.slow, t.id, r.baseline)
	kept := reason != ReasonNone
	s.cache.put(t.id, kept)

	tel := s.p.tel
	mctx := context.Background()
	tel.tracesBuffered.Add(mctx, -1)
	tel.tracesDecided.Add(mctx, 1, tel.decidedAttrs[reason.rank()])
	if ce := s.p.logger.Check(zap.DebugLevel, "Trace decided"); ce != nil {
		ce.Write(zap.Stringer("trace_id", t.id), zap.Bool("kept", kept), zap.String("reason", reason.metricValue()),
			zap.Int("spans", t.count), zap.Duration("end_to_end", t.endToEnd()),
			zap.Duration("buffered_for", t.lastSeen.Sub(t.firstSeen)))
	}
	if !kept {
		tel.spansDropped.Add(mctx, int64(t.count))
		return
	}
	out.add(t)
}

// forward hands kept spans to the next consumer. A failure loses them (the
// sampler has no retry queue; the exporter behind it does), so it is logged
// and counted, never returned to a receiver that has long moved on.
func (s *shard) forward(ctx context.Context, td ptrace.Traces, spans int) {
	if spans == 0 {
		return
	}
	if err := s.p.next.ConsumeTraces(ctx, td); err != nil {
		s.p.tel.exportErrors.Add(context.Background(), 1)
		s.p.logger.Error("Next consumer rejected kept traces; their spans are lost",
			zap.Int("shard", s.id), zap.Int("spans", spans), zap.Error(err))
	}
}

// decisionCache remembers the last decisions of a shard so late spans follow
// their trace: a ring of ids gives FIFO eviction with no per-entry
// allocation. Once a decision is evicted, a span of that trace arriving even
// later starts a new trace that is decided on its own (usually dropped, being
// a fragment), which is the price of bounded memory.
type decisionCache struct {
	ring []pcommon.TraceID
	next int
	kept map[pcommon.TraceID]bool
}

func newDecisionCache(size int) decisionCache {
	return decisionCache{ring: make([]pcommon.TraceID, size), kept: make(map[pcommon.TraceID]bool)}
}

func (c *decisionCache) get(id pcommon.TraceID) (kept, ok bool) {
	kept, ok = c.kept[id]
	return kept, ok
}

func (c *decisionCache) put(id pcommon.TraceID, kept bool) {
	if _, ok := c.kept[id]; ok {
		c.kept[id] = kept
		return
	}
	// Every remembered id occupies exactly one ring slot, so when the map is
	// full the slot about to be reused holds the oldest decision.
	if len(c.kept) >= len(c.ring) {
		delete(c.kept, c.ring[c.next])
	}
	c.ring[c.next] = id
	c.kept[id] = kept
	c.next = (c.next + 1) % len(c.ring)
}

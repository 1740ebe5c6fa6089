package tailsampler

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/otlpwire"
)

// traceChunk is the part of one trace found in one request, with what the
// keep rules need already extracted so the shard never rescans spans.
type traceChunk struct {
	// id is the trace's key: its id XOR its tenant's key (tenants.go).
	id       pcommon.TraceID
	frames   frameBuf // the spans, see frames.go
	codec    *codec   // how frames are stored
	count    int
	minStart pcommon.Timestamp // math.MaxUint64 while no span had a start time
	maxEnd   pcommon.Timestamp // 0 while no span had an end time
	bytes    int64             // accounted memory: frames plus chunkOverhead
	reason   Reason            // strongest span reason (error/timeout) so far
	hasRoot  bool              // a span without a parent has arrived

	hasError, hasTimeout bool // see traceFacts

	calls  callCounts // for keep_retry_amplification
	hosts  hostSet    // for keep_clock_skew
	tenant uint32     // index in sampler.tenants; fits in padding

	// rootService and rootName name the trace's route (adaptive_slow) and
	// the service whose rules apply; firstService stands in until the root
	// arrives.
	rootService, rootName, firstService string

	// receipts are those of the requests the spans came with, one per chunk
	// (ConsumeRawTracesWithReceipt); nil otherwise.
	receipts []*Receipt
}

func newTraceChunk(id pcommon.TraceID, tenant uint32) traceChunk {
	return traceChunk{id: id, tenant: tenant, minStart: math.MaxUint64}
}

// addSpan folds one scanned span of the given service into the chunk's
// summary. Zero timestamps are ignored: a span without a start time would
// otherwise make its trace decades long, hence "slow".
func (c *traceChunk) addSpan(span *otlpwire.Span, service string, host uint32) {
	c.count++
	c.hosts.add(host)
	if span.Kind == kindClient || span.Kind == kindProducer {
		c.calls.add(nameHash(span.Name), 1)
	}
	if st := pcommon.Timestamp(span.Start); st != 0 && st < c.minStart {
		c.minStart = st
	}
	if et := pcommon.Timestamp(span.End); et > c.maxEnd {
		c.maxEnd = et
	}
	isErr := span.StatusCode == otlpwire.StatusError
	c.hasError = c.hasError || isErr
	if span.Marked { // timed out (timeoutMarks)
		c.hasTimeout = true
		c.reason = stronger(c.reason, ReasonTimeout)
	} else if isErr {
		// A span that is ERROR and a timeout counts as a timeout.
		c.reason = ReasonError
	}
	if c.firstService == "" {
		c.firstService = service
	}
	if span.ParentSpanID == [8]byte{} {
		c.hasRoot = true
		if c.rootName == "" {
			c.rootService, c.rootName = service, string(span.Name)
		}
	}
}

// merge folds the summary of a later chunk of the same trace into c; the
// frames are shard.join's.
func (c *traceChunk) merge(o *traceChunk) {
	c.count += o.count
	c.minStart = min(c.minStart, o.minStart)
	c.maxEnd = max(c.maxEnd, o.maxEnd)
	c.reason = stronger(c.reason, o.reason)
	c.hasRoot = c.hasRoot || o.hasRoot
	c.hasError = c.hasError || o.hasError
	c.hasTimeout = c.hasTimeout || o.hasTimeout
	c.calls.merge(&o.calls)
	for _, h := range o.hosts {
		c.hosts.add(h)
	}
	if c.rootName == "" {
		c.rootService, c.rootName = o.rootService, o.rootName
	}
	if c.firstService == "" {
		c.firstService = o.firstService
	}
	c.receipts = append(c.receipts, o.receipts...)
}

// through is the highest offset of c's receipts (-1 with none).
func (c *traceChunk) through() int64 {
	off := int64(-1)
	for _, r := range c.receipts {
		off = max(off, r.offset)
	}
	return off
}

// service is the service whose keep rules apply to the trace.
func (c *traceChunk) service() string {
	if c.rootName != "" {
		return c.rootService
	}
	return c.firstService
}

// shardMsg is either a batch of trace chunks or a request for a decision pass
// as if the clock read now, closing done after it: what a ticker does, but in
// the queue, so that the pass sees every batch sent before it (tests drive
// time this way, without sleeping).
type shardMsg struct {
	chunks []traceChunk
	at     time.Time // arrival of chunks
	pass   *decisionPass
	// discard asks the shard to forget its traces that came with receipts
	// (ReceiptSampler.Discard), closing it after; remember hands it
	// decisions to follow (ReceiptSampler.Remember), closing done after.
	discard  chan struct{}
	remember []Decision
	done     chan struct{}
}

type decisionPass struct {
	now  time.Time
	done chan struct{}
}

// trace is a buffered, undecided trace.
type trace struct {
	traceChunk
	// firstSeen and lastSeen are arrival times, Unix nanoseconds.
	firstSeen, lastSeen int64
	// links place the trace in shard.order (unless it is parked: quiet but
	// rootless, waiting for its root until max_wait) and shard.byAge.
	links [numLists]traceLinks
}

func (t *trace) endToEnd() time.Duration {
	if t.minStart == math.MaxUint64 || t.maxEnd <= t.minStart {
		return 0
	}
	return time.Duration(t.maxEnd - t.minStart)
}

// Why a trace was decided before its time, the `why` attribute of
// otelcol_tracesift_sampler_early_decisions.
const (
	whyOnTime     = iota // not early: quiet after its root arrived
	whyMemory            // the shard's share of max_buffered_bytes was nearly used
	whyTraceLimit        // the trace reached max_trace_bytes or max_spans_per_trace
	whyMaxWait           // buffered for max_wait without becoming complete and quiet
	numWhy
)

var whyNames = [numWhy]string{"", "memory", "trace_limit", "max_wait"}

// revisable says whether a drop decided for why gives way to a late ERROR or
// timeout span. Memory and trace-limit decisions cut decision_wait short to
// protect the buffer, judging a trace still arriving; what follows them is
// forwarded unbuffered, so keeping it costs no buffer. A drop at max_wait or
// on time came after all the wait configured, so it is final.
func revisable(why int) bool {
	return why == whyMemory || why == whyTraceLimit
}

// shard owns the traces whose id hashes to it; only its goroutine touches its
// state, except used, which senders reserve before queueing.
type shard struct {
	id int
	p  *sampler // read-only configuration and collaborators
	in chan shardMsg
	// spare holds emptied chunk batches for sampler.partition to fill again,
	// so that a request does not allocate a batch of its own.
	spare chan []traceChunk

	// used is the accounted memory of the spans queued for and buffered in
	// this shard. Above high the shard decides traces early down to low; a
	// request that would take it past budget is refused (see sampler.send).
	used              atomic.Int64
	budget, high, low int64

	traces map[pcommon.TraceID]*trace
	// order holds the unparked traces by last arrival, oldest first, so a
	// decision pass stops at the first trace that is not quiet yet: O(expired).
	order traceList
	// byAge holds every buffered trace by first arrival, for max_wait.
	byAge       traceList
	lastArrival time.Time
	cache       decisionCache

	routes   routeTable  // adaptive_slow
	baseline rateLimiter // baseline_max_per_second
	scratch  shardScratch
	tally    decisionTally // reported by forward
	toFree   []frameBuf    // see release
	// now is the time of the message being handled, for the routes' windows
	// and the baseline buckets.
	now time.Time
}

func newShard(id int, p *sampler, queueSize int, budget int64) *shard {
	return &shard{
		id:     id,
		p:      p,
		in:     make(chan shardMsg, queueSize),
		spare:  make(chan []traceChunk, spareBatches),
		budget: budget,
		high:   budget / 10 * 9,
		low:    budget / 4 * 3,
		traces: make(map[pcommon.TraceID]*trace),
		order:  traceList{which: orderList},
		byAge:  traceList{which: ageList},
		cache:  newDecisionCache(p.rules.cacheSize),
		routes: newRouteTable(p.rules.adaptive),
		// As many services as routes: both bound per-shard state by config.
		baseline: rateLimiter{buckets: make(map[serviceKey]*tokenBucket), max: p.rules.adaptive.MaxRoutes},
	}
}

// A shard keeps up to spareBatches emptied batches of up to maxSpareChunks
// chunks, which bounds what recycling can hold.
const (
	spareBatches   = 16
	maxSpareChunks = 2048
)

// recycle offers chunks, a batch ingest is done with (its chunks were copied
// into traces or forwarded), for reuse; it is emptied first so that it holds
// no frames or strings. Batches of huge requests are left to the collector.
func (s *shard) recycle(chunks []traceChunk) {
	if cap(chunks) > maxSpareChunks {
		return
	}
	clear(chunks)
	select {
	case s.spare <- chunks[:0]:
	default:
	}
}

// batch returns an empty batch with room for n chunks, a recycled one when
// there is one.
func (s *shard) batch(n int) []traceChunk {
	select {
	case b := <-s.spare:
		if cap(b) >= n {
			return b
		}
		return make([]traceChunk, 0, max(n, 2*cap(b)))
	default:
		return make([]traceChunk, 0, n)
	}
}

func (s *shard) addUsed(n int64) {
	s.used.Add(n)
	s.p.tel.TracesiftSamplerBufferedBytes.Add(context.Background(), n)
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
				s.decideDue(ctx, msg.pass.now)
				close(msg.pass.done)
			case msg.discard != nil:
				s.discardReceipted()
				close(msg.discard)
			case msg.done != nil:
				for _, d := range msg.remember {
					if _, buffered := s.traces[d.TraceID]; buffered {
						continue
					}
					if old, ok := s.cache.get(d.TraceID); ok && old.through > d.Through {
						continue // this shard knows a later state of the trace
					}
					// The decision log does not say why a trace was decided, so a
					// drop taken over from another sampler is final.
					s.cache.put(d.TraceID, d.Kept, whyOnTime, s.p.now(), d.Through)
				}
				close(msg.done)
			default:
				s.ingest(ctx, msg.chunks, msg.at)
				s.recycle(msg.chunks)
			}
		case <-tickC:
			s.decideDue(ctx, s.p.now())
		}
	}
}

func (s *shard) ingest(ctx context.Context, chunks []traceChunk, at time.Time) {
	// Concurrent senders can enqueue slightly out of arrival order; never
	// letting the clock go back keeps s.order sorted by lastSeen, which the
	// early exit of decideDue relies on.
	now := at
	if now.Before(s.lastArrival) {
		now = s.lastArrival
	}
	s.lastArrival = now
	s.now = now
	var (
		out                   keptBatch
		lateKept, lateDropped int
		added                 int
		lateBytes, refund     int64
	)
	r := s.p.rules
	for i := range chunks {
		c := &chunks[i]
		// Most chunks join a buffered trace, so the trace map is asked
		// first; a trace is never both buffered and decided.
		t, ok := s.traces[c.id]
		if !ok {
			if d, decided := s.cache.get(c.id); decided {
				lateBytes += c.bytes
				s.p.tel.TracesiftSamplerSpanLatenessSeconds.Record(context.Background(), float64(now.UnixNano()-d.at)/1e9)
				switch through := c.through(); {
				case c.receipts != nil && through <= d.through:
					// Read again after a crash, and forwarded or dropped
					// then with its trace: nothing to do twice.
					s.release(c.frames)
					out.settle = append(out.settle, c.receipts...)
				case d.kept:
					out.add(c)
					lateKept += c.count
					if c.receipts != nil {
						s.cache.put(c.id, true, int(d.why), time.Unix(0, d.at), through)
						out.decisions = append(out.decisions, Decision{TraceID: c.id, Kept: true, Through: through})
					}
				case revisable(int(d.why)) && s.lateKeep(c) != ReasonNone:
					// Dropped early, before it was whole, and now shown to be
					// a trace the rules keep: its earlier spans are lost, but
					// it is kept from here on (without findings: the analyzers
					// need a whole trace).
					out.add(c)
					lateKept += c.count
					s.cache.put(c.id, true, int(d.why), time.Unix(0, d.at), max(through, d.through))
					if c.receipts != nil {
						out.decisions = append(out.decisions, Decision{TraceID: c.id, Kept: true, Through: through})
					}
					s.errorLost(c, int(d.why))
				default:
					s.release(c.frames)
					out.settle = append(out.settle, c.receipts...)
					lateDropped += c.count
				}
				continue
			}
		}
		if !ok {
			t = &trace{traceChunk: *c, firstSeen: now.UnixNano(), lastSeen: now.UnixNano()}
			s.order.pushBack(t)
			s.byAge.pushBack(t)
			s.traces[c.id] = t
			added++
		} else {
			refund += s.join(t, c)
			t.lastSeen = now.UnixNano()
			if s.order.contains(t) {
				s.order.moveToBack(t)
			} else {
				s.order.pushBack(t)
			}
		}
		if t.count >= r.maxSpans || t.bytes >= r.maxTraceBytes {
			s.decideTrace(t, &out, whyTraceLimit)
		}
	}
	if lateBytes+refund != 0 {
		s.addUsed(-(lateBytes + refund))
	}

	tel := s.p.tel
	mctx := context.Background()
	if added > 0 {
		tel.TracesiftSamplerTracesBuffered.Add(mctx, int64(added))
	}
	if lateDropped > 0 {
		tel.TracesiftSamplerSpansLate.Add(mctx, int64(lateDropped), tel.lateDropped)
		tel.TracesiftSamplerSpansDropped.Add(mctx, int64(lateDropped))
	}
	if lateKept > 0 {
		tel.TracesiftSamplerSpansLate.Add(mctx, int64(lateKept), tel.lateKept)
	}
	s.relieve(&out)
	s.forward(ctx, &out)
}

// join merges chunk c into its buffered trace t and returns the accounted
// bytes that became free: the chunk's bookkeeping ended with it, only its
// spans stay, in one buffer with t's. A chunk compressed with an older or
// newer dictionary than t's is re-encoded in t's codec first, so a trace has
// a single codec.
func (s *shard) join(t *trace, c *traceChunk) (freed int64) {
	before := t.bytes + c.bytes
	if c.codec != t.codec {
		buf, err := transcode(c.codec, t.codec, c.frames.b, s.p.mem, &s.scratch)
		if err != nil {
			// The frames were written by this process moments ago.
			panic(fmt.Sprintf("tracesift_sampler: re-encoding buffered spans: %v", err))
		}
		s.release(c.frames)
		c.frames = buf
	}
	joined := concatFrames(s.p.mem, t.frames.b, c.frames.b)
	s.release(t.frames, c.frames)
	t.merge(c)
	t.frames = joined
	t.bytes = int64(cap(joined.b)) + chunkOverhead
	return before - t.bytes
}

// release queues frame buffers to be freed once the message being handled
// is done with them (kept ones after they are forwarded).
func (s *shard) release(bufs ...frameBuf) {
	for _, b := range bufs {
		if b.ref != 0 {
			s.toFree = append(s.toFree, b)
		}
	}
}

// freeReleased frees the released buffers in one go.
func (s *shard) freeReleased() {
	if len(s.toFree) == 0 {
		return
	}
	s.p.mem.free(s.toFree...)
	clear(s.toFree)
	s.toFree = s.toFree[:0]
}

// relieve decides traces early while the shard holds more than its high-water
// mark, choosing those whose wait buys the least: first traces that already
// match a keep rule (they are kept whatever else arrives), then complete ones
// (root arrived), then the oldest. Nothing is evicted undecided.
func (s *shard) relieve(out *keptBatch) {
	if s.used.Load() <= s.high {
		return
	}
	if g := s.p.dicts.gov; g != nil && g.overloaded(s.now) {
		s.p.tel.TracesiftSamplerCompressionPauses.Add(context.Background(), 1)
		s.p.logger.Info("Buffer compression paused: the buffer needs relief although it holds compressed traces, "+
			"so the sampler is overloaded and compressing costs CPU without letting traces wait out decision_wait; "+
			"it is retried after the pause (otelcol_tracesift_sampler_compression_pauses)",
			zap.Duration("pause", time.Duration(g.pausedUntil.Load()-s.now.UnixNano())))
	}
	before := s.used.Load()
	for pass := range 3 {
		for t := s.order.front(); t != nil && s.used.Load() > s.low; {
			next := s.order.next(t)
			if pass == 2 || (pass == 0 && t.reason != ReasonNone) || (pass == 1 && t.hasRoot) {
				s.decideTrace(t, out, whyMemory)
			}
			t = next
		}
	}
	// Parked traces are not in order; the oldest go last.
	for t := s.byAge.front(); t != nil && s.used.Load() > s.low; t = s.byAge.front() {
		s.decideTrace(t, out, whyMemory)
	}
	if s.p.memoryLogged.CompareAndSwap(false, true) {
		s.p.logger.Warn("Sampler buffer nearly full: deciding traces before decision_wait. Error and timeout "+
			"traces are still kept; healthy traces may miss the slow rule. Raise `max_buffered_bytes` or add "+
			"sampler workers; otelcol_tracesift_sampler_early_decisions{why=\"memory\"} counts it (logged once).",
			zap.Int("shard", s.id), zap.Int64("bytes_before", before), zap.Int64("bytes_after", s.used.Load()),
			zap.Int64("shard_budget", s.budget))
	}
}

// lateKeep is the keep rule a late chunk matches by its own spans: ERROR or
// timeout, under its service's rules. The other rules judge a whole trace.
func (s *shard) lateKeep(c *traceChunk) Reason {
	rs := s.p.rules.book.forService(c.service())
	return decide(traceFacts{known: c.reason, hasError: c.hasError, hasTimeout: c.hasTimeout},
		&ruleSet{keepErrors: rs.keepErrors, keepTimeouts: rs.keepTimeouts})
}

// errorLost counts a trace whose early drop a late span revised (see
// revisable) and says once what that costs and how to avoid it.
func (s *shard) errorLost(c *traceChunk, why int) {
	s.p.tel.TracesiftSamplerErrorsLost.Add(context.Background(), 1, s.p.tel.whyAttrs[why])
	if s.p.errorsLostLogged.CompareAndSwap(false, true) {
		s.p.logger.Warn("Late error in a trace dropped early: a span with status ERROR or a timeout arrived after "+
			"its trace was dropped before decision_wait (to relieve the buffer, or at a trace limit). It and the "+
			"trace's later spans are kept; its earlier spans are lost, so it is stored incomplete and without "+
			"findings. Raise `max_buffered_bytes` or add sampler workers (why=memory), or `max_trace_bytes` / "+
			"`max_spans_per_trace` (why=trace_limit); otelcol_tracesift_sampler_errors_lost counts it (logged once).",
			zap.Int("shard", s.id), zap.Stringer("trace_id", s.p.traceID(c)),
			zap.String("tenant", s.p.tenants.get(c.tenant).name), zap.String("why", whyNames[why]),
			zap.Int("spans", c.count))
	}
}

// decideDue decides the traces that are due: complete (root arrived) and
// quiet for decision_wait, or buffered for max_wait. The kept ones are
// forwarded in a single call.
func (s *shard) decideDue(ctx context.Context, now time.Time) {
	s.now = now
	var out keptBatch
	r := s.p.rules
	for t := s.order.front(); t != nil; t = s.order.front() {
		if time.Duration(now.UnixNano()-t.lastSeen) < r.wait {
			break
		}
		if t.hasRoot {
			s.decideTrace(t, &out, whyOnTime)
			continue
		}
		// Quiet but rootless: the root may still be on its way (it ends
		// last); byAge decides it at max_wait.
		s.order.remove(t)
	}
	for t := s.byAge.front(); t != nil; t = s.byAge.front() {
		if time.Duration(now.UnixNano()-t.firstSeen) < r.maxWait {
			break
		}
		s.decideTrace(t, &out, whyMaxWait)
	}
	s.forward(ctx, &out)
}

// flush decides everything still buffered, at shutdown.
func (s *shard) flush(ctx context.Context) {
	s.now = s.p.now()
	var out keptBatch
	for t := s.byAge.front(); t != nil; t = s.byAge.front() {
		s.decideTrace(t, &out, whyOnTime)
	}
	s.forward(ctx, &out)
}

// keptBatch collects the spans kept in one pass, still as frames.
type keptBatch struct {
	parts []framesRef
	spans int
	// whole are the keys of the traces decided in this pass (the other parts
	// are late spans of traces decided earlier): the analyzers run on them.
	whole map[pcommon.TraceID]bool

	// receipts are those of the kept spans, settled once they are forwarded;
	// settle those of the dropped ones; decisions those of the traces that
	// came with receipts (see shard.settle).
	receipts, settle []*Receipt
	decisions        []Decision
}

func (k *keptBatch) add(c *traceChunk) {
	k.parts = append(k.parts, framesRef{buf: c.frames, codec: c.codec, tenant: c.tenant})
	k.spans += c.count
	k.receipts = append(k.receipts, c.receipts...)
}

func (k *keptBatch) addWhole(t *trace) {
	k.add(&t.traceChunk)
	if k.whole == nil {
		k.whole = make(map[pcommon.TraceID]bool)
	}
	k.whole[t.id] = true
}

// decideTrace removes t from the buffer, remembers the decision and, if kept,
// moves its spans into out. why says whether and why it is decided early.
func (s *shard) decideTrace(t *trace, out *keptBatch, why int) {
	s.order.remove(t)
	s.byAge.remove(t)
	delete(s.traces, t.id)
	s.addUsed(-t.bytes)

	reason := s.verdict(t)
	kept := reason != ReasonNone
	through := t.through()
	s.cache.put(t.id, kept, why, s.now, through)

	s.tally.traces[reason.rank()]++
	s.tally.early[why]++
	s.p.tel.TracesiftSamplerDecisionLatencySeconds.Record(context.Background(), time.Duration(s.now.UnixNano()-t.firstSeen).Seconds())
	if ce := s.p.logger.Check(zap.DebugLevel, "Trace decided"); ce != nil {
		ce.Write(zap.Stringer("trace_id", s.p.traceID(&t.traceChunk)), zap.String("tenant", s.p.tenants.get(t.tenant).name),
			zap.Bool("kept", kept), zap.String("reason", reason.metricValue()), zap.String("early", whyNames[why]), zap.Int("spans", t.count), zap.Duration("end_to_end", t.endToEnd()),
			zap.Duration("buffered_for", time.Duration(t.lastSeen-t.firstSeen)))
	}
	s.tally.spans[reason.rank()] += t.count
	if t.receipts != nil {
		out.decisions = append(out.decisions, Decision{TraceID: t.id, Kept: kept, Through: through})
	}
	if !kept {
		s.release(t.frames)
		out.settle = append(out.settle, t.receipts...)
		return
	}
	out.addWhole(t)
}

// decisionTally counts a shard's decisions until they are reported, once
// per message handled rather than at every decision: the counters are
// shared by all shards.
type decisionTally struct {
	traces, spans [numReasons]int // by Reason.rank(); rank 0 is dropped
	early         [numWhy]int
}

// report adds the tally to the sampler's metrics and clears it.
func (d *decisionTally) report(tel *telemetry) {
	ctx := context.Background()
	decided := 0
	for rank, n := range d.traces {
		if n == 0 {
			continue
		}
		decided += n
		tel.TracesiftSamplerTracesDecided.Add(ctx, int64(n), tel.decidedAttrs[rank])
		if spans := int64(d.spans[rank]); rank == 0 {
			tel.TracesiftSamplerSpansDropped.Add(ctx, spans)
		} else {
			tel.TracesiftSamplerSpansKept.Add(ctx, spans, tel.decidedAttrs[rank])
		}
	}
	if decided > 0 {
		tel.TracesiftSamplerTracesBuffered.Add(ctx, -int64(decided))
	}
	for why, n := range d.early {
		if why != whyOnTime && n > 0 {
			tel.TracesiftSamplerEarlyDecisions.Add(ctx, int64(n), tel.whyAttrs[why])
		}
	}
	*d = decisionTally{}
}

// verdict applies the keep rules of t's service, with the shard's route
// sketches and baseline buckets.
func (s *shard) verdict(t *trace) Reason {
	rs := s.p.rules.book.forService(t.service())
	// The baseline reads the id's random bits, as every node does, not the key.
	f := traceFacts{known: t.reason, hasError: t.hasError, hasTimeout: t.hasTimeout, e2e: t.endToEnd(),
		id: s.p.traceID(&t.traceChunk), repeatedCalls: t.calls.max()}
	if rs.keepSkew && s.p.analyzer != nil {
		f.skewed = s.p.analyzer.crossesSkewedPair(&t.hosts, t.tenant)
	}
	// Every complete trace feeds its route's sketch, kept or not; a trace
	// without its root has no route.
	if rs.adaptive && t.rootName != "" {
		f.slowForRoute, _ = s.routes.observe(routeKey{t.rootService, t.rootName, t.tenant}, f.e2e, s.now)
	}
	reason := decide(f, rs)
	healthy := reason == ReasonBaseline || reason == ReasonRetries || reason == ReasonClockSkew
	if healthy && !s.baseline.allow(serviceKey{t.service(), t.tenant}, rs.baselinePerSecond, s.now) {
		s.p.tel.TracesiftSamplerBaselineCapped.Add(context.Background(), 1)
		return ReasonNone
	}
	return reason
}

// forward hands kept spans to the next consumer, decoded, with the findings
// and clock offsets of the whole traces among them. A failure loses them
// (the sampler has no retry queue; the exporter behind it does), so it is
// logged and counted, never returned to a receiver that has long moved on.
//
// It ends the handling of every message that can decide traces, so it also
// reports the decisions taken meanwhile.
func (s *shard) forward(ctx context.Context, out *keptBatch) {
	defer s.freeReleased()
	s.tally.report(s.p.tel)
	if out.spans == 0 {
		s.settle(ctx, out, true)
		return
	}
	td, err := decodeKept(out.parts, s.p.tenants, &s.scratch)
	for i := range out.parts {
		s.release(out.parts[i].buf)
	}
	findings := 0
	if err == nil {
		if a := s.p.analyzer; a != nil && len(out.whole) > 0 {
			findings = a.analyzeKept(td, s.scratch.runs, out.whole, s.now)
		}
		err = s.p.next.ConsumeTraces(ctx, td)
	}
	if err != nil {
		s.p.tel.TracesiftSamplerExportErrors.Add(context.Background(), 1)
		if findings > 0 && s.p.analyzer.export {
			s.p.tel.TracesiftSamplerFindingsDropped.Add(context.Background(), int64(findings))
		}
		s.p.logger.Error("Next consumer rejected kept traces; their spans are lost (those read from Kafka are read "+
			"again after a restart or a rebalance: their offsets are not committed)",
			zap.Int("shard", s.id), zap.Int("spans", out.spans), zap.Error(err))
	}
	s.settle(ctx, out, err == nil)
}

// settle records the decisions of the traces that came with receipts, then
// settles the receipts of what was dropped and, if forwarded, of what was
// kept. Unrecorded decisions settle nothing: their messages are read again.
func (s *shard) settle(ctx context.Context, out *keptBatch, forwarded bool) {
	if len(out.receipts)+len(out.settle) == 0 {
		return
	}
	if log := s.p.decisions; log != nil && len(out.decisions) > 0 {
		if err := log.Record(ctx, out.decisions); err != nil {
			s.p.logger.Error("Recording decisions failed; their spans are read again after a restart or a rebalance",
				zap.Int("shard", s.id), zap.Int("decisions", len(out.decisions)), zap.Error(err))
			return
		}
	}
	for _, r := range out.settle {
		r.settle()
	}
	if forwarded {
		for _, r := range out.receipts {
			r.settle()
		}
	}
}

// discardReceipted forgets, undecided, every buffered trace that came with
// receipts: their source is read again.
func (s *shard) discardReceipted() {
	n := 0
	for id, t := range s.traces {
		if t.receipts == nil {
			continue
		}
		s.order.remove(t)
		s.byAge.remove(t)
		delete(s.traces, id)
		s.addUsed(-t.bytes)
		s.release(t.frames)
		n++
	}
	s.freeReleased()
	if n > 0 {
		s.p.tel.TracesiftSamplerTracesBuffered.Add(context.Background(), -int64(n))
	}
}

// decisionCache remembers the last decisions of a shard so late spans follow
// their trace: a ring of trace keys gives FIFO eviction with no per-entry
// allocation. Once a decision is evicted, a span of that trace arriving even
// later starts a new trace that is decided on its own (usually dropped, being
// a fragment), which is the price of bounded memory.
type decisionCache struct {
	ring      []pcommon.TraceID
	next      int
	decisions map[pcommon.TraceID]decision
}

// decision is a remembered keep/drop decision and when it was taken, so late
// spans can say how late they are.
type decision struct {
	kept bool
	// why is the early reason of the decision (whyOnTime if none), so a late
	// error can revise an early drop (revisable); it fits in kept's padding.
	why uint8
	at  int64 // unix nanoseconds
	// through is Decision.Through: -1 for traces that came without receipts.
	through int64
}

func newDecisionCache(size int) decisionCache {
	return decisionCache{ring: make([]pcommon.TraceID, size), decisions: make(map[pcommon.TraceID]decision)}
}

func (c *decisionCache) get(id pcommon.TraceID) (d decision, ok bool) {
	d, ok = c.decisions[id]
	return d, ok
}

func (c *decisionCache) put(id pcommon.TraceID, kept bool, why int, at time.Time, through int64) {
	d := decision{kept: kept, why: uint8(why), at: at.UnixNano(), through: through}
	if _, ok := c.decisions[id]; ok {
		c.decisions[id] = d
		return
	}
	// Every remembered id occupies exactly one ring slot, so when the map is
	// full the slot about to be reused holds the oldest decision.
	if len(c.decisions) >= len(c.ring) {
		delete(c.decisions, c.ring[c.next])
	}
	c.ring[c.next] = id
	c.decisions[id] = d
	c.next = (c.next + 1) % len(c.ring)
}

package tailsampler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/otlpwire"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tenant"
)

var (
	errNotStarted = errors.New("tracesift_sampler: not started")
	errStopped    = errors.New("tracesift_sampler: shut down, not accepting spans")
)

// shardSettings are the parameters shared read-only by all shards: waits,
// bounds and the keep rules.
type shardSettings struct {
	wait          time.Duration
	maxWait       time.Duration
	cacheSize     int // decisions remembered per shard
	maxSpans      int
	maxTraceBytes int64
	adaptive      AdaptiveSlowConfig
	book          ruleBook
}

// sampler is the tracesift_sampler processor: it routes every span to the
// shard owning its trace id, so a shard sees whole traces and needs no lock.
type sampler struct {
	logger *zap.Logger
	next   consumer.Traces
	tel    *telemetry
	rules  shardSettings
	shards []*shard

	// now is the clock of the shards; tests replace it before Start to drive
	// time without sleeping.
	now func() time.Time
	// tick is the interval of the shards' decision ticker; tests set 0 before
	// Start to disable it and send decision passes themselves (shardMsg).
	tick time.Duration

	// invalidLogged makes the warning about spans without ids appear once per
	// processor: a misbehaving client would otherwise flood the log.
	invalidLogged atomic.Bool
	// memoryLogged and pushbackLogged do the same for memory pressure.
	memoryLogged   atomic.Bool
	pushbackLogged atomic.Bool
	// errorsLostLogged does it for late errors in traces dropped early.
	errorsLostLogged atomic.Bool
	scratch          sync.Pool

	// mu is held shared while sending to the shard channels and exclusively
	// to close them, so that no send can hit a closed channel.
	mu       sync.RWMutex
	started  bool
	stopped  bool
	stopping chan struct{} // closed first thing in Shutdown: unblocks senders waiting on a full queue
	stopOnce sync.Once

	memoryLimit int64 // see Config.goMemoryLimit
	dicts       *dictTrainer
	mem         *frameMemory
	tenants     *tenantTable // see tenants.go
	analyzer    *analyzer    // nil when analyze is disabled
	findingsAt  component.ID // analyze::store
	// red counts RED on all traffic; nil when off (red::enabled, or no
	// analyze::store to send the rows to).
	red *redCounter

	// decisions records the decisions of traces that came with receipts;
	// nil unless made by NewReceipted.
	decisions DecisionLog
	// forwardAnalysis sends findings, offsets and RED down the pipeline
	// without a store to check (NewReceipted: a Kafka exporter is next).
	forwardAnalysis bool

	runCtx    context.Context // for calls to next; cancelled if Shutdown runs out of time
	cancelRun context.CancelFunc
	wg        sync.WaitGroup
}

var _ processor.Traces = (*sampler)(nil)

func newSampler(set processor.Settings, cfg *Config, next consumer.Traces) (*sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tracesift_sampler: invalid config: %w", err)
	}
	if next == nil {
		return nil, errors.New("tracesift_sampler: nil next consumer")
	}
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("tracesift_sampler: creating self-metrics: %w", err)
	}
	logger := set.TelemetrySettings.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	n := cfg.shards()
	p := &sampler{
		logger: logger,
		next:   next,
		tel:    tel,
		rules: shardSettings{
			wait:          cfg.DecisionWait,
			maxWait:       cfg.MaxWait,
			adaptive:      cfg.AdaptiveSlow,
			book:          newRuleBook(cfg, n),
			cacheSize:     cfg.cachePerShard(n),
			maxSpans:      cfg.MaxSpansPerTrace,
			maxTraceBytes: cfg.MaxTraceBytes,
		},
		now:         time.Now,
		tick:        cfg.tickInterval(),
		memoryLimit: cfg.goMemoryLimit(),
		// Relief counts against compression once it has run for two
		// decision waits, when the buffer holds compressed traces only.
		dicts: newDictTrainer(cfg.BufferCompression, int64(cfg.BufferCompressionAbove*float64(cfg.MaxBufferedBytes)),
			2*cfg.DecisionWait, time.Now()),
		mem:      &frameMemory{},
		tenants:  newTenantTable(),
		stopping: make(chan struct{}),
	}
	p.shards = make([]*shard, n)
	for i := range p.shards {
		p.shards[i] = newShard(i, p, cfg.ShardQueueSize, cfg.MaxBufferedBytes/int64(n))
	}
	if p.analyzer, err = newAnalyzer(cfg.Analyze, logger, tel, p.tenants); err != nil {
		return nil, fmt.Errorf("tracesift_sampler: %w", err)
	}
	p.findingsAt = cfg.Analyze.Store
	if cfg.RED.Enabled && cfg.Analyze.Store != (component.ID{}) {
		p.red = newREDCounter(cfg.RED, next, tel, logger)
	}
	if err = tel.observeFrameMemory(p.mem); err != nil {
		return nil, fmt.Errorf("tracesift_sampler: creating self-metrics: %w", err)
	}
	p.scratch.New = func() any {
		sc := &scratch{index: make(map[pcommon.TraceID]int), counts: make([]int, n),
			req: otlpwire.Request{HostKeys: store.HostKeys, Mark: timeoutMarks}}
		if p.red != nil {
			sc.req.ResourceKeys, sc.req.SpanKeys = p.red.keys, p.red.spanKeys
			sc.red.dims = make([][]byte, len(p.red.dims))
		}
		return sc
	}
	return p, nil
}

// Capabilities: spans are copied out of the request, which stays untouched.
func (p *sampler) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start finds the findings' store and launches one goroutine per shard.
func (p *sampler) Start(_ context.Context, host component.Host) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errors.New("tracesift_sampler: start after shutdown")
	}
	if p.started {
		return errors.New("tracesift_sampler: already started")
	}
	// Findings, offsets and RED go down the pipeline to analyze::store (or,
	// in distributed mode, to Kafka's kept topic: forwardAnalysis).
	if p.findingsAt != (component.ID{}) || p.forwardAnalysis {
		if p.findingsAt != (component.ID{}) {
			if err := checkStore(host, p.findingsAt); err != nil {
				return fmt.Errorf("tracesift_sampler: %w", err)
			}
		}
		if p.analyzer != nil {
			p.analyzer.export = true
		}
	}
	p.started = true
	p.setMemoryLimit()
	p.runCtx, p.cancelRun = context.WithCancel(context.Background())
	ctx, tick := p.runCtx, p.tick
	for _, s := range p.shards {
		p.wg.Go(func() { s.run(ctx, tick) })
	}
	if p.red != nil {
		p.wg.Go(func() { p.red.run(ctx, p.stopping) })
	}
	return nil
}

// setMemoryLimit applies go_memory_limit (memlimit.go) until Shutdown.
func (p *sampler) setMemoryLimit() {
	if limit := memoryLimits.hold(p, p.memoryLimit); limit > 0 {
		p.logger.Info("Go soft memory limit set from the samplers' bounds (go_memory_limit; GOMEMLIMIT overrides it)",
			zap.Int64("bytes", limit))
	}
}

// Shutdown stops accepting spans, lets every shard drain its queue, decides
// every buffered trace at once (slow judged on what has arrived) and forwards
// the kept ones before returning. If ctx ends first, calls to the next
// consumer are cancelled and Shutdown still waits for the shards to exit, so
// no goroutine outlives the processor.
func (p *sampler) Shutdown(ctx context.Context) error {
	p.stopOnce.Do(func() { close(p.stopping) })
	p.mu.Lock()
	running := p.started && !p.stopped
	p.stopped = true
	if running {
		for _, s := range p.shards {
			close(s.in)
		}
	}
	p.mu.Unlock()
	if !running {
		return nil
	}

	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		// No call can hold a frame any more: ConsumeRawTraces holds p.mu
		// shared while it allocates, and the shards have exited.
		p.mem.close()
		if p.red != nil {
			p.red.flush(p.runCtx, p.now()) // nothing more is counted: the sampler is stopped
		}
		p.tel.Shutdown()
		memoryLimits.release(p)
		close(done)
	}()
	defer p.cancelRun()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		p.cancelRun()
		<-done
		return fmt.Errorf("tracesift_sampler: shutdown did not finish flushing buffered traces: %w", ctx.Err())
	}
}

// ConsumeTraces samples pdata traces (the processor in a Collector
// pipeline). They are encoded and take the raw path: the sampler buffers
// wire bytes whatever the entry point, and the tenant is ctx's.
func (p *sampler) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	req, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		return consumererror.NewPermanent(fmt.Errorf("tracesift_sampler: encoding traces: %w", err))
	}
	return p.ConsumeRawTraces(ctx, req)
}

// ConsumeRawTraces samples the bytes of an OTLP ExportTraceServiceRequest
// of ctx's tenant (tenant.FromContext): it groups the spans by trace and
// hands each shard its traces in one channel send, blocking while the
// shard's queue is full. req is not retained. A malformed request returns an error wrapping
// otlpwire.ErrMalformed and changes nothing. If ctx ends while blocked,
// shards already served keep their part, so a retry by the caller delivers
// those spans twice: a duplicate is preferred to holding the caller until
// every queue has room.
func (p *sampler) ConsumeRawTraces(ctx context.Context, req []byte) error {
	return p.consumeRaw(ctx, req, nil)
}

// ConsumeRawTracesWithReceipt implements ReceiptSampler.
func (p *sampler) ConsumeRawTracesWithReceipt(ctx context.Context, req []byte, r *Receipt) error {
	return p.consumeRaw(ctx, req, r)
}

// Discard implements ReceiptSampler.
func (p *sampler) Discard(ctx context.Context) error {
	return p.toEveryShard(ctx, func() shardMsg { return shardMsg{discard: make(chan struct{})} },
		func(m shardMsg) chan struct{} { return m.discard })
}

// Remember implements ReceiptSampler.
func (p *sampler) Remember(ctx context.Context, decisions []Decision) error {
	per := make([][]Decision, len(p.shards))
	for _, d := range decisions {
		i := shardOf(d.TraceID, len(p.shards))
		per[i] = append(per[i], d)
	}
	i := 0
	return p.toEveryShard(ctx, func() shardMsg { i++; return shardMsg{remember: per[i-1], done: make(chan struct{})} },
		func(m shardMsg) chan struct{} { return m.done })
}

// toEveryShard sends each shard, in turn, the message next makes and waits
// until the shard closes the message's channel (done).
func (p *sampler) toEveryShard(ctx context.Context, next func() shardMsg, done func(shardMsg) chan struct{}) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.stopped {
		return errStopped
	}
	if !p.started {
		return errNotStarted
	}
	for _, sh := range p.shards {
		m := next()
		select {
		case sh.in <- m:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.stopping:
			return errStopped
		}
		select {
		case <-done(m):
		case <-ctx.Done():
			return ctx.Err()
		case <-p.stopping:
			return errStopped
		}
	}
	return nil
}

func (p *sampler) consumeRaw(ctx context.Context, req []byte, receipt *Receipt) error {
	sc := p.scratch.Get().(*scratch)
	defer p.putScratch(sc)
	if err := otlpwire.Scan(req, &sc.req); err != nil {
		return consumererror.NewPermanent(fmt.Errorf("tracesift_sampler: %w", err))
	}
	// Held shared from the first frame allocated to the last handed over,
	// so that Shutdown cannot release the frame memory under this call.
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.stopped {
		return errStopped
	}
	if !p.started {
		return errNotStarted
	}
	tn := p.tenants.intern(tenant.FromContext(ctx))
	received, invalid := p.group(sc, tn)
	if p.red != nil {
		p.red.count(&sc.req, sc.services, &sc.red, p.tenants.get(tn).row)
	}
	p.tel.TracesiftSamplerSpansReceived.Add(ctx, int64(received))
	if invalid > 0 {
		p.tel.TracesiftSamplerSpansInvalid.Add(ctx, int64(invalid))
		if p.invalidLogged.CompareAndSwap(false, true) {
			p.logger.Warn("Skipping spans with an empty trace id or span id: they cannot be assigned to a trace. "+
				"Fix the instrumentation that sends them; they are counted in otelcol_tracesift_sampler_spans_invalid "+
				"(this message is logged once).",
				zap.Int("invalid_spans_in_request", invalid))
		}
	}
	if receipt != nil {
		if len(sc.builders) == 0 {
			receipt.done() // nothing to decide
			return nil
		}
		receipt.pending.Add(int32(len(sc.builders)))
		for i := range sc.builders {
			sc.builders[i].receipts = []*Receipt{receipt}
		}
	}
	if len(sc.builders) == 0 {
		return nil
	}
	return p.send(ctx, p.partition(sc))
}

// scratch is the per-call grouping state, pooled because a request has tens
// of traces and the map would otherwise be rebuilt on every call.
type scratch struct {
	req       otlpwire.Request
	red       redScratch
	services  []string // per resource of req: its service.name
	hosts     []uint32 // per resource of req: hostHash of its host
	spanChunk []int32  // per span of req: its builder, -1 when invalid
	index     map[pcommon.TraceID]int
	builders  []chunkBuilder
	counts    []int
	sorted    []otlpwire.Span // the valid spans of req, grouped by chunk
	plain     []byte          // every chunk encoded as a request of its own, one after the other
	block     blockScratch    // space for one compressed frame
	tails     []byte          // the compressed resource tails of this request's chunks
	tailAt    []blockAt       // per resource of req: its tail's block in tails
	enc       otlpwire.Encoder
}

// chunkBuilder accumulates the spans of one trace from one request.
type chunkBuilder struct {
	traceChunk
	shard int
	// first and next index the chunk's spans in scratch.sorted; plainEnd is
	// where its encoding ends in scratch.plain.
	first, next, plainEnd int
	// tail is the length of the encoding's last bytes that are resource
	// tailRes's alone (otlpwire.Encoder.ResourceTail), 0 when none.
	tail, tailRes int
}

// tailBlock returns the block of tail, resource res's encoding, compressing
// it on the request's first use; the block is valid until the next call.
func (sc *scratch) tailBlock(cd *codec, res int, tail []byte) []byte {
	if at := sc.tailAt[res]; at.end > 0 {
		return sc.tails[at.start:at.end]
	}
	start := len(sc.tails)
	sc.tails = append(sc.tails, cd.block(tail, &sc.block)...)
	sc.tailAt[res] = blockAt{start, len(sc.tails)}
	return sc.tails[start:]
}

// blockAt locates a block in scratch.tails; end is 0 for none.
type blockAt struct{ start, end int }

// maxPooledTraces bounds what a pooled scratch keeps: one huge request should
// not pin a huge map for the life of the process.
const maxPooledTraces = 4096

func (p *sampler) putScratch(sc *scratch) {
	if len(sc.builders) > maxPooledTraces || cap(sc.plain) > maxPooledPlain {
		return
	}
	sc.req.Reset()
	clear(sc.services)
	sc.services, sc.hosts = sc.services[:0], sc.hosts[:0]
	clear(sc.index)
	clear(sc.builders) // drop references to frames now owned by the shards
	sc.builders = sc.builders[:0]
	clear(sc.counts)
	clear(sc.sorted) // drop references into the request
	sc.sorted = sc.sorted[:0]
	p.scratch.Put(sc)
}

// maxPooledPlain bounds the encoding space a pooled scratch keeps.
const maxPooledPlain = 16 << 20

// group turns the valid spans of the scanned request, tenant tn's, into one
// chunk per trace (keyed by id and tenant, see tenants.go): it gathers each
// trace's spans, encodes them as a request of their own (otlpwire.Encoder:
// raw bytes copied, nothing decoded) and stores that as one frame,
// compressed with the current dictionary (see frames.go).
func (p *sampler) group(sc *scratch, tn uint32) (received, invalid int) {
	req := &sc.req
	key := &p.tenants.get(tn).key
	for i := range req.Resources {
		sc.services = append(sc.services, string(req.Resources[i].ServiceName))
		sc.hosts = append(sc.hosts, hostHash(req.Resources[i].HostName))
	}
	sc.spanChunk = sc.spanChunk[:0]
	last := -1 // spans of a trace tend to be adjacent: skip the map lookup then
	for i := range req.Spans {
		span := &req.Spans[i]
		received++
		if !span.Valid() {
			invalid++
			sc.spanChunk = append(sc.spanChunk, -1)
			continue
		}
		id := pcommon.TraceID(span.TraceID)
		if tn != 0 {
			id = keyed(id, key)
		}
		if last < 0 || sc.builders[last].id != id {
			idx, ok := sc.index[id]
			if !ok {
				idx = len(sc.builders)
				sc.builders = append(sc.builders, chunkBuilder{
					traceChunk: newTraceChunk(id, tn),
					shard:      shardOf(id, len(p.shards)),
				})
				sc.index[id] = idx
			}
			last = idx
		}
		sc.spanChunk = append(sc.spanChunk, int32(last))
		b := &sc.builders[last]
		b.addSpan(span, sc.services[span.Resource], sc.hosts[span.Resource])
	}
	if len(sc.builders) == 0 {
		return received, invalid
	}
	off := 0
	for i := range sc.builders {
		b := &sc.builders[i]
		b.first, b.next = off, off
		off += b.count
	}
	sc.sorted = slices.Grow(sc.sorted[:0], off)[:off]
	for i := range req.Spans {
		if ci := sc.spanChunk[i]; ci >= 0 {
			b := &sc.builders[ci]
			sc.sorted[b.next] = req.Spans[i]
			b.next++
		}
	}
	sc.plain = sc.plain[:0]
	for i := range sc.builders {
		b := &sc.builders[i]
		sc.plain = sc.enc.Append(sc.plain, req.Resources, req.Scopes, sc.sorted[b.first:b.next])
		b.plainEnd = len(sc.plain)
		b.tailRes, b.tail = sc.enc.ResourceTail()
	}
	var buffered int64 // read only where buffer_compression_above asks for it: a sum over the shards
	if p.dicts.above > 0 {
		buffered = p.buffered()
	}
	cd := p.dicts.codecFor(sc.plain, buffered, p.now())
	sc.tails = sc.tails[:0]
	sc.tailAt = slices.Grow(sc.tailAt[:0], len(req.Resources))[:len(req.Resources)]
	clear(sc.tailAt)
	start, stored := 0, 0
	for i := range sc.builders {
		b := &sc.builders[i]
		plain := sc.plain[start:b.plainEnd]
		start = b.plainEnd
		// The chunks of a request's resource all end with the same bytes,
		// the resource: they are compressed once, as a block of their own
		// that each frame repeats.
		var tail []byte
		if cd != nil && b.tail > 0 {
			tail = sc.tailBlock(cd, b.tailRes, plain[len(plain)-b.tail:])
			plain = plain[:len(plain)-b.tail]
		}
		block := cd.block(plain, &sc.block)
		n := frameSize(len(block))
		size := n
		if tail != nil {
			size += frameSize(len(tail))
		}
		b.codec = cd
		b.frames = p.mem.alloc(size)
		putFrame(b.frames.b, block)
		if tail != nil {
			putFrame(b.frames.b[n:], tail)
		}
		b.bytes = int64(cap(b.frames.b)) + chunkOverhead
		stored += len(b.frames.b)
	}
	p.tel.TracesiftSamplerFrameBytes.Add(context.Background(), int64(len(sc.plain)), p.tel.formPlain)
	p.tel.TracesiftSamplerFrameBytes.Add(context.Background(), int64(stored), p.tel.formStored)
	return received, invalid
}

// buffered is the accounted memory queued for and buffered in the shards.
func (p *sampler) buffered() int64 {
	var n int64
	for _, sh := range p.shards {
		n += sh.used.Load()
	}
	return n
}

// partition lays the chunks out shard by shard, in batches the shards
// recycle once ingested.
func (p *sampler) partition(sc *scratch) [][]traceChunk {
	for i := range sc.builders {
		sc.counts[sc.builders[i].shard]++
	}
	batches := make([][]traceChunk, len(p.shards))
	for s, c := range sc.counts {
		if c > 0 {
			batches[s] = p.shards[s].batch(c)
		}
	}
	for i := range sc.builders {
		b := &sc.builders[i]
		batches[b.shard] = append(batches[b.shard], b.traceChunk)
	}
	return batches
}

// send hands each shard its batch, or none of them if the request does not
// fit. p.mu is held shared. Frames not handed over are freed.
func (p *sampler) send(ctx context.Context, batches [][]traceChunk) error {
	// The whole request is admitted or refused before anything is sent, so a
	// refused request leaves nothing behind that its retry would duplicate.
	sizes := make([]int64, len(batches))
	for i, b := range batches {
		for j := range b {
			sizes[i] += b[j].bytes
		}
		if sh := p.shards[i]; sizes[i] > 0 && sh.used.Load()+sizes[i] > sh.budget {
			p.freeBatches(batches)
			return p.pushback(ctx, i, sizes[i])
		}
	}
	// Arrival is stamped here rather than when a shard gets to the batch, so
	// that time spent queued does not count as the trace being quiet.
	at := p.now()
	for i, b := range batches {
		if len(b) == 0 {
			continue
		}
		sh := p.shards[i]
		sh.addUsed(sizes[i])
		select {
		case sh.in <- shardMsg{chunks: b, at: at}:
		case <-ctx.Done():
			p.unsent(batches, sizes, i)
			return fmt.Errorf("tracesift_sampler: queue of shard %d full (raise `shard_queue_size` or `num_shards`): %w", i, ctx.Err())
		case <-p.stopping:
			p.unsent(batches, sizes, i)
			return errStopped
		}
	}
	return nil
}

// unsent releases the memory accounted for the batches from index i on,
// which were not handed to their shards, and frees their frames.
func (p *sampler) unsent(batches [][]traceChunk, sizes []int64, i int) {
	for j := i; j < len(batches); j++ {
		if len(batches[j]) > 0 && sizes[j] > 0 {
			p.shards[j].addUsed(-sizes[j])
		}
	}
	p.freeBatches(batches[i:])
}

func (p *sampler) freeBatches(batches [][]traceChunk) {
	for _, b := range batches {
		for j := range b {
			p.mem.free(b[j].frames)
		}
	}
}

// shardOf hashes a trace's key (its id for the default tenant) with FNV-1a
// rather than taking its bytes: ids from 64-bit tracers have a zero upper
// half, and some generators are not random at all.
func shardOf(id pcommon.TraceID, n int) int {
	const (
		offset64 = 14695981039346656037
		prime64  = 1099511628211
	)
	h := uint64(offset64)
	for _, b := range id {
		h ^= uint64(b)
		h *= prime64
	}
	return int(h % uint64(n))
}

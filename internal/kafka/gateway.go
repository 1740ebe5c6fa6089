package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tracesift/tracesift/internal/otlpwire"
	"github.com/tracesift/tracesift/internal/tenant"
)

// retryDelay is what a client is told to wait when the broker did not take
// its spans.
const retryDelay = time.Second

// partitionsRefresh is how often the gateway re-reads the spans topic's
// partition count: added partitions are used from then on (and re-hash
// traces, as any change of the count does).
const partitionsRefresh = 30 * time.Second

// SpanProducer is the gateway's trace path: it splits each OTLP request by
// the partition of each span's trace (its key: the trace id XOR the
// tenant's key) without decoding it, and produces one message per
// partition — the spans of the request's traces in that partition, with the
// request's tenant in TenantHeader — returning once the broker has
// acknowledged all of them, so an acknowledged span is durable. It takes the
// sampler's place behind the OTLP receiver.
type SpanProducer struct {
	cfg    Config
	logger *zap.Logger
	w      *kgo.Writer
	pool   sync.Pool // *split

	// partitions is the spans topic's partition count; 0 until read.
	partitions atomic.Int32
	refreshMu  sync.Mutex
	stop       chan struct{}
	stopped    sync.WaitGroup

	invalidLogged atomic.Bool
	// invalid counts spans without a trace or span id, which are dropped.
	invalid func(ctx context.Context, n int)
}

// NewSpanProducer returns a producer to cfg's spans topic; invalid counts
// the spans it drops for an empty trace or span id.
func NewSpanProducer(cfg Config, logger *zap.Logger, invalid func(ctx context.Context, n int)) *SpanProducer {
	return &SpanProducer{cfg: cfg, logger: logger, invalid: invalid, stop: make(chan struct{}),
		pool: sync.Pool{New: func() any { return &split{} }}}
}

// Start creates the topics if asked to, opens the writer and reads the
// partition count.
func (p *SpanProducer) Start(ctx context.Context, _ component.Host) error {
	if p.cfg.CreateTopics {
		if err := EnsureTopics(ctx, &p.cfg); err != nil {
			// The broker may come later: clients are told to retry meanwhile.
			p.logger.Warn("Could not create the Kafka topics; spans are refused (503) until the broker takes them",
				zap.Error(err))
		}
	}
	p.w = newWriter(&p.cfg, p.cfg.Topics.Spans, 16)
	_, _ = p.partitionCount(ctx)
	p.stopped.Add(1)
	go p.refreshPartitions()
	return nil
}

// Shutdown closes the writer.
func (p *SpanProducer) Shutdown(context.Context) error {
	if p.w == nil {
		return nil
	}
	close(p.stop)
	p.stopped.Wait()
	return p.w.Close()
}

// partitionCount is the spans topic's partition count, read from the
// brokers the first time (one caller at a time).
func (p *SpanProducer) partitionCount(ctx context.Context) (int, error) {
	if n := p.partitions.Load(); n > 0 {
		return int(n), nil
	}
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	if n := p.partitions.Load(); n > 0 {
		return int(n), nil
	}
	n, err := topicPartitions(ctx, &p.cfg, p.cfg.Topics.Spans)
	if err != nil {
		return 0, err
	}
	p.partitions.Store(int32(n))
	return n, nil
}

func (p *SpanProducer) refreshPartitions() {
	defer p.stopped.Done()
	t := time.NewTicker(partitionsRefresh)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.WriteTimeout)
		n, err := topicPartitions(ctx, &p.cfg, p.cfg.Topics.Spans)
		cancel()
		if err == nil && int32(n) != p.partitions.Swap(int32(n)) {
			p.logger.Warn("The spans topic's partition count changed: traces are re-hashed, and a trace in flight "+
				"may be split between two samplers", zap.Int("partitions", n))
		}
	}
}

// split is one request's spans grouped by partition.
type split struct {
	req   otlpwire.Request
	enc   otlpwire.Encoder
	parts [][]otlpwire.Span // by partition
	msgs  []kgo.Message
	buf   []byte
	ends  []int  // of each message's value in buf
	keys  []byte // each message's key, 16 bytes a message
}

// ConsumeRawTraces implements the OTLP receiver's TraceSampler; the spans
// are ctx's tenant's (tenant.FromContext).
func (p *SpanProducer) ConsumeRawTraces(ctx context.Context, req []byte) error {
	sp := p.pool.Get().(*split)
	defer p.put(sp)
	if err := otlpwire.Scan(req, &sp.req); err != nil {
		return consumererror.NewPermanent(err)
	}
	if p.w == nil {
		return status.Error(codes.Unavailable, "the gateway is not started")
	}
	n, err := p.partitionCount(ctx)
	if err != nil {
		return unavailable(err)
	}
	if len(sp.parts) < n {
		sp.parts = append(sp.parts, make([][]otlpwire.Span, n-len(sp.parts))...)
	}
	tn := tenant.FromContext(ctx)
	var key [16]byte // zero for the default tenant: keys are the trace ids
	if tn != tenant.Default {
		key = tenant.Key(tn)
	}
	invalid := 0
	for i := range sp.req.Spans {
		s := &sp.req.Spans[i]
		if !s.Valid() {
			invalid++
			continue
		}
		k := traceKey(s.TraceID, &key)
		at := partitionOf(k[:], n)
		sp.parts[at] = append(sp.parts[at], *s)
	}
	if invalid > 0 {
		p.invalid(ctx, invalid)
		if p.invalidLogged.CompareAndSwap(false, true) {
			p.logger.Warn("Skipping spans with an empty trace id or span id: they cannot be assigned to a trace. "+
				"Fix the instrumentation that sends them; they are counted in otelcol_tracesift_receiver_spans_invalid "+
				"(this message is logged once).", zap.Int("invalid_spans_in_request", invalid))
		}
	}
	// One encoding buffer for the request; each message a slice of it,
	// keyed by one of its traces' keys so that the writer's Hash balancer
	// puts it where every one of them belongs (partitionOf).
	sp.buf, sp.ends, sp.keys = sp.buf[:0], sp.ends[:0], sp.keys[:0]
	for _, spans := range sp.parts[:n] {
		if len(spans) > 0 {
			sp.buf = sp.enc.Append(sp.buf, sp.req.Resources, sp.req.Scopes, spans)
			sp.ends = append(sp.ends, len(sp.buf))
			k := traceKey(spans[0].TraceID, &key)
			sp.keys = append(sp.keys, k[:]...)
			sp.msgs = append(sp.msgs, kgo.Message{})
		}
	}
	if len(sp.msgs) == 0 {
		return nil
	}
	var headers []kgo.Header
	if tn != tenant.Default {
		headers = []kgo.Header{{Key: TenantHeader, Value: []byte(tn)}}
	}
	start := 0
	for i, end := range sp.ends {
		sp.msgs[i].Key = sp.keys[16*i : 16*i+16 : 16*i+16]
		sp.msgs[i].Value = sp.buf[start:end:end]
		sp.msgs[i].Headers = headers
		start = end
	}
	if err := p.w.WriteMessages(ctx, sp.msgs...); err != nil {
		return unavailable(fmt.Errorf("the Kafka broker did not acknowledge the spans: %w", err))
	}
	return nil
}

func (p *SpanProducer) put(sp *split) {
	if len(sp.parts) > 4096 || cap(sp.buf) > 16<<20 {
		return
	}
	sp.req.Reset()
	for i := range sp.parts {
		clear(sp.parts[i])
		sp.parts[i] = sp.parts[i][:0]
	}
	clear(sp.msgs)
	sp.msgs = sp.msgs[:0]
	p.pool.Put(sp)
}

// TenantHeader is the header of a spans message that names its tenant;
// absent for tenant.Default.
const TenantHeader = "tenant"

// traceKey is a trace's key: its id XOR its tenant's key, the id itself for
// the default tenant (tenant.Key). The sampler keys traces alike.
func traceKey(id [16]byte, key *[16]byte) [16]byte {
	for i := range id {
		id[i] ^= key[i]
	}
	return id
}

// tenantOf is the tenant a spans message names (TenantHeader).
func tenantOf(headers []kgo.Header) string {
	for _, h := range headers {
		if h.Key == TenantHeader && len(h.Value) > 0 {
			return string(h.Value)
		}
	}
	return tenant.Default
}

// unavailable is err as the OTLP receivers pass it on: UNAVAILABLE with a
// retry delay (HTTP 503 with Retry-After).
func unavailable(err error) error {
	st := status.New(codes.Unavailable, err.Error())
	if d, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryDelay)}); derr == nil {
		st = d
	}
	return st.Err()
}

// ErrNotStarted is returned by producers used before Start.
var ErrNotStarted = errors.New("kafka: not started")

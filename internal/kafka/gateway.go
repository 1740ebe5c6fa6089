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
)

// retryDelay is what a client is told to wait when the broker did not take
// its spans.
const retryDelay = time.Second

// SpanProducer is the gateway's trace path: it splits each OTLP request by
// trace id without decoding it and produces each trace's spans to the spans
// topic, returning once the broker has acknowledged all of them — so an
// acknowledged span is durable. It takes the sampler's place behind the
// OTLP receiver.
type SpanProducer struct {
	cfg    Config
	logger *zap.Logger
	w      *kgo.Writer
	pool   sync.Pool // *split

	invalidLogged atomic.Bool
	// invalid counts spans without a trace or span id, which are dropped.
	invalid func(ctx context.Context, n int)
}

// NewSpanProducer returns a producer to cfg's spans topic; invalid counts
// the spans it drops for an empty trace or span id.
func NewSpanProducer(cfg Config, logger *zap.Logger, invalid func(ctx context.Context, n int)) *SpanProducer {
	return &SpanProducer{cfg: cfg, logger: logger, invalid: invalid,
		pool: sync.Pool{New: func() any { return &split{index: map[[16]byte]int{}} }}}
}

// Start creates the topics if asked to and opens the writer.
func (p *SpanProducer) Start(ctx context.Context, _ component.Host) error {
	if p.cfg.CreateTopics {
		if err := EnsureTopics(ctx, &p.cfg); err != nil {
			// The broker may come later: clients are told to retry meanwhile.
			p.logger.Warn("Could not create the Kafka topics; spans are refused (503) until the broker takes them",
				zap.Error(err))
		}
	}
	p.w = newWriter(&p.cfg, p.cfg.Topics.Spans)
	return nil
}

// Shutdown closes the writer.
func (p *SpanProducer) Shutdown(context.Context) error {
	if p.w == nil {
		return nil
	}
	return p.w.Close()
}

// split is one request's spans grouped by trace.
type split struct {
	req    otlpwire.Request
	enc    otlpwire.Encoder
	index  map[[16]byte]int
	traces [][]otlpwire.Span
	msgs   []kgo.Message
	buf    []byte
}

// ConsumeRawTraces implements the OTLP receiver's TraceSampler.
func (p *SpanProducer) ConsumeRawTraces(ctx context.Context, req []byte) error {
	sp := p.pool.Get().(*split)
	defer p.put(sp)
	if err := otlpwire.Scan(req, &sp.req); err != nil {
		return consumererror.NewPermanent(err)
	}
	invalid := 0
	for i := range sp.req.Spans {
		s := &sp.req.Spans[i]
		if !s.Valid() {
			invalid++
			continue
		}
		at, ok := sp.index[s.TraceID]
		if !ok {
			at = len(sp.traces)
			sp.index[s.TraceID] = at
			if at < cap(sp.traces) {
				sp.traces = sp.traces[:at+1]
				sp.traces[at] = sp.traces[at][:0]
			} else {
				sp.traces = append(sp.traces, nil)
			}
		}
		sp.traces[at] = append(sp.traces[at], *s)
	}
	if invalid > 0 {
		p.invalid(ctx, invalid)
		if p.invalidLogged.CompareAndSwap(false, true) {
			p.logger.Warn("Skipping spans with an empty trace id or span id: they cannot be assigned to a trace. "+
				"Fix the instrumentation that sends them; they are counted in otelcol_tracesift_receiver_spans_invalid "+
				"(this message is logged once).", zap.Int("invalid_spans_in_request", invalid))
		}
	}
	if len(sp.traces) == 0 {
		return nil
	}
	// One encoding buffer for the request; each message a slice of it.
	sp.buf = sp.buf[:0]
	ends := make([]int, len(sp.traces))
	for i, spans := range sp.traces {
		sp.buf = sp.enc.Append(sp.buf, sp.req.Resources, sp.req.Scopes, spans)
		ends[i] = len(sp.buf)
	}
	sp.msgs = sp.msgs[:0]
	start := 0
	for i, spans := range sp.traces {
		id := spans[0].TraceID
		sp.msgs = append(sp.msgs, kgo.Message{Key: id[:], Value: sp.buf[start:ends[i]]})
		start = ends[i]
	}
	if p.w == nil {
		return status.Error(codes.Unavailable, "the gateway is not started")
	}
	if err := p.w.WriteMessages(ctx, sp.msgs...); err != nil {
		return unavailable(fmt.Errorf("the Kafka broker did not acknowledge the spans: %w", err))
	}
	return nil
}

func (p *SpanProducer) put(sp *split) {
	if len(sp.traces) > 4096 || cap(sp.buf) > 16<<20 {
		return
	}
	sp.req.Reset()
	clear(sp.index)
	for i := range sp.traces {
		clear(sp.traces[i])
	}
	sp.traces = sp.traces[:0]
	clear(sp.msgs)
	p.pool.Put(sp)
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

package kafka

import (
	"context"
	"fmt"

	kgo "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Producer writes pdata to a topic as OTLP protobuf requests, each
// acknowledged by every in-sync replica before a write returns. A batch too
// large for one message is split by resource.
type Producer struct {
	cfg   Config
	topic string
	w     *kgo.Writer
}

// NewProducer returns a producer to topic.
func NewProducer(cfg Config, topic string) *Producer {
	return &Producer{cfg: cfg, topic: topic}
}

// Start creates the topics if asked to and opens the writer.
func (p *Producer) Start(ctx context.Context, _ component.Host) error {
	if p.cfg.CreateTopics {
		if err := EnsureTopics(ctx, &p.cfg); err != nil {
			return err
		}
	}
	p.w = newWriter(&p.cfg, p.topic, 16)
	return nil
}

// Shutdown closes the writer.
func (p *Producer) Shutdown(context.Context) error {
	if p.w == nil {
		return nil
	}
	return p.w.Close()
}

// WriteTraces produces td.
func (p *Producer) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	var m ptrace.ProtoMarshaler
	msgs, err := encode(td, m.TracesSize, m.MarshalTraces, func(td ptrace.Traces) (ptrace.Traces, ptrace.Traces, bool) {
		rs := td.ResourceSpans()
		a, b := ptrace.NewTraces(), ptrace.NewTraces()
		for i := range rs.Len() {
			dst := a
			if i >= rs.Len()/2 {
				dst = b
			}
			rs.At(i).CopyTo(dst.ResourceSpans().AppendEmpty())
		}
		return a, b, rs.Len() > 1
	})
	if err != nil {
		return err
	}
	return p.write(ctx, msgs)
}

// WriteLogs produces ld.
func (p *Producer) WriteLogs(ctx context.Context, ld plog.Logs) error {
	var m plog.ProtoMarshaler
	msgs, err := encode(ld, m.LogsSize, m.MarshalLogs, func(ld plog.Logs) (plog.Logs, plog.Logs, bool) {
		rl := ld.ResourceLogs()
		a, b := plog.NewLogs(), plog.NewLogs()
		for i := range rl.Len() {
			dst := a
			if i >= rl.Len()/2 {
				dst = b
			}
			rl.At(i).CopyTo(dst.ResourceLogs().AppendEmpty())
		}
		return a, b, rl.Len() > 1
	})
	if err != nil {
		return err
	}
	return p.write(ctx, msgs)
}

// encode marshals v into messages of at most half the largest a topic
// takes, halving it by resource (halve) while it is larger.
func encode[T any](v T, size func(T) int, marshal func(T) ([]byte, error), halve func(T) (T, T, bool)) ([]kgo.Message, error) {
	if size(v) > maxMessageBytes/2 {
		if a, b, ok := halve(v); ok {
			ma, err := encode(a, size, marshal, halve)
			if err != nil {
				return nil, err
			}
			mb, err := encode(b, size, marshal, halve)
			return append(ma, mb...), err
		}
	}
	buf, err := marshal(v)
	if err != nil {
		return nil, consumererror.NewPermanent(err)
	}
	return []kgo.Message{{Value: buf}}, nil
}

func (p *Producer) write(ctx context.Context, msgs []kgo.Message) error {
	if p.w == nil {
		return ErrNotStarted
	}
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return unavailable(fmt.Errorf("the Kafka broker did not acknowledge the write to %s: %w", p.topic, err))
	}
	return nil
}

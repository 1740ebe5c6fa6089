package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/tailsampler"
)

// DecisionLog records a sampler's decisions in the decisions topic, keyed
// by the trace's key (Decision.TraceID: its id XOR its tenant's key, as the
// gateway partitions spans) and so in the partition of the trace's spans
// (tailsampler.DecisionLog).
type DecisionLog struct {
	w      *kgo.Writer
	logger *zap.Logger
}

// NewDecisionLog opens a writer to cfg's decisions topic.
func NewDecisionLog(cfg *Config, logger *zap.Logger) *DecisionLog {
	return &DecisionLog{w: newWriter(cfg, cfg.Topics.Decisions, 256), logger: logger}
}

// Record implements tailsampler.DecisionLog.
func (l *DecisionLog) Record(ctx context.Context, ds []tailsampler.Decision) error {
	msgs := make([]kgo.Message, len(ds))
	for i, d := range ds {
		v := make([]byte, 9)
		if d.Kept {
			v[0] = 1
		}
		binary.BigEndian.PutUint64(v[1:], uint64(d.Through))
		msgs[i] = kgo.Message{Key: d.TraceID[:], Value: v}
	}
	// Until Kafka takes them (or the sampler stops): the shard waits, and so
	// pushes back, rather than leave its messages unsettled until the next
	// rebalance.
	wait := 100 * time.Millisecond
	for try := 0; ; try++ {
		err := l.w.WriteMessages(ctx, msgs...)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if try%10 == 0 && l.logger != nil {
			l.logger.Warn("Recording decisions failed; retrying (the shard waits)", zap.Int("try", try+1), zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// Close closes the writer.
func (l *DecisionLog) Close() error { return l.w.Close() }

// loadDecisions reads the last n decisions of a partition of the decisions
// topic: those a sampler taking the partition over must follow.
func loadDecisions(ctx context.Context, cfg *Config, partition, n int) ([]tailsampler.Decision, error) {
	conn, err := kgo.DialLeader(ctx, "tcp", cfg.brokers()[0], cfg.Topics.Decisions, partition)
	if err != nil {
		return nil, fmt.Errorf("reading decisions of partition %d: %w", partition, err)
	}
	first, last, err := conn.ReadOffsets()
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("reading decisions of partition %d: %w", partition, err)
	}
	if last <= first {
		return nil, nil
	}
	r := kgo.NewReader(kgo.ReaderConfig{Brokers: cfg.brokers(), Topic: cfg.Topics.Decisions, Partition: partition,
		MaxBytes: maxMessageBytes})
	defer r.Close()
	if err := r.SetOffset(max(first, last-int64(n))); err != nil {
		return nil, err
	}
	var out []tailsampler.Decision
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading decisions of partition %d: %w", partition, err)
		}
		if len(m.Key) == 16 && len(m.Value) == 9 {
			out = append(out, tailsampler.Decision{TraceID: pcommon.TraceID(m.Key), Kept: m.Value[0] == 1,
				Through: int64(binary.BigEndian.Uint64(m.Value[1:]))})
		}
		if m.Offset >= last-1 {
			return out, nil
		}
	}
}

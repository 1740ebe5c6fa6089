package kafka

import (
	"context"
	"errors"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// IngestConfig batches what an ingester inserts.
type IngestConfig struct {
	// MaxItems is how many spans or log records one insert takes at most.
	// Default 100 000. As the all-in-one's store exporter batches: the
	// engine's cost is mostly per insert (each makes a part per table to
	// merge later), so fewer, larger inserts.
	MaxItems int `mapstructure:"max_items"`
	// MaxWait is how long a batch waits to fill. Default 2 s.
	MaxWait time.Duration `mapstructure:"max_wait"`
}

// Ingester reads a topic of OTLP requests (kept traces, or logs) in the
// ingesters' consumer group and hands them to next in batches, committing a
// batch's offsets only after next returned without error: an insert that
// fails is read again (the store's inserts are idempotent, so a replay
// stores nothing twice).
type Ingester struct {
	cfg    Config
	group  GroupConfig
	batch  IngestConfig
	topic  string
	logger *zap.Logger
	// consume decodes a message into the batch and returns its items;
	// flush hands the batch on; reset starts a new one.
	consume func(b []byte) (int, error)
	flush   func(ctx context.Context) error
	reset   func()
	// Skipped counts the messages skipped as not OTLP; nil: not counted.
	Skipped func(ctx context.Context, topic string)
}

// NewTracesIngester reads cfg's kept topic into next.
func NewTracesIngester(cfg Config, group GroupConfig, batch IngestConfig, next consumer.Traces, logger *zap.Logger) *Ingester {
	td := ptrace.NewTraces()
	var u ptrace.ProtoUnmarshaler
	return &Ingester{cfg: cfg, group: group, batch: batch, topic: cfg.Topics.Kept, logger: logger,
		consume: func(b []byte) (int, error) {
			m, err := u.UnmarshalTraces(b)
			if err != nil {
				return 0, err
			}
			n := m.SpanCount()
			m.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
			return n, nil
		},
		flush: func(ctx context.Context) error { return next.ConsumeTraces(ctx, td) },
		reset: func() { td = ptrace.NewTraces() }}
}

// NewLogsIngester reads cfg's logs topic into next.
func NewLogsIngester(cfg Config, group GroupConfig, batch IngestConfig, next consumer.Logs, logger *zap.Logger) *Ingester {
	ld := plog.NewLogs()
	var u plog.ProtoUnmarshaler
	return &Ingester{cfg: cfg, group: group, batch: batch, topic: cfg.Topics.Logs, logger: logger,
		consume: func(b []byte) (int, error) {
			m, err := u.UnmarshalLogs(b)
			if err != nil {
				return 0, err
			}
			n := m.LogRecordCount()
			m.ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
			return n, nil
		},
		flush: func(ctx context.Context) error { return next.ConsumeLogs(ctx, ld) },
		reset: func() { ld = plog.NewLogs() }}
}

// Run consumes until ctx ends.
func (in *Ingester) Run(ctx context.Context) error {
	r := kgo.NewReader(kgo.ReaderConfig{
		Brokers: in.cfg.brokers(), Topic: in.topic, GroupID: in.group.ID,
		SessionTimeout: in.group.SessionTimeout, RebalanceTimeout: in.group.SessionTimeout,
		HeartbeatInterval: in.group.SessionTimeout / 10,
		StartOffset:       kgo.FirstOffset, MaxBytes: maxMessageBytes,
		MinBytes: fetchMinBytes, MaxWait: fetchMaxWait, ErrorLogger: readerErrors(in.logger, in.topic),
		CommitInterval: 0, // commits are explicit, after the insert
	})
	defer r.Close()
	var (
		msgs  []kgo.Message
		items int
	)
	for {
		deadline := time.Now().Add(in.batch.MaxWait)
		for items < in.batch.MaxItems {
			fctx, cancel := context.WithDeadline(ctx, deadline)
			m, err := r.FetchMessage(fctx)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					in.logger.Warn("Reading a topic failed", zap.String("topic", in.topic), zap.Error(err))
				}
				break
			}
			n, err := in.consume(m.Value)
			if err != nil {
				in.logger.Error("Skipping a message that is not OTLP", zap.String("topic", in.topic),
					zap.Int("partition", m.Partition), zap.Int64("offset", m.Offset), zap.Error(err))
				if in.Skipped != nil {
					in.Skipped(ctx, in.topic)
				}
			}
			msgs = append(msgs, m)
			items += n
		}
		if len(msgs) == 0 {
			continue
		}
		for {
			err := in.flush(ctx)
			if err == nil {
				break
			}
			if consumererror.IsPermanent(err) {
				in.logger.Error("The store refused a batch for good; it is skipped", zap.String("topic", in.topic),
					zap.Int("items", items), zap.Error(err))
				break
			}
			in.logger.Warn("Inserting a batch failed; retrying", zap.String("topic", in.topic), zap.Error(err))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
		in.reset()
		if err := r.CommitMessages(ctx, msgs...); err != nil && ctx.Err() == nil {
			in.logger.Warn("Committing offsets failed; the batch will be read again (and stored once)",
				zap.String("topic", in.topic), zap.Error(err))
		}
		msgs, items = msgs[:0], 0
	}
}

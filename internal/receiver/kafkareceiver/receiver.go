// Package kafkareceiver is the `tracesift_kafka` receiver of distributed
// mode, in one of two roles:
//   - sampler: reads the spans topic in the samplers' consumer group into
//     the tail sampler (the all-in-one's, with receipts), whose kept traces
//     go down the pipeline (to a tracesift_kafka exporter: the kept topic);
//     offsets are committed only up to what is decided and handed on.
//   - ingester: reads the kept topic (traces) and the logs topic (logs) in
//     the ingesters' group into the pipeline (a tracesift exporter: the
//     store), committing after each insert.
package kafkareceiver

//go:generate mdatagen metadata.yaml

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/kafka"
	"github.com/tracesift/tracesift/internal/receiver/kafkareceiver/internal/metadata"
	"github.com/tracesift/tracesift/internal/tailsampler"
)

// Roles of the receiver.
const (
	RoleSampler  = "sampler"
	RoleIngester = "ingester"
)

// Config is the receiver's configuration.
type Config struct {
	Kafka kafka.Config `mapstructure:"kafka"`
	// Role is sampler or ingester.
	Role  string            `mapstructure:"role"`
	Group kafka.GroupConfig `mapstructure:"group"`
	// Sampler configures the tail sampler of the sampler role, as the
	// tracesift_otlp receiver's sampler section does the all-in-one's.
	Sampler tailsampler.Config `mapstructure:"sampler"`
	// Ingest batches the ingester's inserts.
	Ingest kafka.IngestConfig `mapstructure:"ingest"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	errs := []error{c.Kafka.Validate()}
	switch c.Role {
	case RoleSampler:
		errs = append(errs, c.Sampler.Validate())
	case RoleIngester:
		if c.Ingest.MaxItems < 1 || c.Ingest.MaxWait <= 0 {
			errs = append(errs, errors.New("ingest: max_items and max_wait must be positive"))
		}
	default:
		errs = append(errs, fmt.Errorf("role: %q, want %s or %s", c.Role, RoleSampler, RoleIngester))
	}
	if c.Group.SessionTimeout < time.Second || c.Group.CommitInterval <= 0 {
		errs = append(errs, errors.New("group: session_timeout at least 1s, commit_interval positive"))
	}
	return errors.Join(errs...)
}

func createDefaultConfig() component.Config {
	sampler := *tailsampler.NewFactory().CreateDefaultConfig().(*tailsampler.Config)
	// A sampler buffers only its partitions' traces, usually far below its
	// bound: compressing them would be a fifth of its CPU for memory it does
	// not need (docs/benchmarks.md).
	sampler.BufferCompressionAbove = 0.5
	return &Config{
		Kafka:   kafka.DefaultConfig(),
		Role:    RoleSampler,
		Group:   kafka.GroupConfig{SessionTimeout: 10 * time.Second, CommitInterval: time.Second},
		Sampler: sampler,
		Ingest:  kafka.IngestConfig{MaxItems: 100000, MaxWait: 2 * time.Second},
	}
}

// NewFactory returns the receiver's factory.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig,
		receiver.WithTraces(createTraces, metadata.TracesStability),
		receiver.WithLogs(createLogs, metadata.LogsStability))
}

// runner is a consumer loop run between Start and Shutdown.
type runner struct {
	logger *zap.Logger
	run    func(ctx context.Context) error
	// start and stop are the sampler's, around the loop; nil for ingesters.
	start  func(ctx context.Context, host component.Host) error
	stop   func(ctx context.Context) error
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (r *runner) Start(ctx context.Context, host component.Host) error {
	if r.start != nil {
		if err := r.start(ctx, host); err != nil {
			return err
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.run(rctx); err != nil {
			r.logger.Error("The Kafka consumer stopped", zap.Error(err))
		}
	}()
	return nil
}

func (r *runner) Shutdown(ctx context.Context) error {
	if r.cancel != nil {
		r.cancel()
		r.wg.Wait()
	}
	if r.stop != nil {
		return r.stop(ctx)
	}
	return nil
}

// skipped counts skipped messages in the receiver's self-metric.
func skipped(set receiver.Settings) (func(ctx context.Context, topic string), func(), error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, topic string) {
		tel.TracesiftKafkaMessagesSkipped.Add(ctx, 1, metric.WithAttributes(attribute.String("topic", topic)))
	}, tel.Shutdown, nil
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	c := cfg.(*Config)
	count, done, err := skipped(set)
	if err != nil {
		return nil, err
	}
	if c.Role == RoleIngester {
		in := kafka.NewTracesIngester(c.Kafka, c.groupOr("tracesift-ingest-traces"), c.Ingest, next, set.Logger)
		in.Skipped = count
		return &runner{logger: set.Logger, run: in.Run, stop: func(context.Context) error { done(); return nil }}, nil
	}
	log := kafka.NewDecisionLog(&c.Kafka, set.Logger)
	s, err := tailsampler.NewReceipted(processor.Settings{ID: set.ID, TelemetrySettings: set.TelemetrySettings,
		BuildInfo: set.BuildInfo}, &c.Sampler, next, log)
	if err != nil {
		return nil, err
	}
	sc := kafka.NewSamplerConsumer(c.Kafka, c.groupOr("tracesift-samplers"), s, c.Sampler.DecisionCacheSize, set.Logger)
	sc.Skipped = count
	return &runner{logger: set.Logger, run: sc.Run,
		start: func(ctx context.Context, host component.Host) error {
			if c.Kafka.CreateTopics {
				if err := kafka.EnsureTopics(ctx, &c.Kafka); err != nil {
					return err
				}
			}
			return s.Start(ctx, host)
		},
		// What is still buffered is read again by the partitions' next
		// owners: deciding it now, on what has arrived so far, could drop
		// a trace whose error span is yet to be read.
		stop: func(ctx context.Context) error {
			derr := s.Discard(ctx)
			done()
			return errors.Join(derr, s.Shutdown(ctx), log.Close())
		}}, nil
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	c := cfg.(*Config)
	if c.Role != RoleIngester {
		return nil, fmt.Errorf("%s: logs are read by the %s role only", set.ID, RoleIngester)
	}
	count, done, err := skipped(set)
	if err != nil {
		return nil, err
	}
	in := kafka.NewLogsIngester(c.Kafka, c.groupOr("tracesift-ingest-logs"), c.Ingest, next, set.Logger)
	in.Skipped = count
	return &runner{logger: set.Logger, run: in.Run, stop: func(context.Context) error { done(); return nil }}, nil
}

// groupOr is the configured group, or def.
func (c *Config) groupOr(def string) kafka.GroupConfig {
	g := c.Group
	if g.ID == "" {
		g.ID = def
	}
	return g
}

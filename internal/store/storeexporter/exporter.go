// Package storeexporter is the `tracesift` exporter: it writes the spans the
// sampler kept and every log record into the store of a tracesift_store
// extension.
package storeexporter

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/storeext"
)

// Type is the exporter's component type.
var Type = component.MustNewType("tracesift")

// Config is the exporter's configuration.
type Config struct {
	// Store is the id of the tracesift_store extension to write to.
	// Default: tracesift_store.
	Store component.ID `mapstructure:"store"`
	// QueueConfig buffers and batches writes (the Collector's
	// sending_queue). Default: on, blocking when full so that a slow store
	// pushes back on the sampler instead of dropping kept traces.
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// BackOffConfig retries failed writes (the Collector's
	// retry_on_failure). Default: on.
	BackOffConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Store.Type().String() == "" {
		return errors.New("`store` must name a tracesift_store extension")
	}
	return nil
}

func createDefaultConfig() component.Config {
	q := exporterhelper.NewDefaultQueueConfig()
	q.BlockOnOverflow = true
	q.NumConsumers = 2
	// Few large inserts: every insert makes a part that ClickHouse merges
	// later, and at 200 ms batches the merges cost more CPU than sampling
	// (measured with make bench). Kept traces and logs wait at most a
	// second longer to become visible.
	b := q.Batch.GetOrInsertDefault()
	b.FlushTimeout = time.Second
	b.MinSize = 20000
	return &Config{
		Store:         component.NewID(storeext.Type),
		QueueConfig:   configoptional.Some(q),
		BackOffConfig: configretry.NewDefaultBackOffConfig(),
	}
}

// NewFactory returns the exporter's factory.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(Type, createDefaultConfig,
		exporter.WithTraces(createTraces, component.StabilityLevelDevelopment),
		exporter.WithLogs(createLogs, component.StabilityLevelDevelopment))
}

type storeExporter struct {
	cfg     *Config
	logger  *zap.Logger
	writer  *store.Writer
	invalid metric.Int64Counter
	written metric.Int64Counter
	// signal is the exporter's signal attribute, built once: it is added
	// on every write.
	signal metric.MeasurementOption
	warned atomic.Bool
}

func newExporter(set exporter.Settings, cfg *Config, signal string) (*storeExporter, error) {
	m := set.MeterProvider.Meter("github.com/tracesift/tracesift/internal/store/storeexporter")
	invalid, err := m.Int64Counter("tracesift_store_records_invalid",
		metric.WithDescription("Spans and log records not stored because an id was invalid"))
	if err != nil {
		return nil, err
	}
	written, err := m.Int64Counter("tracesift_store_records_written",
		metric.WithDescription("Spans and log records written to the store"))
	if err != nil {
		return nil, err
	}
	return &storeExporter{cfg: cfg, logger: set.Logger, invalid: invalid, written: written,
		signal: metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", signal)))}, nil
}

func (e *storeExporter) start(_ context.Context, host component.Host) error {
	p, err := storeext.Find(host, e.cfg.Store)
	if err != nil {
		return err
	}
	e.writer = p.Writer()
	return nil
}

func (e *storeExporter) account(ctx context.Context, signal string, st store.WriteStats) {
	e.written.Add(ctx, int64(st.Written), e.signal)
	if st.Invalid > 0 {
		e.invalid.Add(ctx, int64(st.Invalid), e.signal)
		if e.warned.CompareAndSwap(false, true) {
			e.logger.Warn("skipping records with an empty trace or span id; they are counted in tracesift_store_records_invalid (logged once)",
				zap.String("signal", signal), zap.Int("count", st.Invalid))
		}
	}
}

func (e *storeExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	st, err := e.writer.WriteTraces(ctx, td)
	e.account(ctx, "traces", st)
	return err
}

func (e *storeExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	st, err := e.writer.WriteLogs(ctx, ld)
	e.account(ctx, "logs", st)
	return err
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*Config)
	e, err := newExporter(set, c, "traces")
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewTraces(ctx, set, cfg, e.pushTraces,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig))
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	e, err := newExporter(set, c, "logs")
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewLogs(ctx, set, cfg, e.pushLogs,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig))
}

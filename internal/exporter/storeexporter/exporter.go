// Package storeexporter is the `tracesift` exporter: it writes the spans the
// sampler kept and every log record into the store of a tracesift_store
// extension.
package storeexporter

//go:generate mdatagen metadata.yaml

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

	"github.com/tracesift/tracesift/internal/exporter/storeexporter/internal/metadata"
	"github.com/tracesift/tracesift/internal/extension/storeextension"
	"github.com/tracesift/tracesift/internal/store"
)

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
	// retry_on_failure). Default: on, with exponential backoff (5 s doubling
	// by 1.5 up to 30 s, ±50 % jitter) and no time limit: while the store is
	// down, batches wait in the queue, and once it is full the sampler
	// pushes back on receivers rather than dropping kept traces.
	BackOffConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Store.Type().String() == "" {
		return errors.New("`store` must name a tracesift_store extension")
	}
	return nil
}

// defaultQueueItems bounds the spans or log records waiting for the store:
// about 0.5 GiB of decoded pdata at its worst, reached only while the store
// is failing.
const defaultQueueItems = 500_000

func createDefaultConfig() component.Config {
	q := exporterhelper.NewDefaultQueueConfig()
	q.BlockOnOverflow = true
	q.NumConsumers = 2
	// Bounded in spans or log records, not requests, so that the memory a
	// store outage can hold does not depend on how the items were batched.
	q.Sizer = exporterhelper.RequestSizerTypeItems
	q.QueueSize = defaultQueueItems
	// Few large inserts: every insert has a fixed cost and makes a part that
	// ClickHouse merges later (docs/benchmarks.md). Kept traces and logs
	// wait at most 5 s to be visible; a busy collector fills 20 000 items
	// sooner.
	b := q.Batch.GetOrInsertDefault()
	b.FlushTimeout = 5 * time.Second
	b.MinSize = 20000
	retry := configretry.NewDefaultBackOffConfig()
	retry.MaxElapsedTime = 0 // never give up: the queue's bound pushes back instead
	return &Config{
		Store:         component.NewID(storeextension.Type),
		QueueConfig:   configoptional.Some(q),
		BackOffConfig: retry,
	}
}

// NewFactory returns the exporter's factory.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(metadata.Type, createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability),
		exporter.WithLogs(createLogs, metadata.LogsStability))
}

type storeExporter struct {
	cfg    *Config
	logger *zap.Logger
	writer recordWriter
	// tel holds the instruments declared in metadata.yaml (generated into
	// internal/metadata).
	tel *metadata.TelemetryBuilder
	// signal is the exporter's signal attribute, built once: it is added
	// on every write.
	signal                                metric.MeasurementOption
	warned, warnedExpired, warnedRejected atomic.Bool
}

func newExporter(set exporter.Settings, cfg *Config, signal string) (*storeExporter, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &storeExporter{cfg: cfg, logger: set.Logger, tel: tel,
		signal: metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", signal)))}, nil
}

func (e *storeExporter) start(_ context.Context, host component.Host) error {
	p, err := storeextension.Find(host, e.cfg.Store)
	if err != nil {
		return err
	}
	e.writer = p.Writer()
	return nil
}

func (e *storeExporter) shutdown(context.Context) error {
	e.tel.Shutdown()
	return nil
}

func (e *storeExporter) account(ctx context.Context, signal string, st store.WriteStats) {
	e.tel.TracesiftStoreRecordsWritten.Add(ctx, int64(st.Written), e.signal)
	if st.Invalid > 0 {
		e.tel.TracesiftStoreRecordsInvalid.Add(ctx, int64(st.Invalid), e.signal)
		if e.warned.CompareAndSwap(false, true) {
			e.logger.Warn("skipping records with an empty trace or span id; they are counted in otelcol_tracesift_store_records_invalid (logged once)",
				zap.String("signal", signal), zap.Int("count", st.Invalid))
		}
	}
	if st.Expired > 0 {
		e.tel.TracesiftStoreRecordsExpired.Add(ctx, int64(st.Expired), e.signal)
		if e.warnedExpired.CompareAndSwap(false, true) {
			e.logger.Warn("skipping records older than the store's retention (a backfill, or a client whose clock is wrong); "+
				"they would expire at once. Raise tracesift_store's `retention` to keep them. Counted in otelcol_tracesift_store_records_expired (logged once)",
				zap.String("signal", signal), zap.Int("count", st.Expired))
		}
	}
}

// pushTraces and pushLogs write a batch (writeBatch). The errors a retry
// would meet again (store.IsPermanent) are not returned as they are: the
// batch is written again in parts and only the records the store refuses
// alone are dropped, rather than the batch holding the queue. Every other
// error is retried: inserts are idempotent (see store.InsertStatement), so
// a retry after an unknown outcome stores nothing twice.
func (e *storeExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	return writeBatch(ctx, e, &traceOps, td)
}

func (e *storeExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	return writeBatch(ctx, e, &logOps, ld)
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*Config)
	e, err := newExporter(set, c, "traces")
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewTraces(ctx, set, cfg, e.pushTraces,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
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
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig))
}

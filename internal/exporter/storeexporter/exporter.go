// Package storeexporter is the `tracesift` exporter: it writes the spans the
// sampler kept and every log record into the store of a tracesift_store
// extension.
package storeexporter

//go:generate mdatagen metadata.yaml

import (
	"context"
	"errors"
	"fmt"
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
	// CallerTimeout bounds how long one call holds its caller while the
	// store is down or slow: the wait for room in a full queue
	// (block_on_overflow), or, with sending_queue disabled, the insert and
	// its retries. Past it the call fails with a retryable error, which the
	// OTLP and Loki receivers answer 503 with Retry-After: the client sends
	// the data again later rather than waiting with it. 0 holds the caller
	// as long as its own context lasts. Default: 5s for logs, whose callers
	// are receivers answering clients; 0 for traces, whose caller is the
	// sampler: it waits (a kept trace it cannot hand on is lost) and its
	// bounded buffer pushes back on receivers instead (429). Distributed
	// mode's ingester, which retries a batch until it is stored before
	// committing its offsets, sets 0 to leave the retrying to this
	// exporter.
	CallerTimeout *time.Duration `mapstructure:"caller_timeout"`
}

// defaultLogsCallerTimeout is caller_timeout's default for logs: shorter
// than the timeouts of Loki and OTLP clients (10 s and more), and the
// Retry-After the receivers answer with.
const defaultLogsCallerTimeout = 5 * time.Second

// callerTimeout is caller_timeout for a signal, its default if unset.
func (c *Config) callerTimeout(signal string) time.Duration {
	switch {
	case c.CallerTimeout != nil:
		return *c.CallerTimeout
	case signal == "logs":
		return defaultLogsCallerTimeout
	}
	return 0
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Store.Type().String() == "" {
		return errors.New("`store` must name a tracesift_store extension")
	}
	if c.CallerTimeout != nil && *c.CallerTimeout < 0 {
		return fmt.Errorf("`caller_timeout` must not be negative (0 holds the caller as long as its context lasts), got %s", *c.CallerTimeout)
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
	// health reports the store's state to the Collector (component status).
	health storeHealth
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
	e.health.start(host)
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
	err := writeBatch(ctx, e, &traceOps, td)
	e.health.observe(ctx, err)
	return err
}

func (e *storeExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	err := writeBatch(ctx, e, &logOps, ld)
	e.health.observe(ctx, err)
	return err
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*Config)
	e, err := newExporter(set, c, "traces")
	if err != nil {
		return nil, err
	}
	exp, err := exporterhelper.NewTraces(ctx, set, cfg, e.pushTraces,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig))
	if err != nil {
		return nil, err
	}
	return &tracesExporter{Traces: exp, caller: caller{e: e, signal: "traces", timeout: c.callerTimeout("traces")}}, nil
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	e, err := newExporter(set, c, "logs")
	if err != nil {
		return nil, err
	}
	exp, err := exporterhelper.NewLogs(ctx, set, cfg, e.pushLogs,
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig))
	if err != nil {
		return nil, err
	}
	return &logsExporter{Logs: exp, caller: caller{e: e, signal: "logs", timeout: c.callerTimeout("logs")}}, nil
}

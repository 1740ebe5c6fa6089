// Package kafkaexporter is the `tracesift_kafka` exporter of distributed
// mode: traces to the kept topic (a sampler's kept spans, findings and clock
// offsets), logs to the logs topic (a gateway's). A write returns once every
// in-sync replica has it, so with no sending queue (the default) a receiver
// acknowledges its client only what Kafka holds.
package kafkaexporter

//go:generate mdatagen metadata.yaml

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/tracesift/tracesift/internal/exporter/kafkaexporter/internal/metadata"
	"github.com/tracesift/tracesift/internal/kafka"
)

// Config is the exporter's configuration.
type Config struct {
	Kafka kafka.Config `mapstructure:"kafka"`
	// QueueConfig is the Collector's sending_queue. Default off: a write
	// returns when Kafka acknowledged it, so what a client is told was
	// received is durable.
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// BackOffConfig retries failed writes (retry_on_failure); default on,
	// without a time limit: a sampler waits for the broker, pushing back on
	// its partitions, rather than leave what it kept unwritten until its
	// next rebalance. A gateway turns it off, so that a client is told 503
	// at once (deploy/kafka/gateway.yaml).
	BackOffConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`
}

// Validate checks the configuration.
func (c *Config) Validate() error { return c.Kafka.Validate() }

func createDefaultConfig() component.Config {
	retry := configretry.NewDefaultBackOffConfig()
	retry.MaxElapsedTime = 0
	return &Config{Kafka: kafka.DefaultConfig(), BackOffConfig: retry}
}

// NewFactory returns the exporter's factory.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(metadata.Type, createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability),
		exporter.WithLogs(createLogs, metadata.LogsStability))
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*Config)
	p := kafka.NewProducer(c.Kafka, c.Kafka.Topics.Kept)
	return exporterhelper.NewTraces(ctx, set, cfg, p.WriteTraces,
		exporterhelper.WithStart(p.Start),
		exporterhelper.WithShutdown(p.Shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig))
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	p := kafka.NewProducer(c.Kafka, c.Kafka.Topics.Logs)
	return exporterhelper.NewLogs(ctx, set, cfg, p.WriteLogs,
		exporterhelper.WithStart(p.Start),
		exporterhelper.WithShutdown(p.Shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithRetry(c.BackOffConfig))
}

package loki

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/tracesift/tracesift/internal/receiver/loki/internal/metadata"
)

// NewFactory returns the factory of the tracesift_loki receiver (logs only).
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig,
		receiver.WithLogs(createLogs, metadata.LogsStability))
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected config type %T", metadata.Type, cfg)
	}
	if next == nil {
		return nil, fmt.Errorf("%s: nil next consumer for logs", set.ID)
	}
	return newReceiver(c, set, next)
}

package storeextension

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/extension/storeextension/internal/metadata"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/server"
)

// Type is the extension's component type, for the components that name a
// store extension in their config.
var Type = metadata.Type

// Provider is what components find on the host under this extension's id.
type Provider interface {
	Writer() *store.Writer
	Reader() *store.Reader
}

// NewFactory returns the factory of the store extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(Type,
		func() component.Config { return createDefaultConfig() },
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return &storeExtension{cfg: cfg.(*Config), logger: set.Logger}, nil
		},
		metadata.ExtensionStability)
}

type storeExtension struct {
	cfg    *Config
	logger *zap.Logger
	conn   store.Conn
	writer *store.Writer
	reader *store.Reader
}

func (e *storeExtension) Start(ctx context.Context, _ component.Host) error {
	var (
		conn store.Conn
		err  error
	)
	if e.cfg.ClickHouse.DSN != "" {
		conn, err = server.Open(ctx, e.cfg.ClickHouse.DSN)
		if err == nil {
			e.logger.Info("store: ClickHouse server", zap.String("database", e.cfg.Database))
		}
	} else {
		conn, err = openEmbedded(e.cfg.Embedded.Path)
		if err == nil {
			e.logger.Info("store: embedded ClickHouse (chDB)", zap.String("path", e.cfg.Embedded.Path), zap.String("database", e.cfg.Database))
		}
	}
	if err != nil {
		return fmt.Errorf("tracesift_store: %w", err)
	}
	if err := store.ApplySchema(ctx, conn, e.cfg.Database); err != nil {
		return errors.Join(fmt.Errorf("tracesift_store: %w", err), conn.Close())
	}
	retention := store.Retention{Traces: e.cfg.Retention.Traces, Logs: e.cfg.Retention.Logs}
	if err := store.ApplyRetention(ctx, conn, e.cfg.Database, retention); err != nil {
		return errors.Join(fmt.Errorf("tracesift_store: %w", err), conn.Close())
	}
	e.conn = conn
	e.writer = store.NewWriter(conn, e.cfg.Database)
	e.writer.SetRetention(retention)
	e.reader = store.NewReader(conn, e.cfg.Database, store.ReaderConfig{LogWindow: e.cfg.LogWindow, MaxLogs: e.cfg.MaxLogsPerTrace,
		MaxSpans: e.cfg.MaxSpansPerTrace, MaxQueryTime: e.cfg.MaxQueryTime, MaxQueryMemory: e.cfg.MaxQueryMemory})
	return nil
}

func (e *storeExtension) Shutdown(context.Context) error {
	if e.conn == nil {
		return nil
	}
	err := e.conn.Close()
	e.conn = nil
	return err
}

func (e *storeExtension) Writer() *store.Writer { return e.writer }
func (e *storeExtension) Reader() *store.Reader { return e.reader }

// Find returns the store extension named id on host.
func Find(host component.Host, id component.ID) (Provider, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("extension %q is not configured: add it under `extensions` and `service::extensions`", id)
	}
	p, ok := ext.(Provider)
	if !ok {
		return nil, fmt.Errorf("extension %q is not a tracesift_store extension", id)
	}
	return p, nil
}

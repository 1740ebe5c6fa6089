// Package queryextension is the `tracesift_query` extension: the query API served
// from the collector process, reading the store of a tracesift_store
// extension (the all-in-one deployment, where chDB allows one process).
package queryextension

//go:generate mdatagen metadata.yaml

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/extension/queryextension/internal/metadata"
	"github.com/tracesift/tracesift/internal/extension/storeextension"
	"github.com/tracesift/tracesift/internal/query"
)

// Config configures the query API served from the collector process.
type Config struct {
	// ServerConfig is the HTTP server (endpoint, TLS, CORS, …) in the
	// Collector's confighttp format. Default endpoint: localhost:16686. Its
	// `auth` (e.g. {authenticator: tracesift_auth}) guards the API under
	// /api/; the web UI's pages and /health are served without it.
	ServerConfig confighttp.ServerConfig `mapstructure:",squash"`
	// Store is the id of the tracesift_store extension to read from.
	// Default: tracesift_store.
	Store component.ID `mapstructure:"store"`
	// MaxConcurrentQueries is how many API requests read the store at once.
	// Default: 4.
	MaxConcurrentQueries int `mapstructure:"max_concurrent_queries"`
	// QueueWait is how long a request waits for its turn before it is
	// answered 503 with Retry-After. Default: 2s.
	QueueWait time.Duration `mapstructure:"queue_wait"`
	// MaxRequestTime bounds the store work of one request, however many
	// statements it takes: none starts after it. Default: 4s.
	MaxRequestTime time.Duration `mapstructure:"max_request_time"`
	// MaxQueryWindow bounds every read's window (reads that scan raw spans:
	// at most 7 days). Default: 744h (31 days).
	MaxQueryWindow time.Duration `mapstructure:"max_query_window"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.ServerConfig.NetAddr.Endpoint == "" {
		return errors.New("`endpoint` must be set, e.g. localhost:16686")
	}
	if c.MaxConcurrentQueries < 1 {
		return errors.New("`max_concurrent_queries` must be at least 1")
	}
	if c.QueueWait <= 0 {
		return errors.New("`queue_wait` must be positive")
	}
	if c.MaxRequestTime <= 0 {
		return errors.New("`max_request_time` must be positive")
	}
	if c.MaxQueryWindow < time.Hour {
		return errors.New("`max_query_window` must be at least 1h")
	}
	return nil
}

func createDefaultConfig() component.Config {
	sc := confighttp.NewDefaultServerConfig()
	sc.NetAddr.Endpoint = "localhost:16686"
	return &Config{ServerConfig: sc, Store: component.NewID(storeextension.Type),
		MaxConcurrentQueries: query.DefaultLimits.MaxConcurrent, QueueWait: query.DefaultLimits.QueueWait,
		MaxRequestTime: query.DefaultLimits.RequestTime, MaxQueryWindow: query.DefaultLimits.MaxWindow}
}

// NewFactory returns the query extension's factory.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig,
		func(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			return &queryExtension{cfg: cfg.(*Config), set: set}, nil
		},
		metadata.ExtensionStability)
}

type queryExtension struct {
	cfg    *Config
	set    extension.Settings
	server *http.Server
	wg     sync.WaitGroup
}

// Dependencies makes the Collector start the store extension first, whatever
// the order of service::extensions.
func (q *queryExtension) Dependencies() []component.ID { return []component.ID{q.cfg.Store} }

func (q *queryExtension) Start(ctx context.Context, host component.Host) error {
	p, err := storeextension.Find(host, q.cfg.Store)
	if err != nil {
		return fmt.Errorf("tracesift_query: %w", err)
	}
	ln, err := q.cfg.ServerConfig.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("tracesift_query: listening on %s: %w", q.cfg.ServerConfig.NetAddr.Endpoint, err)
	}
	opts := []query.Option{query.WithLimits(query.Limits{MaxConcurrent: q.cfg.MaxConcurrentQueries,
		QueueWait: q.cfg.QueueWait, RequestTime: q.cfg.MaxRequestTime, MaxWindow: q.cfg.MaxQueryWindow})}
	// The authenticator guards the API's reads, not the whole server: the web
	// UI's pages carry no data and must load for the browser to ask for a token.
	sc := q.cfg.ServerConfig
	if sc.Auth.HasValue() {
		auth, err := sc.Auth.Get().Config.GetServerAuthenticator(ctx, host.GetExtensions())
		if err != nil {
			return errors.Join(fmt.Errorf("tracesift_query: auth: %w", err), ln.Close())
		}
		opts = append(opts, query.WithAuth(func(r *http.Request) (context.Context, error) {
			return auth.Authenticate(r.Context(), r.Header)
		}))
		sc.Auth = configoptional.None[confighttp.AuthConfig]()
	}
	q.server, err = sc.ToServer(ctx, host.GetExtensions(), q.set.TelemetrySettings, query.NewHandler(p.Reader(), q.set.Logger, opts...))
	if err != nil {
		return errors.Join(fmt.Errorf("tracesift_query: %w", err), ln.Close())
	}
	q.set.Logger.Info("query API listening", zap.String("endpoint", ln.Addr().String()))
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		if err := q.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	}()
	return nil
}

func (q *queryExtension) Shutdown(ctx context.Context) error {
	if q.server == nil {
		return nil
	}
	err := q.server.Shutdown(ctx)
	q.wg.Wait()
	return err
}

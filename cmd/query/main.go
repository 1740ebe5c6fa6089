// Command tracesift-query serves the query API against a ClickHouse server,
// for deployments where ingestion and queries scale apart. It does not load
// the embedded engine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/query"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/server"
	"github.com/tracesift/tracesift/internal/tenant"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "tracesift-query:", err)
		stop()
		os.Exit(1)
	}
}

// run serves the API until ctx ends, configured by args and, where they are
// silent, by the environment (getenv).
func run(ctx context.Context, args []string, getenv func(string) string) error {
	envOr := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	flags := flag.NewFlagSet("tracesift-query", flag.ContinueOnError)
	listen := flags.String("listen", envOr("TRACESIFT_QUERY_ENDPOINT", "localhost:16686"), "address of the query API (env TRACESIFT_QUERY_ENDPOINT)")
	dsn := flags.String("dsn", getenv("TRACESIFT_CLICKHOUSE_DSN"), "ClickHouse server DSN, e.g. clickhouse://default:@localhost:9000 (env TRACESIFT_CLICKHOUSE_DSN)")
	db := flags.String("database", envOr("TRACESIFT_DATABASE", "tracesift"), "database holding tracesift's tables (env TRACESIFT_DATABASE)")
	logWindow := flags.Duration("log-window", store.DefaultLogWindow, "how far around a trace's spans the skewed pairs of its hosts are looked for")
	maxSpans := flags.Int("max-spans-per-trace", store.DefaultMaxSpansPerTrace, "spans returned with a trace at most (its earliest)")
	maxTime := flags.Duration("max-query-time", store.DefaultMaxQueryTime, "bound on each statement of a read (max_execution_time); past it the read is answered 400")
	maxMemory := flags.Int64("max-query-memory", store.DefaultMaxQueryMemory, "bound on each statement's memory in bytes (max_memory_usage)")
	concurrent := flags.Int("max-concurrent-queries", query.DefaultLimits.MaxConcurrent, "requests reading the store at once; the rest wait up to -queue-wait, then get 503")
	queueWait := flags.Duration("queue-wait", query.DefaultLimits.QueueWait, "how long a request waits for its turn")
	requestTime := flags.Duration("max-request-time", query.DefaultLimits.RequestTime, "bound on one request's store work, however many statements it takes")
	maxWindow := flags.Duration("max-query-window", query.DefaultLimits.MaxWindow, "longest window a read may ask for (reads that scan raw spans: at most 7 days)")
	tokens := flags.String("auth-tokens", getenv("TRACESIFT_AUTH_TOKENS"), "bearer tokens of tenants, tenant=token,…: when set, /api/ needs one and reads only its tenant's data (env TRACESIFT_AUTH_TOKENS)")
	proxies := flags.String("trusted-proxies", getenv("TRACESIFT_TRUSTED_PROXIES"), "addresses or CIDR prefixes, comma-separated, whose X-Scope-OrgID names the tenant (env TRACESIFT_TRUSTED_PROXIES)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	var proxyList []string
	for p := range strings.SplitSeq(*proxies, ",") {
		if p = strings.TrimSpace(p); p != "" {
			proxyList = append(proxyList, p)
		}
	}
	auth, err := tenant.NewAuthenticator(*tokens, proxyList)
	if err != nil {
		return fmt.Errorf("-auth-tokens / -trusted-proxies: %w", err)
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every setting is a flag (-help lists them)", flags.Args())
	}
	if *dsn == "" {
		return errors.New("-dsn (or TRACESIFT_CLICKHOUSE_DSN) is required: this binary reads from a ClickHouse server; the all-in-one collector serves the API for the embedded store")
	}
	if !store.ValidDatabaseName(*db) {
		return fmt.Errorf("-database %q must be a plain identifier", *db)
	}
	if *logWindow <= 0 {
		return fmt.Errorf("-log-window must be positive, got %s", *logWindow)
	}
	if *maxSpans <= 0 || *maxTime < 100*time.Millisecond || *maxMemory < 16<<20 || *concurrent < 1 || *queueWait <= 0 || *requestTime <= 0 || *maxWindow < time.Hour {
		return errors.New("-max-spans-per-trace, -max-concurrent-queries, -queue-wait and -max-request-time must be positive, " +
			"-max-query-time at least 100ms, -max-query-memory at least 16 MiB, -max-query-window at least 1h")
	}
	logger, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()

	conn, err := server.Open(ctx, *dsn)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := waitForSchema(ctx, conn, *db, logger); err != nil {
		return err
	}
	reader := store.NewReader(conn, *db, store.ReaderConfig{LogWindow: *logWindow, MaxSpans: *maxSpans,
		MaxQueryTime: *maxTime, MaxQueryMemory: *maxMemory, ReportRenewal: func(what, tn string, err error) {
			if err != nil {
				logger.Warn("A background read of a tenant's "+what+" failed; trace lookups read them with one "+
					"statement more until it succeeds", zap.String("tenant", tn), zap.Error(err))
			} else {
				logger.Info("A background read of a tenant's "+what+" succeeds again", zap.String("tenant", tn))
			}
		}})
	defer reader.Wait() // its reads in the background end before the conn
	srv := &http.Server{
		Addr: *listen,
		Handler: query.NewHandler(reader, logger,
			query.WithLimits(query.Limits{MaxConcurrent: *concurrent, QueueWait: *queueWait, RequestTime: *requestTime,
				MaxWindow: *maxWindow}), query.WithAuth(authenticate(auth))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("query API listening", zap.String("endpoint", *listen))
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// authenticate places a request in the tenant its token (or a trusted
// proxy's X-Scope-OrgID) names.
func authenticate(a *tenant.Authenticator) query.Authenticate {
	return func(r *http.Request) (context.Context, error) {
		var addr net.Addr
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			addr = net.TCPAddrFromAddrPort(ap)
		}
		t, err := a.Authenticate(r.Header, addr)
		if err != nil {
			return nil, err
		}
		return tenant.NewContext(r.Context(), t), nil
	}
}

// schemaWait is how long tracesift-query waits for a collector to create or
// upgrade the store's schema (they may start together), checking every
// schemaPoll; it runs no DDL itself.
const (
	schemaWait = 5 * time.Minute
	schemaPoll = 2 * time.Second
)

// waitForSchema returns once the store's schema is this build's, or with the
// reason it is not after schemaWait; a newer schema fails at once.
func waitForSchema(ctx context.Context, conn store.Conn, db string, logger *zap.Logger) error {
	deadline := time.Now().Add(schemaWait)
	logged := false
	for {
		err := store.CheckSchema(ctx, conn, db)
		if err == nil || errors.Is(err, store.ErrSchemaNewer) || time.Now().After(deadline) {
			return err
		}
		if !logged {
			logger.Warn("Waiting for a collector of this version to create or upgrade the store's schema", zap.Error(err))
			logged = true
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(schemaPoll):
		}
	}
}

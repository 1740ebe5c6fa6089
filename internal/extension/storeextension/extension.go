package storeextension

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
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
			return newExtension(cfg.(*Config), set.Logger), nil
		},
		metadata.ExtensionStability)
}

// openServer opens a ClickHouse server connection (server.Open); tests
// replace it.
type openServer func(ctx context.Context, dsn string) (store.Conn, error)

func openClickHouse(ctx context.Context, dsn string) (store.Conn, error) {
	c, err := server.Open(ctx, dsn)
	if err != nil {
		return nil, err // not a nil *server.Conn in a non-nil store.Conn
	}
	return c, nil
}

// connectTiming is how a server is waited for: Start waits up to startWait
// for the first attempt (so that a reachable store has its schema before the
// pipelines start), then attempts go on in the background, retryDelay apart,
// doubling up to maxRetryDelay; a failure is logged the first time and then
// every logEvery.
type connectTiming struct {
	startWait, retryDelay, maxRetryDelay, logEvery time.Duration
}

var defaultTiming = connectTiming{startWait: 5 * time.Second, retryDelay: time.Second, maxRetryDelay: 30 * time.Second,
	logEvery: 5 * time.Minute}

func newExtension(cfg *Config, logger *zap.Logger) *storeExtension {
	return &storeExtension{cfg: cfg, logger: logger, open: openClickHouse, timing: defaultTiming, ready: make(chan struct{})}
}

type storeExtension struct {
	cfg    *Config
	logger *zap.Logger
	open   openServer
	timing connectTiming
	// conn is the embedded engine, or the server's connection that every
	// call goes through before and after it is connected.
	conn   store.Conn
	writer *store.Writer
	reader *store.Reader

	// With a server: the connecting loop, and what it and Start share.
	host      component.Host
	cancel    context.CancelFunc
	loopDone  chan struct{}
	attempted chan struct{} // closed after the first attempt
	ready     chan struct{} // closed when the collector's pipelines run (Ready)
	readyOnce sync.Once
	mu        sync.Mutex
	state     connState

	// The filter warmer's loop, stopped before the connection closes.
	warmCancel context.CancelFunc
	warmDone   chan struct{}
}

// connState is the server connection's state, under storeExtension.mu.
type connState struct {
	connected bool
	lastErr   error // the last attempt's, while not connected
	// fatal is an error that no attempt can overcome, found before Start
	// returned (Start returns it).
	fatal error
	// startDone: Start has returned; since then the loop reports statuses.
	startDone bool
	// reportedDown: StatusRecoverableError was reported, and no StatusOK
	// since.
	reportedDown bool
	stopped      bool
}

func (e *storeExtension) Start(ctx context.Context, host component.Host) error {
	if e.cfg.ClickHouse.DSN != "" {
		return e.startServer(ctx, host)
	}
	conn, err := openEmbedded(e.cfg.Embedded.Path)
	if err != nil {
		return fmt.Errorf("tracesift_store: %w", err)
	}
	e.logger.Info("store: embedded ClickHouse (chDB)", zap.String("path", e.cfg.Embedded.Path), zap.String("database", e.cfg.Database))
	if !canNiceMerges() {
		e.logger.Info("store: merges run at the CPU priority of inserts and reads, not below it: this process lacks " +
			"CAP_SYS_NICE (README, \"Merges at a lower CPU priority\": setcap cap_sys_nice+ep on the binary)")
	}
	if err := e.prepare(ctx, conn); err != nil {
		return errors.Join(fmt.Errorf("tracesift_store: %w", err), conn.Close())
	}
	e.conn = conn
	e.newWriterReader(conn)
	e.startWarmer(conn)
	return nil
}

// prepare applies the schema and retention to a newly opened store.
func (e *storeExtension) prepare(ctx context.Context, conn store.Conn) error {
	if err := store.ApplySchema(ctx, conn, e.cfg.Database); err != nil {
		return err
	}
	return store.ApplyRetention(ctx, conn, e.cfg.Database, e.retention())
}

func (e *storeExtension) retention() store.Retention {
	return store.Retention{Traces: e.cfg.Retention.Traces, Logs: e.cfg.Retention.Logs}
}

func (e *storeExtension) newWriterReader(conn store.Conn) {
	e.writer = store.NewWriter(conn, e.cfg.Database)
	e.writer.SetRetention(e.retention())
	e.reader = store.NewReader(conn, e.cfg.Database, store.ReaderConfig{LogWindow: e.cfg.LogWindow, MaxLogs: e.cfg.MaxLogsPerTrace,
		MaxSpans: e.cfg.MaxSpansPerTrace, MaxQueryTime: e.cfg.MaxQueryTime, MaxQueryMemory: e.cfg.MaxQueryMemory,
		ReportRenewal: e.reportRenewal})
}

// reportRenewal logs the reader's background reads of a tenant's pairs or
// resources that fail, once in a row, and their recovery.
func (e *storeExtension) reportRenewal(what, tn string, err error) {
	if err != nil {
		e.logger.Warn("store: the reader's background read of a tenant's "+what+" failed; trace lookups read them "+
			"with one statement more until it succeeds (retried with backoff)", zap.String("tenant", tn), zap.Error(err))
		return
	}
	e.logger.Info("store: the reader's background read of a tenant's "+what+" succeeds again", zap.String("tenant", tn))
}

// startServer starts on a ClickHouse server whether or not it can be reached
// yet: the writer and reader work over a connection that fails every call
// retryably (ErrNotConnected) until a background loop has connected and
// applied the schema and retention, so the exporters' queues and retries
// hold the data meanwhile. Only an error no attempt can overcome (a bad DSN,
// a store of a newer schema, refused credentials) stops the collector: Start
// returns it if the first attempt finds it, else it is reported as a fatal
// error once the collector runs.
func (e *storeExtension) startServer(ctx context.Context, host component.Host) error {
	if err := parseDSN(e.cfg.ClickHouse.DSN); err != nil {
		return fmt.Errorf("tracesift_store: %w", err)
	}
	pending := &pendingConn{}
	e.conn = pending
	e.newWriterReader(pending)
	e.startWarmer(pending)
	e.host = host
	loopCtx, cancel := context.WithCancel(context.Background())
	e.cancel, e.loopDone, e.attempted = cancel, make(chan struct{}), make(chan struct{})
	go e.connectLoop(loopCtx, pending)

	wait := time.NewTimer(e.timing.startWait)
	defer wait.Stop()
	select {
	case <-e.attempted:
	case <-wait.C:
	case <-ctx.Done():
		e.stopLoop(context.Background())
		return fmt.Errorf("tracesift_store: connecting to ClickHouse: %w", ctx.Err())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state.startDone = true
	switch {
	case e.state.fatal != nil:
		return fmt.Errorf("tracesift_store: %w", e.state.fatal)
	case e.state.connected:
		return nil
	}
	cause := e.state.lastErr
	if cause == nil {
		cause = fmt.Errorf("no answer within %s; still trying", e.timing.startWait)
		e.logger.Warn("store: ClickHouse server not connected yet; starting anyway and connecting in the background. "+
			"Writes wait in the exporters' queues meanwhile", zap.String("database", e.cfg.Database), zap.Error(cause))
	}
	e.reportDownLocked(cause)
	return nil
}

// connectLoop connects pending to the server, retrying with backoff until it
// succeeds, an error no attempt can overcome is met, or ctx ends.
func (e *storeExtension) connectLoop(ctx context.Context, pending *pendingConn) {
	defer close(e.loopDone)
	// Start waits for the first attempt's outcome to be recorded.
	attempted := sync.OnceFunc(func() { close(e.attempted) })
	defer attempted()
	delay := e.timing.retryDelay
	began := time.Now()
	var lastLog time.Time
	for attempt := 1; ; attempt++ {
		conn, err := e.attempt(ctx)
		if ctx.Err() != nil {
			if conn != nil {
				_ = conn.Close()
			}
			return
		}
		if err == nil {
			e.connected(pending, conn, attempt, began)
			return
		}
		if neverSucceeds(err) {
			e.fail(ctx, err, attempted)
			return
		}
		if now := time.Now(); attempt == 1 || now.Sub(lastLog) >= e.timing.logEvery {
			lastLog = now
			msg := "store: ClickHouse server not reachable yet; retrying in the background (every " +
				e.timing.retryDelay.String() + ", doubling up to " + e.timing.maxRetryDelay.String() +
				"). Writes wait in the exporters' queues and reads fail meanwhile"
			if attempt > 1 {
				msg = "store: ClickHouse server still not reachable; retrying"
			}
			e.logger.Warn(msg, zap.String("database", e.cfg.Database), zap.Int("attempts", attempt),
				zap.Duration("since", time.Since(began).Round(time.Second)), zap.Error(err))
		}
		e.mu.Lock()
		e.state.lastErr = err
		if e.state.startDone {
			e.reportDownLocked(err)
		}
		e.mu.Unlock()
		attempted()
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, e.timing.maxRetryDelay)
	}
}

// attempt opens the server and prepares it (schema, retention). It returns
// when ctx ends even if the server does not answer (clickhouse-go's dial
// does not heed the context); a connection opened after that is closed.
func (e *storeExtension) attempt(ctx context.Context) (store.Conn, error) {
	type result struct {
		conn store.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := e.open(ctx, e.cfg.ClickHouse.DSN)
		if err == nil {
			if err = e.prepare(ctx, conn); err != nil {
				_ = conn.Close()
				conn = nil
			}
		}
		done <- result{conn, err}
	}()
	select {
	case r := <-done:
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// connected switches pending over to conn and reports the store healthy.
func (e *storeExtension) connected(pending *pendingConn, conn store.Conn, attempts int, began time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.stopped {
		_ = conn.Close()
		return
	}
	pending.connect(conn)
	e.state.connected, e.state.lastErr = true, nil
	fields := []zap.Field{zap.String("database", e.cfg.Database)}
	if attempts > 1 {
		fields = append(fields, zap.Int("attempts", attempts), zap.Duration("after", time.Since(began).Round(time.Millisecond)))
	}
	e.logger.Info("store: ClickHouse server connected", fields...)
	if e.state.reportedDown {
		e.state.reportedDown = false
		componentstatus.ReportStatus(e.host, componentstatus.NewEvent(componentstatus.StatusOK))
	}
}

// reportDownLocked reports the store not connected (once until it is).
func (e *storeExtension) reportDownLocked(cause error) {
	if e.state.reportedDown || e.state.stopped {
		return
	}
	e.state.reportedDown = true
	componentstatus.ReportStatus(e.host, componentstatus.NewRecoverableErrorEvent(
		fmt.Errorf("ClickHouse is not reachable yet: %w", cause)))
}

// fail handles an error no attempt can overcome: Start returns it if it has
// not returned yet, else the collector is stopped with a fatal error event,
// once it runs: the Collector takes that event in its main loop, and one
// reported before (while later components start) or after it (while it
// shuts down) would block the Collector for good.
func (e *storeExtension) fail(ctx context.Context, err error, attempted func()) {
	e.mu.Lock()
	if !e.state.startDone {
		e.state.fatal = err
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	attempted()
	e.logger.Error("store: the ClickHouse server cannot be used as configured; stopping the collector", zap.Error(err))
	select {
	case <-e.ready:
	case <-ctx.Done():
		return
	}
	e.mu.Lock()
	stopped := e.state.stopped
	e.mu.Unlock()
	if !stopped {
		componentstatus.ReportStatus(e.host, componentstatus.NewFatalErrorEvent(fmt.Errorf("tracesift_store: %w", err)))
	}
}

// fatalCodes are the ClickHouse errors of a connection or of the schema's
// statements that no retry overcomes: the DSN's credentials or database are
// wrong, or the user may not do what the schema needs.
var fatalCodes = map[string]bool{
	"81":  true, // UNKNOWN_DATABASE
	"192": true, // UNKNOWN_USER
	"497": true, // ACCESS_DENIED
	"516": true, // AUTHENTICATION_FAILED
}

// neverSucceeds reports whether err, from an attempt to connect, would be met
// by every later attempt.
func neverSucceeds(err error) bool {
	if errors.Is(err, store.ErrSchemaNewer) || store.IsPermanent(err) {
		return true
	}
	return fatalCodes[store.ErrorCode(err)]
}

// Ready implements extensioncapabilities.PipelineWatcher: the collector's
// pipelines run, so its main loop takes a fatal error event.
func (e *storeExtension) Ready() error {
	e.readyOnce.Do(func() { close(e.ready) })
	return nil
}

// NotReady implements extensioncapabilities.PipelineWatcher.
func (e *storeExtension) NotReady() error { return nil }

// stopLoop ends the connecting loop, waiting for it as long as ctx allows.
func (e *storeExtension) stopLoop(ctx context.Context) {
	e.mu.Lock()
	e.state.stopped = true
	e.mu.Unlock()
	cancelAndWait(ctx, e.cancel, e.loopDone)
}

// cancelAndWait cancels a loop started with cancel, if any, and waits for
// done as long as ctx allows.
func cancelAndWait(ctx context.Context, cancel context.CancelFunc, done <-chan struct{}) {
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// startWarmer runs a store.FilterWarmer over conn every FilterWarmEvery until
// Shutdown. A failed pass is logged the first time and then every logEvery;
// with a server not connected yet, it is not logged at all.
func (e *storeExtension) startWarmer(conn store.Conn) {
	ctx, cancel := context.WithCancel(context.Background())
	e.warmCancel, e.warmDone = cancel, make(chan struct{})
	w := store.NewFilterWarmer(conn, e.cfg.Database)
	var lastLog time.Time
	go func() {
		defer close(e.warmDone)
		w.Run(ctx, store.FilterWarmEvery, func(n int, err error) {
			switch {
			case err == nil && n > 0:
				e.logger.Debug("store: read the filters of new merged parts of spans and trace_summaries", zap.Int("parts", n))
			case err == nil, errors.Is(err, ErrNotConnected):
			case time.Since(lastLog) >= e.timing.logEvery:
				lastLog = time.Now()
				e.logger.Warn("store: reading the filters of new merged parts of spans and trace_summaries failed; "+
					"the first search over them reads them instead", zap.Error(err))
			}
		})
	}()
}

func (e *storeExtension) Shutdown(ctx context.Context) error {
	e.stopLoop(ctx)
	cancelAndWait(ctx, e.warmCancel, e.warmDone)
	if e.conn == nil {
		return nil
	}
	e.reader.Wait() // its reads in the background end before the conn
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

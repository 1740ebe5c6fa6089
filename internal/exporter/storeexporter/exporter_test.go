package storeexporter

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/exporter/storeexporter/internal/metadata"
	"github.com/tracesift/tracesift/internal/store"
)

// flakyConn is a store.Conn whose inserts of spans fail as scripted. It
// records every attempt to insert spans and signals each one that succeeds;
// the inserts into the other tables (resources, the trace index) succeed.
type flakyConn struct {
	mu       sync.Mutex
	failures []error // returned by the next inserts, in order; then success
	attempts [][]byte
	stored   chan []byte
	failed   chan error // each failed attempt, if not nil
}

func (c *flakyConn) Insert(_ context.Context, table string, _ store.Format, rows []byte) error {
	if table != "db.spans" {
		return nil
	}
	c.mu.Lock()
	c.attempts = append(c.attempts, bytes.Clone(rows))
	var err error
	if len(c.failures) > 0 {
		err, c.failures = c.failures[0], c.failures[1:]
	}
	c.mu.Unlock()
	switch {
	case err == nil:
		c.stored <- bytes.Clone(rows)
	case c.failed != nil:
		c.failed <- err
	}
	return err
}

func (c *flakyConn) fail(errs ...error) {
	c.mu.Lock()
	c.failures = append(c.failures, errs...)
	c.mu.Unlock()
}

func (c *flakyConn) attemptCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.attempts)
}

func (c *flakyConn) Exec(context.Context, string, store.Params) error { return nil }
func (c *flakyConn) Query(context.Context, string, store.Params, func([]byte) error) error {
	return nil
}
func (c *flakyConn) Close() error { return nil }

// provider is a tracesift_store extension over a flakyConn.
type provider struct{ w *store.Writer }

func (provider) Start(context.Context, component.Host) error { return nil }
func (provider) Shutdown(context.Context) error              { return nil }
func (p provider) Writer() *store.Writer                     { return p.w }
func (provider) Reader() *store.Reader                       { return nil }

type host struct {
	exts map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.exts }

// nopConn is a store.Conn that accepts everything and stores nothing.
type nopConn struct{}

func (nopConn) Insert(context.Context, string, store.Format, []byte) error { return nil }
func (nopConn) Exec(context.Context, string, store.Params) error           { return nil }
func (nopConn) Query(context.Context, string, store.Params, func([]byte) error) error {
	return nil
}
func (nopConn) Close() error { return nil }

// newLifecycleTestHost is the host of the generated lifecycle test
// (metadata.yaml, tests::host): it has the tracesift_store extension the
// default config names, over a nopConn.
func newLifecycleTestHost() component.Host {
	id := createDefaultConfig().(*Config).Store
	return host{exts: map[component.ID]component.Component{id: provider{w: store.NewWriter(nopConn{}, "db")}}}
}

// startExporter starts a traces exporter on conn with fast retries, no
// batching (one insert per ConsumeTraces) and a queue of queueItems spans.
func startExporter(t *testing.T, conn *flakyConn, queueItems int64) exporter.Traces {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	q := cfg.QueueConfig.Get()
	q.Batch = configoptional.None[exporterhelper.BatchConfig]()
	q.QueueSize = queueItems
	q.NumConsumers = 1
	cfg.BackOffConfig.InitialInterval = time.Millisecond
	cfg.BackOffConfig.MaxInterval = 5 * time.Millisecond
	exp, err := NewFactory().CreateTraces(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	h := host{exts: map[component.ID]component.Component{cfg.Store: provider{w: store.NewWriter(conn, "db")}}}
	require.NoError(t, exp.Start(context.Background(), h))
	return exp
}

func oneSpan(i byte) ptrace.Traces {
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(pcommon.TraceID{1, i})
	s.SetSpanID(pcommon.SpanID{2, i})
	s.SetName("GET /cart")
	return td
}

// A batch whose insert fails for a reason that may pass (the store
// restarting, an unknown outcome) is sent again, the same rows each time, so
// the insert's deduplication token is the same and the store keeps one copy.
func TestTransientInsertErrorsAreRetriedWithTheSameRows(t *testing.T) {
	conn := &flakyConn{stored: make(chan []byte, 10)}
	conn.fail(errors.New("dial tcp 127.0.0.1:9000: connection refused"),
		errors.New("Code: 252. DB::Exception: Too many parts (300) in table. (TOO_MANY_PARTS)"))
	exp := startExporter(t, conn, 100)
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	require.NoError(t, exp.ConsumeTraces(context.Background(), oneSpan(1)))
	stored := <-conn.stored
	assert.Equal(t, 3, conn.attemptCount())
	for _, a := range conn.attempts {
		assert.Equal(t, stored, a, "a retry sends the same rows")
		assert.Equal(t, store.InsertStatement("db.spans", store.FormatNative, stored), store.InsertStatement("db.spans", store.FormatNative, a))
	}
}

// Rows that the store rejects as malformed are not retried: they would fail
// again and hold every later batch behind them.
func TestPermanentInsertErrorsAreNotRetried(t *testing.T) {
	conn := &flakyConn{stored: make(chan []byte, 10)}
	conn.fail(errors.New("Code: 27. DB::Exception: Cannot parse input: expected '\"' before: 'x'. (CANNOT_PARSE_INPUT_ASSERTION_FAILED)"))
	exp := startExporter(t, conn, 100)
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	require.NoError(t, exp.ConsumeTraces(context.Background(), oneSpan(1)))
	require.NoError(t, exp.ConsumeTraces(context.Background(), oneSpan(2)))
	stored := <-conn.stored
	assert.Contains(t, string(stored), pcommon.TraceID{1, 2}.String(), "the next batch goes through")
	assert.Equal(t, 2, conn.attemptCount(), "the malformed batch is tried once")
}

// While the store is down, batches wait in the bounded queue; once it is
// full, the exporter blocks its caller (the sampler, which then pushes back on
// receivers) instead of dropping anything, and everything is stored when the
// store is back.
func TestStoreOutageBlocksCallersAndLosesNothing(t *testing.T) {
	conn := &flakyConn{stored: make(chan []byte, 10), failed: make(chan error, 1000)}
	down := errors.New("dial tcp 127.0.0.1:9000: connection refused")
	for range 1000 {
		conn.fail(down)
	}
	exp := startExporter(t, conn, 2)
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	// The queue holds two spans: one being retried, one waiting.
	require.NoError(t, exp.ConsumeTraces(context.Background(), oneSpan(0)))
	require.NoError(t, exp.ConsumeTraces(context.Background(), oneSpan(1)))
	// A third waits for room: a caller whose context ends meanwhile (here at
	// once) is told, rather than its spans being dropped silently.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, exp.ConsumeTraces(ctx, oneSpan(2)), context.Canceled)

	<-conn.failed
	<-conn.failed // retried
	conn.mu.Lock()
	conn.failures = nil
	conn.mu.Unlock()
	got := string(<-conn.stored) + string(<-conn.stored)
	for i := range byte(2) {
		assert.Contains(t, got, pcommon.TraceID{1, i}.String(), "span %d stored after the outage", i)
	}
}

package storeexporter

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/tracesift/tracesift/internal/exporter/storeexporter/internal/metadata"
	"github.com/tracesift/tracesift/internal/store"
)

// switchConn is a store that is down (every insert fails as a refused
// connection does) or up (every insert succeeds), or refuses every insert
// for good (bad). stored counts the inserts of rows, not of the resources
// the writer inserts before them.
type switchConn struct {
	nopConn
	down, bad atomic.Bool
	attempts  atomic.Int32
	stored    atomic.Int32
}

var errRefused = errors.New("dial tcp 127.0.0.1:9000: connect: connection refused")

func (c *switchConn) Insert(_ context.Context, table string, _ store.Format, _ []byte) error {
	c.attempts.Add(1)
	switch {
	case c.bad.Load():
		return errors.New("Code: 27. DB::Exception: Cannot parse input. (CANNOT_PARSE_INPUT_ASSERTION_FAILED)")
	case c.down.Load():
		return errRefused
	}
	if !strings.HasSuffix(table, ".resources") {
		c.stored.Add(1)
	}
	return nil
}

// statusHost is a host with the store extension that records the statuses
// the exporter reports.
type statusHost struct {
	host
	events chan *componentstatus.Event
}

func (h *statusHost) Report(ev *componentstatus.Event) { h.events <- ev }

func (h *statusHost) next(t *testing.T) componentstatus.Status {
	t.Helper()
	select {
	case ev := <-h.events:
		return ev.Status()
	case <-time.After(10 * time.Second):
		t.Fatal("no status reported")
		return componentstatus.StatusNone
	}
}

func (h *statusHost) none(t *testing.T) {
	t.Helper()
	select {
	case ev := <-h.events:
		t.Fatalf("unexpected status %v (%v)", ev.Status(), ev.Err())
	case <-time.After(50 * time.Millisecond):
	}
}

// logsConfig is the default config with fast retries, no batching, one
// consumer and a queue of queueItems log records (0: no queue).
func logsConfig(queueItems int64) *Config {
	cfg := createDefaultConfig().(*Config)
	if queueItems == 0 {
		cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	} else {
		q := cfg.QueueConfig.Get()
		q.Batch = configoptional.None[exporterhelper.BatchConfig]()
		q.QueueSize = queueItems
		q.NumConsumers = 1
	}
	cfg.BackOffConfig.InitialInterval = time.Millisecond
	cfg.BackOffConfig.MaxInterval = 5 * time.Millisecond
	cfg.BackOffConfig.RandomizationFactor = 0
	return cfg
}

func startLogs(t *testing.T, cfg *Config, conn store.Conn) (exporter.Logs, *statusHost) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	exp, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	h := &statusHost{host: host{exts: map[component.ID]component.Component{cfg.Store: provider{w: store.NewWriter(conn, "db")}}},
		events: make(chan *componentstatus.Event, 100)}
	require.NoError(t, exp.Start(context.Background(), h))
	return exp, h
}

func oneLog(i int) plog.Logs {
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	lr.Body().SetStr("line")
	lr.SetTraceID(pcommon.TraceID{1, byte(i)})
	return ld
}

func ptr[T any](v T) *T { return &v }

// With the shipped logs exporter (a queue that blocks when full), a caller
// whose records find the queue full while the store is down is answered a
// retryable error after caller_timeout instead of waiting until the store
// is back.
func TestLogsCallerIsNotHeldByAFullQueue(t *testing.T) {
	conn := &switchConn{}
	conn.down.Store(true)
	cfg := logsConfig(2)
	require.True(t, cfg.QueueConfig.Get().BlockOnOverflow)
	require.Nil(t, cfg.CallerTimeout)
	assert.Equal(t, defaultLogsCallerTimeout, cfg.callerTimeout("logs"))
	cfg.CallerTimeout = ptr(100 * time.Millisecond)
	exp, _ := startLogs(t, cfg, conn)
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	// One record being retried, one waiting: the queue is full.
	require.NoError(t, exp.ConsumeLogs(context.Background(), oneLog(0)))
	require.Eventually(t, func() bool { return conn.attempts.Load() > 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, exp.ConsumeLogs(context.Background(), oneLog(1)))
	began := time.Now()
	err := exp.ConsumeLogs(context.Background(), oneLog(2))
	took := time.Since(began)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "retryable: the receivers answer 503")
	assert.ErrorContains(t, err, "caller_timeout (100ms)")
	assert.GreaterOrEqual(t, took, 100*time.Millisecond, "it waited for room")
	assert.Less(t, took, 2*time.Second)

	conn.down.Store(false)
	require.Eventually(t, func() bool { return conn.stored.Load() == 2 }, 5*time.Second, time.Millisecond,
		"what was queued is stored once the store is back")
}

// Without a queue the caller waits for the insert and its retries: bounded
// by caller_timeout (logs' default), unbounded with caller_timeout 0, as
// distributed mode's ingester wants (it commits offsets once stored).
func TestNoQueueRetriesWithinCallerTimeout(t *testing.T) {
	t.Run("bounded", func(t *testing.T) {
		conn := &switchConn{}
		conn.down.Store(true)
		cfg := logsConfig(0)
		cfg.CallerTimeout = ptr(100 * time.Millisecond)
		exp, _ := startLogs(t, cfg, conn)
		defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
		began := time.Now()
		err := exp.ConsumeLogs(context.Background(), oneLog(0))
		require.ErrorIs(t, err, errRefused)
		assert.False(t, consumererror.IsPermanent(err))
		assert.Less(t, time.Since(began), 2*time.Second)
		assert.Greater(t, conn.attempts.Load(), int32(1), "retried meanwhile")
	})
	t.Run("unbounded", func(t *testing.T) {
		conn := &switchConn{}
		conn.down.Store(true)
		cfg := logsConfig(0)
		cfg.CallerTimeout = ptr(time.Duration(0))
		exp, _ := startLogs(t, cfg, conn)
		defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()
		done := make(chan error, 1)
		go func() { done <- exp.ConsumeLogs(context.Background(), oneLog(0)) }()
		require.Eventually(t, func() bool { return conn.attempts.Load() >= 5 }, 5*time.Second, time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("gave up while the store is down: %v", err)
		default:
		}
		conn.down.Store(false)
		require.NoError(t, <-done)
		assert.Equal(t, int32(1), conn.stored.Load())
	})
}

// The exporter reports StatusRecoverableError when inserts start failing
// and StatusOK when one succeeds again, once each: not per batch.
func TestStatusFollowsInserts(t *testing.T) {
	conn := &switchConn{}
	cfg := logsConfig(0)
	cfg.CallerTimeout = ptr(20 * time.Millisecond)
	exp, h := startLogs(t, cfg, conn)
	ctx := context.Background()

	require.NoError(t, exp.ConsumeLogs(ctx, oneLog(0)))
	h.none(t) // the Collector reports OK after Start itself

	conn.down.Store(true)
	require.Error(t, exp.ConsumeLogs(ctx, oneLog(1)))
	assert.Equal(t, componentstatus.StatusRecoverableError, h.next(t))
	require.Error(t, exp.ConsumeLogs(ctx, oneLog(2)))
	h.none(t)

	conn.down.Store(false)
	require.NoError(t, exp.ConsumeLogs(ctx, oneLog(3)))
	assert.Equal(t, componentstatus.StatusOK, h.next(t))
	require.NoError(t, exp.ConsumeLogs(ctx, oneLog(4)))
	h.none(t)

	// Records the store refuses for good say nothing of its health.
	conn.bad.Store(true)
	require.Error(t, exp.ConsumeLogs(ctx, oneLog(5)))
	h.none(t)
	conn.bad.Store(false)

	// Nothing is reported once shutting down.
	conn.down.Store(true)
	require.NoError(t, exp.Shutdown(ctx))
	_ = exp.ConsumeLogs(ctx, oneLog(6))
	h.none(t)
}

func TestCallerTimeoutConfig(t *testing.T) {
	for _, tt := range []struct {
		yaml   map[string]any
		traces time.Duration
		logs   time.Duration
	}{
		{map[string]any{}, 0, defaultLogsCallerTimeout},
		{map[string]any{"caller_timeout": "0s"}, 0, 0},
		{map[string]any{"caller_timeout": "2s"}, 2 * time.Second, 2 * time.Second},
	} {
		cfg := createDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(tt.yaml).Unmarshal(cfg))
		require.NoError(t, cfg.Validate())
		assert.Equal(t, tt.traces, cfg.callerTimeout("traces"), "%v", tt.yaml)
		assert.Equal(t, tt.logs, cfg.callerTimeout("logs"), "%v", tt.yaml)
	}
	cfg := createDefaultConfig().(*Config)
	cfg.CallerTimeout = ptr(-time.Second)
	require.ErrorContains(t, cfg.Validate(), "`caller_timeout`")
}

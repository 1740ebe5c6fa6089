package storeextension

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap/zaptest"

	"github.com/tracesift/tracesift/internal/store"
)

// refused is what server.Open returns while nothing listens on the port.
var refused = errors.New("clickhouse: ping [127.0.0.1:9000]: dial tcp 127.0.0.1:9000: connect: connection refused")

// statusHost is a host that records the statuses its component reports, as
// the Collector's host does for each component.
type statusHost struct {
	events chan *componentstatus.Event
}

func newStatusHost() *statusHost {
	return &statusHost{events: make(chan *componentstatus.Event, 100)}
}

func (*statusHost) GetExtensions() map[component.ID]component.Component { return nil }
func (h *statusHost) Report(ev *componentstatus.Event)                  { h.events <- ev }

// next returns the next status reported, failing the test if none comes.
func (h *statusHost) next(t *testing.T) *componentstatus.Event {
	t.Helper()
	select {
	case ev := <-h.events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no status reported")
		return nil
	}
}

// none checks that nothing is reported within d.
func (h *statusHost) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev := <-h.events:
		t.Fatalf("unexpected status %v (%v)", ev.Status(), ev.Err())
	case <-time.After(d):
	}
}

// fakeServer is a ClickHouse server as the extension's opener sees it: it
// refuses connections while down, else opens a conn.
type fakeServer struct {
	up       atomic.Bool
	attempts atomic.Int32
	conn     func() store.Conn
	// block, if set, makes every attempt hang until it is closed, as a
	// dial to a host that drops packets does (clickhouse-go's dial does not
	// heed the context).
	block chan struct{}
}

func (s *fakeServer) open(context.Context, string) (store.Conn, error) {
	s.attempts.Add(1)
	if s.block != nil {
		<-s.block
	}
	if !s.up.Load() {
		return nil, refused
	}
	return s.conn(), nil
}

// nopConn accepts every statement and stores nothing: the schema applies
// to it (no version recorded, every statement runs).
type nopConn struct{ closed atomic.Bool }

func (*nopConn) Exec(context.Context, string, store.Params) error           { return nil }
func (*nopConn) Insert(context.Context, string, store.Format, []byte) error { return nil }
func (*nopConn) Query(context.Context, string, store.Params, func([]byte) error) error {
	return nil
}
func (c *nopConn) Close() error { c.closed.Store(true); return nil }

// newerConn is a store whose recorded schema is newer than this build's.
type newerConn struct{ nopConn }

func (*newerConn) Query(_ context.Context, q string, _ store.Params, row func([]byte) error) error {
	if strings.Contains(q, "system.tables") {
		return row([]byte(`{"x":1}`))
	}
	return row([]byte(`{"version":9999,"name":"9999_from_the_future"}`))
}

var fastTiming = connectTiming{startWait: 2 * time.Second, retryDelay: 5 * time.Millisecond,
	maxRetryDelay: 20 * time.Millisecond, logEvery: time.Minute}

func newServerExtension(t *testing.T, srv *fakeServer) *storeExtension {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Embedded.Path = ""
	cfg.ClickHouse.DSN = "clickhouse://default:@127.0.0.1:9000"
	require.NoError(t, cfg.Validate())
	e := newExtension(cfg, zaptest.NewLogger(t))
	e.open, e.timing = srv.open, fastTiming
	return e
}

func oneLog() plog.Logs {
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("hello")
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	return ld
}

// A server that is down when the collector starts: Start succeeds at once,
// the store reports itself not ready and every write fails retryably; once
// the server answers it connects, applies the schema and reports OK.
func TestStartsBeforeTheServerIsUp(t *testing.T) {
	srv := &fakeServer{conn: func() store.Conn { return &nopConn{} }}
	e := newServerExtension(t, srv)
	host := newStatusHost()
	began := time.Now()
	require.NoError(t, e.Start(context.Background(), host))
	assert.Less(t, time.Since(began), time.Second, "Start does not wait for a server that refuses")
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()

	ev := host.next(t)
	assert.Equal(t, componentstatus.StatusRecoverableError, ev.Status())
	assert.ErrorContains(t, ev.Err(), "connection refused")

	require.NotNil(t, e.Writer())
	require.NotNil(t, e.Reader())
	_, err := e.Writer().WriteLogs(context.Background(), oneLog())
	require.ErrorIs(t, err, ErrNotConnected)
	assert.False(t, store.IsPermanent(err), "retried, not dropped")
	_, err = e.Reader().GetTrace(context.Background(), strings.Repeat("ab", 16))
	require.ErrorIs(t, err, ErrNotConnected)

	require.Eventually(t, func() bool { return srv.attempts.Load() >= 3 }, 5*time.Second, time.Millisecond, "it keeps trying")
	host.none(t, 50*time.Millisecond) // a failure is reported once, not per attempt
	srv.up.Store(true)
	assert.Equal(t, componentstatus.StatusOK, host.next(t).Status())
	_, err = e.Writer().WriteLogs(context.Background(), oneLog())
	require.NoError(t, err)
}

// A server that answers at once is connected, with its schema, before Start
// returns; the Collector then reports the extension OK itself.
func TestReachableServerIsReadyWhenStartReturns(t *testing.T) {
	srv := &fakeServer{conn: func() store.Conn { return &nopConn{} }}
	srv.up.Store(true)
	e := newServerExtension(t, srv)
	host := newStatusHost()
	require.NoError(t, e.Start(context.Background(), host))
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()
	_, err := e.Writer().WriteLogs(context.Background(), oneLog())
	require.NoError(t, err)
	host.none(t, 50*time.Millisecond)
}

// A server that does not answer at all (packets dropped) holds Start no
// longer than startWait.
func TestStartWaitsBoundedForASilentServer(t *testing.T) {
	srv := &fakeServer{conn: func() store.Conn { return &nopConn{} }, block: make(chan struct{})}
	defer close(srv.block)
	e := newServerExtension(t, srv)
	e.timing.startWait = 100 * time.Millisecond
	host := newStatusHost()
	began := time.Now()
	require.NoError(t, e.Start(context.Background(), host))
	assert.Less(t, time.Since(began), time.Second)
	ev := host.next(t)
	assert.Equal(t, componentstatus.StatusRecoverableError, ev.Status())
	assert.ErrorContains(t, ev.Err(), "no answer within 100ms")

	// Shutdown does not wait for the hanging attempt either.
	began = time.Now()
	require.NoError(t, e.Shutdown(context.Background()))
	assert.Less(t, time.Since(began), time.Second)
}

// Shutdown while the extension waits to retry returns at once, and nothing
// is reported or connected after it.
func TestShutdownDuringTheRetryLoop(t *testing.T) {
	srv := &fakeServer{conn: func() store.Conn { return &nopConn{} }}
	e := newServerExtension(t, srv)
	e.timing.retryDelay, e.timing.maxRetryDelay = time.Hour, time.Hour
	host := newStatusHost()
	require.NoError(t, e.Start(context.Background(), host))
	assert.Equal(t, componentstatus.StatusRecoverableError, host.next(t).Status())

	began := time.Now()
	require.NoError(t, e.Shutdown(context.Background()))
	assert.Less(t, time.Since(began), time.Second)
	assert.Equal(t, int32(1), srv.attempts.Load())
	srv.up.Store(true)
	host.none(t, 50*time.Millisecond)
}

// A store whose schema is newer than this build's can never be used: found
// by the first attempt, Start fails, as with the embedded engine.
func TestNewerSchemaFailsStart(t *testing.T) {
	conn := &newerConn{}
	srv := &fakeServer{conn: func() store.Conn { return conn }}
	srv.up.Store(true)
	e := newServerExtension(t, srv)
	err := e.Start(context.Background(), newStatusHost())
	require.ErrorIs(t, err, store.ErrSchemaNewer)
	assert.True(t, conn.closed.Load())
	require.NoError(t, e.Shutdown(context.Background()))
}

// Found once the collector runs, the same error stops it through a fatal
// error event: reported only once its pipelines are ready, since the
// Collector reads those events in its main loop.
func TestNewerSchemaFoundLaterIsFatal(t *testing.T) {
	srv := &fakeServer{conn: func() store.Conn { return &newerConn{} }}
	e := newServerExtension(t, srv)
	host := newStatusHost()
	require.NoError(t, e.Start(context.Background(), host))
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()
	assert.Equal(t, componentstatus.StatusRecoverableError, host.next(t).Status())

	srv.up.Store(true)
	require.Eventually(t, func() bool { return srv.attempts.Load() >= 2 }, 5*time.Second, time.Millisecond)
	host.none(t, 100*time.Millisecond) // not before Ready
	require.NoError(t, e.Ready())
	ev := host.next(t)
	assert.Equal(t, componentstatus.StatusFatalError, ev.Status())
	require.ErrorIs(t, ev.Err(), store.ErrSchemaNewer)
	select {
	case <-e.loopDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the loop goes on after a fatal error")
	}
}

func TestNeverSucceeds(t *testing.T) {
	for _, tt := range []struct {
		err   error
		fatal bool
	}{
		{refused, false},
		{errors.New("clickhouse: ping [clickhouse:9000]: dial tcp: lookup clickhouse: no such host"), false},
		{errors.New("applying schema 001_init, statement \"CREATE TABLE x\": code: 242, message: Table is in readonly mode"), false},
		{errors.New("clickhouse: ping [127.0.0.1:9000]: code: 516, message: tracesift: Authentication failed"), true},
		{errors.New("applying schema 001_init, statement \"CREATE DATABASE\": code: 497, message: Not enough privileges"), true},
		{errors.New("applying schema 012_x, statement \"ALTER\": code: 62, message: Syntax error"), true},
		{context.DeadlineExceeded, false},
	} {
		assert.Equal(t, tt.fatal, neverSucceeds(tt.err), "%v", tt.err)
	}
}

// A DSN that cannot be parsed is refused by the configuration's validation,
// and by Start.
func TestBadDSN(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.ClickHouse.DSN = "clickhouse://user:secret@%zz"
	require.ErrorContains(t, cfg.Validate(), "`clickhouse::dsn`")
	assert.NotContains(t, cfg.Validate().Error(), "secret", "the DSN's password is not repeated")
	e := newExtension(cfg, zaptest.NewLogger(t))
	e.open = func(context.Context, string) (store.Conn, error) { panic("not opened") }
	require.ErrorContains(t, e.Start(context.Background(), newStatusHost()), "`clickhouse::dsn`")
	require.NoError(t, e.Shutdown(context.Background()))
}

// Statuses reported from the loop and from Start never cross: whatever the
// order in which the first attempt and Start's wait end, the last status
// reported is the store's state.
func TestStatusesFollowTheState(t *testing.T) {
	for range 20 {
		srv := &fakeServer{conn: func() store.Conn { return &nopConn{} }}
		e := newServerExtension(t, srv)
		e.timing.startWait = time.Millisecond
		var once sync.Once
		e.open = func(ctx context.Context, dsn string) (store.Conn, error) {
			once.Do(func() { time.Sleep(time.Millisecond) })
			return srv.open(ctx, dsn)
		}
		srv.up.Store(true)
		host := newStatusHost()
		require.NoError(t, e.Start(context.Background(), host))
		require.Eventually(t, func() bool {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.state.connected
		}, 5*time.Second, time.Millisecond)
		var last componentstatus.Status = componentstatus.StatusNone
	drain:
		for {
			select {
			case ev := <-host.events:
				last = ev.Status()
			case <-time.After(20 * time.Millisecond):
				break drain
			}
		}
		assert.Contains(t, []componentstatus.Status{componentstatus.StatusNone, componentstatus.StatusOK}, last)
		require.NoError(t, e.Shutdown(context.Background()))
	}
}

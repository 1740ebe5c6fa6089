//go:build !nochdb

package storeextension

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/store/embedded"
)

// The server is down at first (connections refused), then comes up: the
// extension started meanwhile connects to it, applies the schema, and a
// write and a read through the writer and reader it handed out at Start
// succeed. The embedded engine stands in for the server: the SQL is the
// same.
func TestConnectsWhenTheServerComesUp(t *testing.T) {
	dir := t.TempDir()
	srv := &fakeServer{}
	srv.conn = func() store.Conn {
		c, err := embedded.Open(dir)
		require.NoError(t, err)
		return c
	}
	e := newServerExtension(t, srv)
	e.cfg.Database = "ts_connect"
	host := newStatusHost()
	began := time.Now()
	require.NoError(t, e.Start(context.Background(), host))
	assert.Less(t, time.Since(began), time.Second)
	defer func() { require.NoError(t, e.Shutdown(context.Background())) }()
	assert.Equal(t, componentstatus.StatusRecoverableError, host.next(t).Status())

	now := time.Now()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	traceID := pcommon.TraceID{0xab, 1}
	s.SetTraceID(traceID)
	s.SetSpanID(pcommon.SpanID{1})
	s.SetName("GET /checkout")
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Millisecond)))
	_, err := e.Writer().WriteTraces(context.Background(), td)
	require.ErrorIs(t, err, ErrNotConnected, "written while the server is down")
	assert.False(t, store.IsPermanent(err))

	require.Eventually(t, func() bool { return srv.attempts.Load() >= 2 }, 5*time.Second, time.Millisecond)
	srv.up.Store(true)
	assert.Equal(t, componentstatus.StatusOK, host.next(t).Status())

	st, err := e.Writer().WriteTraces(context.Background(), td)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Written)
	got, err := e.Reader().GetTrace(context.Background(), traceID.String())
	require.NoError(t, err)
	require.Len(t, got.Spans, 1)
	assert.Equal(t, "GET /checkout", got.Spans[0].Name)
	assert.Equal(t, "checkout", got.Spans[0].Service)
}

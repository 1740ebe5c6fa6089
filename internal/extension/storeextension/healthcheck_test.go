package storeextension

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/featuregate"

	"github.com/tracesift/tracesift/internal/store"
)

// healthCheckConfig is the health_check configuration under which its answer
// follows the store: v2 (component status, with the feature gate), failing
// while any component reports a recoverable error. %s is the endpoint.
const healthCheckConfig = `
http:
  endpoint: %s
  status: {enabled: true, path: /}
component_health:
  include_recoverable_errors: true
  recovery_duration: 0s
`

// statusWatcher is extensioncapabilities.ComponentStatusWatcher.
type statusWatcher interface {
	Changed(source *componentstatus.InstanceID, event *componentstatus.Event)
}

// relayHost hands the statuses a component reports to a status watcher (the
// health check), as the Collector's host does, including the events the
// Collector reports itself around Start.
type relayHost struct {
	watcher statusWatcher
	id      *componentstatus.InstanceID
	mu      sync.Mutex
	last    componentstatus.Status
}

func (*relayHost) GetExtensions() map[component.ID]component.Component { return nil }

func (h *relayHost) Report(ev *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = ev.Status()
	if h.watcher != nil {
		h.watcher.Changed(h.id, ev)
	}
}

// start starts c as the Collector does: StatusStarting, Start, then
// StatusOK unless c reported something else meanwhile.
func (h *relayHost) start(t *testing.T, c component.Component) {
	h.Report(componentstatus.NewEvent(componentstatus.StatusStarting))
	require.NoError(t, c.Start(context.Background(), h))
	h.mu.Lock()
	starting := h.last == componentstatus.StatusStarting
	h.mu.Unlock()
	if starting {
		h.Report(componentstatus.NewEvent(componentstatus.StatusOK))
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startHealthCheck starts the contrib health_check extension on config (a
// format string of the endpoint), with its component-status feature gate
// on or off, and returns a function answering GET / with its status code.
func startHealthCheck(t *testing.T, config string, v2 bool) (component.Component, func() int) {
	t.Helper()
	const gate = "extension.healthcheck.useComponentStatus"
	require.NoError(t, featuregate.GlobalRegistry().Set(gate, v2))
	t.Cleanup(func() { _ = featuregate.GlobalRegistry().Set(gate, false) })

	addr := freeAddr(t)
	retrieved, err := confmap.NewRetrievedFromYAML(fmt.Appendf(nil, config, addr))
	require.NoError(t, err)
	conf, err := retrieved.AsConf()
	require.NoError(t, err)
	f := healthcheckextension.NewFactory()
	cfg := f.CreateDefaultConfig()
	require.NoError(t, conf.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	hc, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, hc.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, hc.Shutdown(context.Background())) })
	return hc, func() int {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
}

// startStore starts a store extension on a server that is down, relaying
// its statuses to hc, then tells hc the pipelines run, as the Collector
// does.
func startStore(t *testing.T, hc component.Component) *fakeServer {
	t.Helper()
	srv := &fakeServer{conn: func() store.Conn { return &nopConn{} }}
	e := newServerExtension(t, srv)
	host := &relayHost{id: componentstatus.NewInstanceID(component.NewID(Type), component.KindExtension)}
	if w, ok := hc.(statusWatcher); ok {
		host.watcher = w
	}
	host.start(t, e)
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
	require.NoError(t, hc.(interface{ Ready() error }).Ready())
	return srv
}

// The contrib health_check extension, configured as healthCheckConfig with
// its feature gate on, answers non-2xx while the store is not connected and
// 200 once it is.
func TestHealthCheckFollowsTheStore(t *testing.T) {
	hc, get := startHealthCheck(t, healthCheckConfig, true)
	assert.Equal(t, http.StatusServiceUnavailable, get(), "nothing reported yet")
	srv := startStore(t, hc)
	require.Eventually(t, func() bool { return get() == http.StatusInternalServerError }, 5*time.Second, 10*time.Millisecond,
		"the store is down: not ready")
	srv.up.Store(true)
	require.Eventually(t, func() bool { return get() == http.StatusOK }, 5*time.Second, 10*time.Millisecond,
		"the store is connected: ready")
}

// As shipped (the legacy health check: no feature gate), the answer is 200
// once the pipelines run, whatever the components report.
func TestLegacyHealthCheckIgnoresTheStore(t *testing.T) {
	hc, get := startHealthCheck(t, "endpoint: %s\n", false)
	_, isWatcher := hc.(statusWatcher)
	assert.False(t, isWatcher, "the legacy health check watches no status")
	startStore(t, hc)
	assert.Equal(t, http.StatusOK, get(), "the store is down, yet ready")
}

package queryextension

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/tracesift/tracesift/internal/extension/queryextension/internal/metadata"
	"github.com/tracesift/tracesift/internal/extension/storeextension"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/testutil"
)

// storeHost offers a tracesift_store extension whose reader has no
// connection: enough for the API's own answers.
type storeHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h storeHost) GetExtensions() map[component.ID]component.Component { return h.exts }

type fakeStore struct{ component.Component }

func (fakeStore) Writer() *store.Writer { return nil }
func (fakeStore) Reader() *store.Reader { return store.NewReader(nil, "db", store.ReaderConfig{}) }

var _ storeextension.Provider = fakeStore{}

// newStoreHost is a host with a fakeStore under the id the default config
// names; the generated lifecycle test uses it too (metadata.yaml,
// tests::host).
func newStoreHost() component.Host {
	return storeHost{componenttest.NewNopHost(), map[component.ID]component.Component{
		component.NewID(storeextension.Type): fakeStore{}}}
}

func freeEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// The extension serves the query API on its endpoint from the store
// extension it names, and stops serving at shutdown.
func TestServesTheAPIFromTheStore(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	require.NoError(t, cfg.Validate())
	endpoint := freeEndpoint(t)
	cfg.ServerConfig.NetAddr.Endpoint = endpoint
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), newStoreHost()))

	client := &http.Client{}
	resp, body := testutil.Do(t, client, mustGet(t, "http://"+endpoint+"/health"))
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, _ = testutil.Do(t, client, mustGet(t, "http://"+endpoint+"/api/v1/traces/xyz"))
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a malformed id is answered without the store")

	require.NoError(t, ext.Shutdown(context.Background()))
	_, err = client.Get("http://" + endpoint + "/health")
	assert.Error(t, err, "not serving after shutdown")
}

// Without the store extension it names, the extension does not start, and
// says what to configure.
func TestNeedsItsStore(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ServerConfig.NetAddr.Endpoint = freeEndpoint(t)
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	err = ext.Start(context.Background(), componenttest.NewNopHost())
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("extension %q is not configured", "tracesift_store"))
	require.NoError(t, ext.Shutdown(context.Background()))

	cfg.ServerConfig.NetAddr.Endpoint = ""
	assert.ErrorContains(t, cfg.Validate(), "`endpoint` must be set")
}

func mustGet(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

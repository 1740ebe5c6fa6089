package authextension

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/tracesift/tracesift/internal/extension/authextension/internal/metadata"
	"github.com/tracesift/tracesift/internal/tenant"
	"github.com/tracesift/tracesift/internal/testutil"
)

func TestConfig(t *testing.T) {
	f := NewFactory()
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))
	cfg, err := testutil.LoadConfig(t, "config.yaml", component.NewIDWithName(metadata.Type, "tokens"), f)
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.0/8", "127.0.0.1"}, cfg.(*Config).TrustedProxies)
	assert.NotContains(t, fmt.Sprint(cfg), "aaaaaaaaaaaaaaaaaaaa", "tokens are redacted when a configuration is printed")
	_, err = testutil.LoadConfig(t, "config.yaml", component.NewIDWithName(metadata.Type, "short"), f)
	assert.ErrorContains(t, err, "at least 16")
	_, err = testutil.LoadConfig(t, "config.yaml", component.NewIDWithName(metadata.Type, "proxy"), f)
	assert.ErrorContains(t, err, "neither an address nor a CIDR prefix")
}

// host offers the extension to confighttp as an authenticator.
type host struct {
	component.Host
	ext map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.ext }

// TestThroughConfighttp runs the extension as the Collector's HTTP servers
// do: 401 without a valid token, the token's tenant in the handler's context.
func TestThroughConfighttp(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Tokens = "team-a=aaaaaaaaaaaaaaaaaaaa,team-b=bbbbbbbbbbbbbbbbbbbb"
	cfg.TrustedProxies = []string{"127.0.0.1"}
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()

	sc := confighttp.NewDefaultServerConfig()
	sc.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: component.NewID(metadata.Type)}})
	h := host{Host: componenttest.NewNopHost(), ext: map[component.ID]component.Component{component.NewID(metadata.Type): ext}}
	srv, err := sc.ToServer(context.Background(), h.GetExtensions(), componenttest.NewNopTelemetrySettings(),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, tenant.FromContext(r.Context()))
		}))
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler)
	defer ts.Close()

	get := func(headers map[string]string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, ts.URL, nil)
		require.NoError(t, err)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, _ := get(nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = get(map[string]string{"Authorization": "Bearer nope-nope-nope-nope"})
	assert.Equal(t, http.StatusUnauthorized, code)
	code, body := get(map[string]string{"Authorization": "Bearer bbbbbbbbbbbbbbbbbbbb"})
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "team-b", body)
	// httptest listens on 127.0.0.1: a trusted proxy here.
	code, body = get(map[string]string{"X-Scope-OrgID": "team-c"})
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "team-c", body)
}

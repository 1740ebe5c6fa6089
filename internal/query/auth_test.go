package query

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tenant"
)

// tenantReader answers the service list with the tenant its context
// carries: what the store's reads are confined to.
type tenantReader struct{ fakeReader }

func (tenantReader) Services(ctx context.Context, _, _ int64) ([]string, error) {
	return []string{tenant.FromContext(ctx)}, nil
}

func TestAuthGuardsTheAPI(t *testing.T) {
	h := NewHandler(tenantReader{fakeReader{}}, zap.NewNop(), WithAuth(func(r *http.Request) (context.Context, error) {
		if r.Header.Get("Authorization") != "Bearer team-a-token" {
			return nil, errors.New("invalid bearer token")
		}
		return tenant.NewContext(r.Context(), "team-a"), nil
	}))
	get := func(path, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, path := range []string{"/api/v1/services", "/api/services", "/api/v1/traces/4bf92f3577b34da6a3ce929d0e0e4736"} {
		rec := get(path, "")
		assert.Equal(t, http.StatusUnauthorized, rec.Code, path)
		assert.Equal(t, `Bearer realm="tracesift"`, rec.Header().Get("WWW-Authenticate"), path)
		assert.Contains(t, rec.Body.String(), "invalid bearer token", path)
		assert.Equal(t, http.StatusUnauthorized, get(path, "Bearer wrong").Code, path)
	}
	assert.Contains(t, get("/api/services", "").Body.String(), `"errors"`, "Jaeger's routes answer in Jaeger's format")

	rec := get("/api/v1/services", "Bearer team-a-token")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"services":["team-a"]}`, rec.Body.String(), "the reads run in the caller's tenant")

	// The UI's pages and the health check hold no data: they load without a token.
	assert.Equal(t, http.StatusOK, get("/", "").Code)
	assert.Equal(t, http.StatusOK, get("/health", "").Code)
}

// unreachableReader is a store that cannot be reached yet.
type unreachableReader struct{ fakeReader }

func (unreachableReader) Services(context.Context, int64, int64) ([]string, error) {
	return nil, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

func TestUnreachableStoreIs503(t *testing.T) {
	h := NewHandler(unreachableReader{fakeReader{}}, zap.NewNop())
	for _, path := range []string{"/api/v1/services", "/api/services"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, path)
		assert.Equal(t, "5", rec.Header().Get("Retry-After"), path)
		assert.Contains(t, rec.Body.String(), "not reachable yet", path)
	}
}

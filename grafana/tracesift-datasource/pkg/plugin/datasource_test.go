package plugin

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/experimental"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the frames built")

// fixtureAPI serves testdata/api, which tracesift's own tests write from its
// query API's answers (internal/query, TestGrafanaFixtures), by path; it
// keeps the requests it got.
type fixtureAPI struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func newFixtureAPI(t *testing.T) *fixtureAPI {
	f := &fixtureAPI{}
	files := map[string]string{
		"/api/v1/traces/4bf92f3577b34da6a3ce929d0e0e4736": "trace.json",
		"/api/v1/traces":                   "search.json",
		"/api/v1/services":                 "services.json",
		"/api/v1/services/shop/operations": "operations.json",
		"/api/v1/findings":                 "findings.json",
		"/api/v1/logs":                     "logs.json",
		"/api/v1/red":                      "red.json",
		"/api/v1/dependencies":             "dependencies.json",
		"/api/v1/compare":                  "compare.json",
		"/api/v1/clock-skew":               "clock-skew.json",
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") == "Bearer wrong" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error": "missing or invalid bearer token"}`)
			return
		}
		if r.URL.Path == "/api/v1/red" && r.URL.Query().Get("service") == "shop" {
			// A service whose RED read fails: the service graph falls back on the traces.
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error": "the store is not reachable"}`)
			return
		}
		name, ok := files[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error": "trace 0123 is not stored"}`)
			return
		}
		b, err := os.ReadFile(filepath.Join("testdata", "api", name))
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(f.Close)
	return f
}

// last is the last request's path and query.
func (f *fixtureAPI) last() *http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

// count is how many requests came so far.
func (f *fixtureAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// to are the requests since the first n to path.
func (f *fixtureAPI) to(n int, path string) []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*http.Request
	for _, r := range f.requests[n:] {
		if r.URL.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func newTestDatasource(t *testing.T, url, token string) *Datasource {
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "ts-uid", Name: "tracesift",
		URL: url, DecryptedSecureJSONData: map[string]string{"token": token}})
	require.NoError(t, err)
	return inst.(*Datasource)
}

var window = backend.TimeRange{From: time.Unix(0, 1796010600000000000), To: time.Unix(0, 1796010700000000000)}

func run(t *testing.T, ds *Datasource, queryType, model string) backend.DataResponse {
	t.Helper()
	resp, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: queryType, JSON: json.RawMessage(model), TimeRange: window, Interval: 60 * time.Second}}})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// Every query type's frames, against the API's own answers: golden files
// (testdata/golden, rewritten with -update), and the request each sent.
func TestQueryTypesGolden(t *testing.T) {
	api := newFixtureAPI(t)
	ds := newTestDatasource(t, api.URL+"/", "s3cret")
	for _, tc := range []struct {
		name, queryType, model, wantPath string
		wantQuery                        map[string]string
	}{
		{"trace", queryTrace, `{"traceId": " 4BF92F3577B34DA6A3CE929D0E0E4736 "}`,
			"/api/v1/traces/4bf92f3577b34da6a3ce929d0e0e4736", map[string]string{}},
		{"search", querySearch, `{"service": "shop", "operation": "GET /cart", "minDuration": "100ms", "errorsOnly": true,
			"attributes": "http.route=/cart user.tier=gold", "limit": 20}`, "/api/v1/traces",
			map[string]string{"service": "shop", "operation": "GET /cart", "minDuration": "100ms", "status": "error",
				"attr.http.route": "/cart", "attr.user.tier": "gold", "limit": "20",
				"start": "1796010600000000000", "end": "1796010700000000000"}},
		{"logs", queryLogs, `{"service": "shop", "words": "slow query", "severity": "WARN"}`, "/api/v1/logs",
			map[string]string{"service": "shop", "q": "slow query", "severity": "WARN",
				"start": "1796010600000000000", "end": "1796010700000000000"}},
		{"findings", queryFindings, `{"kind": "retry_fanout"}`, "/api/v1/findings",
			map[string]string{"kind": "retry_fanout", "start": "1796010600000000000", "end": "1796010700000000000"}},
		{"serviceGraph", queryServiceGraph, `{}`, "/api/v1/dependencies",
			map[string]string{"start": "1796010600000000000", "end": "1796010700000000000"}},
		{"red", queryRED, `{"service": "cat", "operation": "GET /cat", "groupBy": "instance"}`, "/api/v1/red",
			map[string]string{"service": "cat", "operation": "GET /cat", "groupBy": "instance", "step": "1m0s",
				"start": "1796010600000000000", "end": "1796010700000000000"}},
		{"compare", queryCompare, `{"service": "cat", "minDuration": "500ms"}`, "/api/v1/compare",
			map[string]string{"service": "cat", "slow": "500ms", "start": "1796010600000000000", "end": "1796010700000000000"}},
		{"clockSkew", queryClockSkew, `{}`, "/api/v1/clock-skew",
			map[string]string{"start": "1796010600000000000", "end": "1796010700000000000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := api.count()
			resp := run(t, ds, tc.queryType, tc.model)
			require.NoError(t, resp.Error)
			sent := api.to(before, tc.wantPath)
			require.Len(t, sent, 1, tc.wantPath)
			req := sent[0]
			got := map[string]string{}
			for k, v := range req.URL.Query() {
				got[k] = strings.Join(v, ",")
			}
			assert.Equal(t, tc.wantQuery, got)
			assert.Equal(t, "Bearer s3cret", req.Header.Get("Authorization"))
			experimental.CheckGoldenJSONResponse(t, "testdata/golden", tc.name, &resp, *update)
			if tc.queryType == queryServiceGraph {
				// And each service's RED, for its exact figures.
				var services []string
				for _, r := range api.to(before, "/api/v1/red") {
					services = append(services, r.URL.Query().Get("service"))
				}
				assert.ElementsMatch(t, []string{"shop", "shop-db"}, services)
			}
		})
	}
}

func TestQueryErrors(t *testing.T) {
	api := newFixtureAPI(t)
	ds := newTestDatasource(t, api.URL, "")
	for _, tc := range []struct {
		queryType, model string
		status           backend.Status
		contains         string
	}{
		{queryTrace, `{"traceId": "0123456789abcdef0123456789abcdef"}`, backend.StatusNotFound, "is not stored"},
		{queryTrace, `{}`, backend.StatusBadRequest, "enter a trace id"},
		{querySearch, `{"attributes": "novalue"}`, backend.StatusBadRequest, `attribute filter "novalue"`},
		{queryRED, `{}`, backend.StatusBadRequest, "RED needs a service"},
		{queryCompare, `{}`, backend.StatusBadRequest, "the comparison needs a service"},
		{"flamegraph", `{}`, backend.StatusBadRequest, "unknown query type"},
		{querySearch, `{"limit": "many"}`, backend.StatusBadRequest, "not tracesift's"},
	} {
		resp := run(t, ds, tc.queryType, tc.model)
		require.Error(t, resp.Error, tc.model)
		assert.Equal(t, tc.status, resp.Status, tc.model)
		assert.Contains(t, resp.Error.Error(), tc.contains)
	}
	// An API that is down fails its query, not the others.
	down := newTestDatasource(t, "http://127.0.0.1:1", "")
	resp := run(t, down, querySearch, `{}`)
	assert.Equal(t, backend.StatusBadGateway, resp.Status)
	assert.Contains(t, resp.Error.Error(), "calling tracesift at http://127.0.0.1:1")
}

func TestSettings(t *testing.T) {
	for _, u := range []string{"", "localhost:16686", "ftp://x", "http://"} {
		_, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{URL: u})
		assert.Error(t, err, u)
	}
}

func TestCheckHealth(t *testing.T) {
	api := newFixtureAPI(t)
	res, err := newTestDatasource(t, api.URL, "").CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Equal(t, backend.HealthStatusOk, res.Status)
	assert.Equal(t, "tracesift answered: 2 services in the last 24 hours", res.Message)

	res, err = newTestDatasource(t, api.URL, "wrong").CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Equal(t, backend.HealthStatusError, res.Status)
	assert.Contains(t, res.Message, "refused the token")

	res, err = newTestDatasource(t, "http://127.0.0.1:1", "").CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Equal(t, backend.HealthStatusError, res.Status)
}

// sender keeps a CallResource answer.
type sender struct{ resp *backend.CallResourceResponse }

func (s *sender) Send(r *backend.CallResourceResponse) error { s.resp = r; return nil }

func TestResources(t *testing.T) {
	api := newFixtureAPI(t)
	ds := newTestDatasource(t, api.URL, "")
	for _, tc := range []struct{ path, want, apiPath, apiQuery string }{
		{"services", `{"services":["shop","shop-db"]}`, "/api/v1/services", ""},
		{"services/shop/operations", `{"operations":["GET /cart shop"]}`, "/api/v1/services/shop/operations", ""},
		{"services/cat/instances", `{"instances":["cat-4"]}`, "/api/v1/red", "groupBy=instance&service=cat"},
	} {
		var s sender
		require.NoError(t, ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: http.MethodGet,
			Path: tc.path, URL: tc.path}, &s))
		assert.Equal(t, http.StatusOK, s.resp.Status, tc.path)
		assert.JSONEq(t, tc.want, string(s.resp.Body), tc.path)
		req := api.last()
		assert.Equal(t, tc.apiPath, req.URL.Path)
		if tc.apiQuery != "" {
			q := req.URL.Query()
			q.Del("start")
			q.Del("end")
			assert.Equal(t, tc.apiQuery, q.Encode())
		}
	}
	var s sender
	require.NoError(t, ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: http.MethodGet,
		Path: "services/nope/operations", URL: "services/nope/operations"}, &s))
	assert.Equal(t, http.StatusBadGateway, s.resp.Status)
}

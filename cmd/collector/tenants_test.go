package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tracesift/tracesift/internal/query"
)

const (
	tokenA = "team-a-0123456789abcdef"
	tokenB = "team-b-0123456789abcdef"
)

// tenantRequest sends a request as the holder of token ("" for none).
func tenantRequest(t *testing.T, method, url, token, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// forgingTrace is an OTLP/JSON request of one failed server span of service
// in trace id, with a resource attribute forging another tenant.
func forgingTrace(id, spanID, service string, start time.Time) string {
	return fmt.Sprintf(`{"resourceSpans":[{"resource":{"attributes":[
		{"key":"service.name","value":{"stringValue":%q}},
		{"key":"tracesift.tenant","value":{"stringValue":"team-b"}}]},
	"scopeSpans":[{"spans":[{"traceId":%q,"spanId":%q,"name":"POST /pay","kind":2,
		"startTimeUnixNano":"%d","endTimeUnixNano":"%d","status":{"code":2,"message":"failed"}}]}]}]}`,
		service, id, spanID, start.UnixNano(), start.Add(20*time.Millisecond).UnixNano())
}

// TestTenants runs the collector with two tenants' tokens: every server
// refuses a request without one, and each tenant reads only its own data,
// even when both sent the same trace id.
func TestTenants(t *testing.T) {
	ep := startCollectorWithTokens(t, "team-a="+tokenA+",team-b="+tokenB)
	const shared = "5e2b3c4d5e6f708192a3b4c5d6e7f801" // sent by both tenants
	const onlyB = "6f2b3c4d5e6f708192a3b4c5d6e7f802"
	now := time.Now()

	// Nothing goes in without a token, on any server.
	code, _ := tenantRequest(t, http.MethodPost, "http://"+ep.http+"/v1/traces", "", "application/json",
		forgingTrace(shared, "00000000000000a1", "shop", now))
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = tenantRequest(t, http.MethodPost, "http://"+ep.http+"/v1/traces", "not-a-token-of-anyone", "application/json",
		forgingTrace(shared, "00000000000000a1", "shop", now))
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = tenantRequest(t, http.MethodPost, "http://"+ep.loki+"/loki/api/v1/push", "", "application/json",
		`{"streams":[{"stream":{"service_name":"shop"},"values":[["1","x"]]}]}`)
	assert.Equal(t, http.StatusUnauthorized, code)
	code, _ = tenantRequest(t, http.MethodPost, "http://"+ep.loki+"/api/v1/logs/lines?service=shop", "", "text/plain", "x\n")
	assert.Equal(t, http.StatusUnauthorized, code)
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(ep.grpc), otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
	require.NoError(t, err)
	defer exp.Shutdown(context.Background())
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})
	err = exp.ExportSpans(context.Background(), tracetest.SpanStubs{{Name: "GET /", SpanContext: sc}}.Snapshots())
	require.Error(t, err)
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "gRPC without a token: %v", err)
	code, _ = tenantRequest(t, http.MethodGet, "http://"+ep.query+"/api/v1/services", "", "", "")
	assert.Equal(t, http.StatusUnauthorized, code)

	// Each tenant sends a failed trace with the same id (team-a forging
	// team-b in its resource), a log line in it, and team-b one more trace.
	send := func(token, id, spanID, service string) {
		code, body := tenantRequest(t, http.MethodPost, "http://"+ep.http+"/v1/traces", token, "application/json",
			forgingTrace(id, spanID, service, now))
		require.Equal(t, http.StatusOK, code, string(body))
		push := fmt.Sprintf(`{"streams":[{"stream":{"service_name":%q},"values":[[%q,"payment failed trace_id=%s"]]}]}`,
			service, fmt.Sprint(now.Add(5*time.Millisecond).UnixNano()), id)
		code, body = tenantRequest(t, http.MethodPost, "http://"+ep.loki+"/loki/api/v1/push", token, "application/json", push)
		require.Equal(t, http.StatusNoContent, code, string(body))
	}
	send(tokenA, shared, "00000000000000a1", "shop")
	send(tokenB, shared, "00000000000000b1", "bank")
	send(tokenB, onlyB, "00000000000000b2", "bank")

	fetch := func(token, id string) (int, *query.Trace) {
		code, body := tenantRequest(t, http.MethodGet, "http://"+ep.query+"/api/v1/traces/"+id, token, "", "")
		if code != http.StatusOK {
			return code, nil
		}
		var tr query.Trace
		require.NoError(t, json.Unmarshal(body, &tr))
		return code, &tr
	}
	for _, tc := range []struct{ token, service string }{{tokenA, "shop"}, {tokenB, "bank"}} {
		var tr *query.Trace
		eventually(t, tc.service+"'s trace with its log line", func() bool {
			var code int
			code, tr = fetch(tc.token, shared)
			return code == http.StatusOK && len(tr.Logs) == 1
		})
		require.Len(t, tr.Spans, 1, "a tenant sees its own spans of the shared trace id only")
		assert.Equal(t, tc.service, tr.Spans[0].Service)
		assert.Equal(t, tc.service, tr.Logs[0].Service)
		var services struct{ Services []string }
		code, body := tenantRequest(t, http.MethodGet, "http://"+ep.query+"/api/v1/services", tc.token, "", "")
		require.Equal(t, http.StatusOK, code)
		require.NoError(t, json.Unmarshal(body, &services))
		assert.Equal(t, []string{tc.service}, services.Services)
	}
	eventually(t, "team-b's own trace", func() bool { code, _ := fetch(tokenB, onlyB); return code == http.StatusOK })
	code, _ = fetch(tokenA, onlyB)
	assert.Equal(t, http.StatusNotFound, code, "another tenant's trace is not found")
	// Basic credentials (Promtail, Grafana data sources): tenant and token.
	for user, want := range map[string]int{"team-b": http.StatusOK, "": http.StatusOK, "team-a": http.StatusUnauthorized} {
		req, err := http.NewRequest(http.MethodGet, "http://"+ep.query+"/api/v1/traces/"+onlyB, nil)
		require.NoError(t, err)
		req.SetBasicAuth(user, tokenB)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, "basic auth as %q with team-b's token", user)
	}
	code, body := tenantRequest(t, http.MethodGet, "http://"+ep.query+"/api/traces/"+onlyB, tokenA, "", "")
	assert.Equal(t, http.StatusNotFound, code, "nor through the Jaeger API: %s", body)
	code, body = tenantRequest(t, http.MethodGet, "http://"+ep.query+"/api/v1/traces?service=bank&lookback=1h", tokenA, "", "")
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, string(body), onlyB, "search is confined too")

	// The web UI's pages load without a token; on its first 401 it asks for
	// one and then shows that tenant's data.
	b := browser(t)
	require.NoError(t, chromedp.Listen(b, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			// Not from the listener itself: it must not run commands.
			go func() {
				_, _ = chromedp.Call(b, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true, PromptText: tokenB})
			}()
		}
	}))
	require.NoError(t, chromedp.Do(b, chromedp.Navigate("http://"+ep.query+"/search?service=bank&errors=1"),
		chromedp.WaitVisible(chromedp.CSS(`table.traces tr[data-trace="`+onlyB+`"]`))))
	assert.Equal(t, []string{"", "bank"},
		eval[[]string](t, b, `[...document.querySelectorAll('select[name=service] option')].map((o) => o.value)`))
}

package query

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
)

var updateFixtures = flag.Bool("update", false, "rewrite the Grafana data source's API fixtures from this API's answers")

// fixtureDir holds the answers of this API that the Grafana data source's
// tests read (a module of its own): written here, from the handler itself,
// so that the plugin is tested against what the API really sends.
const fixtureDir = "../../grafana/tracesift-datasource/pkg/plugin/testdata/api"

// apiFixtures are the requests whose answers the plugin's tests serve, by
// file name.
var apiFixtures = map[string]string{
	"trace.json":        "/api/v1/traces/4bf92f3577b34da6a3ce929d0e0e4736",
	"search.json":       "/api/v1/traces?service=shop&start=1796010600000000000&end=1796010700000000000&limit=20",
	"services.json":     "/api/v1/services",
	"operations.json":   "/api/v1/services/shop/operations",
	"findings.json":     "/api/v1/findings?start=1796010600000000000&end=1796010700000000000",
	"logs.json":         "/api/v1/logs?service=shop&start=1796010600000000000&end=1796010700000000000",
	"red.json":          "/api/v1/red?service=cat&operation=GET%20%2Fcat&groupBy=instance&step=60s&start=1796010600000000000&end=1796010700000000000",
	"dependencies.json": "/api/v1/dependencies?start=1796010600000000000&end=1796010700000000000",
	"clock-skew.json":   "/api/v1/clock-skew?start=1796010600000000000&end=1796010800000000000",
	"compare.json":      "/api/v1/compare?service=cat&start=1796010600000000000&end=1796010700000000000",
}

// fixtureReader answers as fakeReader does, with fuller logs and findings.
type fixtureReader struct{ fakeReader }

func (fixtureReader) SearchLogs(context.Context, store.LogsFilter) ([]model.LogMatch, error) {
	return []model.LogMatch{
		{Log: model.Log{TimeUnixNano: 1796010663320000000, ObservedTimeUnixNano: 1796010663321000000, SeverityText: "WARN",
			SeverityNumber: 13, Body: "slow query", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b9",
			Service: "shop-db", Host: "db-1", Attributes: map[string]string{"thread": "main"},
			Resource: map[string]string{"service.name": "shop-db"}}, Kept: true},
		{Log: model.Log{TimeUnixNano: 1796010663005000000, ObservedTimeUnixNano: 1796010663005000000, SeverityText: "INFO",
			SeverityNumber: 9, Body: "cart requested", Service: "shop", Host: "web-1", Attributes: map[string]string{},
			Resource: map[string]string{"service.name": "shop"}}},
	}, nil
}

func (fixtureReader) GetFindingSummaries(context.Context, store.FindingsFilter) ([]model.FindingSummary, error) {
	return []model.FindingSummary{
		{Kind: "retry_fanout", Service: "checkout", Subject: "checkout → payments POST /charge", Count: 3, Traces: 3,
			AvgValue: 9, P50Value: 9, MaxValue: 27, ExampleTraceIDs: []string{"4bf92f3577b34da6a3ce929d0e0e4736"},
			LastSeenUnixNano: 1796010663000000000},
		{Kind: "retry_budget", Service: "checkout", Subject: "checkout → payments", Count: 2, AvgValue: 0.25,
			P50Value: 0.25, MaxValue: 0.3, ExampleTraceIDs: []string{}, LastSeenUnixNano: 1796010690000000000},
	}, nil
}

func TestGrafanaFixtures(t *testing.T) {
	tr := jaegerFixture()
	h := NewHandler(fixtureReader{fakeReader{tr.TraceID: tr}}, zap.NewNop())
	for name, path := range apiFixtures {
		rec := getJSON(t, h, path)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
		var out bytes.Buffer
		require.NoError(t, json.Indent(&out, rec.Body.Bytes(), "", "  "))
		file := filepath.Join(fixtureDir, name)
		if *updateFixtures {
			require.NoError(t, os.MkdirAll(fixtureDir, 0o755))
			require.NoError(t, os.WriteFile(file, out.Bytes(), 0o644))
			continue
		}
		want, err := os.ReadFile(file)
		require.NoError(t, err, "run go test ./internal/query -run TestGrafanaFixtures -update")
		require.Equal(t, string(want), out.String(), "%s changed: the Grafana data source reads it; "+
			"rewrite it with -update and check the plugin's tests", name)
	}
}

// Package plugin is the backend of Grafana's tracesift data source: it turns
// Grafana's queries into calls of tracesift's query API and the answers into
// the data frames Grafana's trace view, logs, table, node graph and time
// series panels read.
package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"
)

// ID is the plugin's id (src/plugin.json).
const ID = "tracesift-datasource"

// Datasource is one configured tracesift data source.
type Datasource struct {
	backend.CallResourceHandler
	api  *client
	uid  string // for links from one query's rows to another query
	name string
}

var (
	_ backend.QueryDataHandler   = (*Datasource)(nil)
	_ backend.CheckHealthHandler = (*Datasource)(nil)
	_ instancemgmt.Instance      = (*Datasource)(nil)
)

// NewDatasource reads a data source's settings: the query API's URL (the
// data source's URL field) and, in its secure settings, the bearer token the
// API requires when it has tokens (`token`).
func NewDatasource(_ context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	if s.URL == "" {
		return nil, fmt.Errorf("set the URL of tracesift's query API, such as http://localhost:16686")
	}
	base, err := url.Parse(s.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("the URL %q is not an http(s) URL of tracesift's query API", s.URL)
	}
	ds := &Datasource{
		api: &client{base: base, token: s.DecryptedSecureJSONData["token"], http: &http.Client{Timeout: 60 * time.Second}},
		uid: s.UID, name: s.Name,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /services", ds.services)
	mux.HandleFunc("GET /services/{service}/operations", ds.operations)
	mux.HandleFunc("GET /services/{service}/instances", ds.instances)
	ds.CallResourceHandler = httpadapter.New(mux)
	return ds, nil
}

// Dispose closes the instance's idle connections when Grafana replaces it.
func (d *Datasource) Dispose() { d.api.http.CloseIdleConnections() }

// CheckHealth lists the services of the last day: it reaches the API, with
// the token when one is set.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	var out struct{ Services []string }
	now := time.Now()
	if err := d.api.get(ctx, "/api/v1/services", timeParams(now.Add(-24*time.Hour), now), &out); err != nil {
		msg := err.Error()
		if isStatus(err, http.StatusUnauthorized) {
			msg = "tracesift refused the token (401): set the token the query API was configured with"
		}
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: msg}, nil
	}
	return &backend.CheckHealthResult{Status: backend.HealthStatusOk,
		Message: fmt.Sprintf("tracesift answered: %d services in the last 24 hours", len(out.Services))}, nil
}

// services and operations serve the query editor's lists (CallResource).
func (d *Datasource) services(w http.ResponseWriter, r *http.Request) {
	var out struct {
		Services []string `json:"services"`
	}
	d.resource(w, r, "/api/v1/services", &out)
}

func (d *Datasource) operations(w http.ResponseWriter, r *http.Request) {
	var out struct {
		Operations []string `json:"operations"`
	}
	d.resource(w, r, "/api/v1/services/"+url.PathEscape(r.PathValue("service"))+"/operations", &out)
}

// instances lists the instances that served the service in the last hour,
// busiest first (from RED on all traffic), for dashboard variables.
func (d *Datasource) instances(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	p := timeParams(now.Add(-time.Hour), now)
	p.Set("service", r.PathValue("service"))
	p.Set("groupBy", "instance")
	var red struct{ Groups []apiREDGroup }
	if err := d.api.get(r.Context(), "/api/v1/red", p, &red); err != nil {
		d.resourceError(w, err)
		return
	}
	out := struct {
		Instances []string `json:"instances"`
	}{Instances: []string{}}
	for _, g := range red.Groups {
		out.Instances = append(out.Instances, g.Value)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (d *Datasource) resourceError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

func (d *Datasource) resource(w http.ResponseWriter, r *http.Request, path string, out any) {
	if err := d.api.get(r.Context(), path, nil, out); err != nil {
		d.resourceError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

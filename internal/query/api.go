// Package query is tracesift's HTTP query API (docs/architecture.md,
// "Contracts"). The
// same handler is served by the collector in the all-in-one deployment
// (extension tracesift_query) and by cmd/query against a ClickHouse server.
package query

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/ui"
)

// TraceReader is what the API needs from the store.
type TraceReader interface {
	GetTrace(ctx context.Context, traceID string) (*model.Trace, error)
	GetFindingSummaries(ctx context.Context, f store.FindingsFilter) ([]model.FindingSummary, error)
	SearchLogs(ctx context.Context, f store.LogsFilter) ([]model.LogMatch, error)
	SearchTraces(ctx context.Context, f store.TracesFilter) ([]model.TraceSummary, error)
	Services(ctx context.Context, start, end int64) ([]string, error)
	Operations(ctx context.Context, service string, start, end int64) ([]string, error)
	RED(ctx context.Context, f store.REDFilter) ([]model.REDGroup, error)
	REDTallies(ctx context.Context, f store.REDFilter, slowBucket int32) ([]model.REDTally, error)
	Dependencies(ctx context.Context, start, end int64) ([]model.Dependency, error)
	ClockPairs(ctx context.Context, start, end int64) ([]model.ClockPair, error)
}

// NewHandler returns the API's routes over r.
func NewHandler(r TraceReader, logger *zap.Logger) http.Handler {
	a := &api{reader: r, logger: logger}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/traces/{traceId}", a.getTrace)
	mux.HandleFunc("GET /api/v1/traces", a.searchTraces)
	mux.HandleFunc("GET /api/v1/services", a.listServices)
	mux.HandleFunc("GET /api/v1/services/{service}/operations", a.listOperations)
	mux.HandleFunc("GET /api/v1/findings", a.getFindings)
	mux.HandleFunc("GET /api/v1/logs", a.getLogs)
	mux.HandleFunc("GET /api/v1/red", a.getRED)
	mux.HandleFunc("GET /api/v1/compare", a.getCompare)
	mux.HandleFunc("GET /api/v1/dependencies", a.getDependencies)
	mux.HandleFunc("GET /api/v1/clock-skew", a.getClockSkew)
	a.routeJaeger(mux)
	ui.Register(mux)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path+" (see the README's API section)")
	})
	return mux
}

type api struct {
	reader TraceReader
	logger *zap.Logger
}

type errorBody struct {
	Error string `json:"error"`
}

func (a *api) getTrace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("traceId")
	if !store.ValidTraceID(id) {
		msg := "malformed trace id: want 32 hex characters, not all zero"
		if lower := strings.ToLower(id); lower != id && store.ValidTraceID(lower) {
			msg = "malformed trace id: use lowercase hex (" + lower + ")"
		}
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	t, err := a.reader.GetTrace(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "trace "+id+" is not stored (never received, not kept by the sampler, or expired)")
	case err != nil:
		a.logger.Error("reading a trace failed", zap.String("trace_id", id), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "reading the trace failed; see the server log")
	default:
		writeJSON(w, http.StatusOK, traceJSON(t))
	}
}

// answer writes v with 200, or, when the store failed (err), logs err and
// answers 500 saying what failed (e.g. "searching logs").
func (a *api) answer(w http.ResponseWriter, what string, v any, err error) {
	if err != nil {
		a.logger.Error(what+" failed", zap.Error(err))
		writeError(w, http.StatusInternalServerError, what+" failed; see the server log")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

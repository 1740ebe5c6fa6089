// Package query is tracesift's HTTP query API (docs/architecture.md,
// "Contracts"). The
// same handler is served by the collector in the all-in-one deployment
// (extension tracesift_query) and by cmd/query against a ClickHouse server.
package query

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

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

// Limits bound the reads the API runs at once.
type Limits struct {
	// MaxConcurrent is how many requests may read the store at once; the
	// embedded engine runs two reads at a time, so more only queue there.
	// Default 4.
	MaxConcurrent int
	// QueueWait is how long a request waits for its turn before it is
	// answered 503 with Retry-After. Default 2 s.
	QueueWait time.Duration
	// RequestTime bounds the store work of one request, however many
	// statements it takes (a Jaeger search reads every trace it finds): no
	// statement starts after it. Default 4 s.
	RequestTime time.Duration
	// MaxWindow bounds every read's window: an all-time query is refused,
	// not run (reads that scan raw spans: at most 7 days). Default 31 days.
	MaxWindow time.Duration
}

// DefaultLimits are the limits of a handler made without WithLimits.
var DefaultLimits = Limits{MaxConcurrent: 4, QueueWait: 2 * time.Second, RequestTime: 4 * time.Second,
	MaxWindow: 31 * 24 * time.Hour}

// Option configures NewHandler.
type Option func(*api)

// WithLimits sets the handler's limits; zero fields keep their defaults.
func WithLimits(l Limits) Option {
	return func(a *api) {
		if l.MaxConcurrent > 0 {
			a.limits.MaxConcurrent = l.MaxConcurrent
		}
		if l.QueueWait > 0 {
			a.limits.QueueWait = l.QueueWait
		}
		if l.RequestTime > 0 {
			a.limits.RequestTime = l.RequestTime
		}
		if l.MaxWindow > 0 {
			a.limits.MaxWindow = l.MaxWindow
		}
	}
}

// Authenticate places a request in its tenant: it returns the request's
// context carrying the tenant (internal/tenant), or an error to answer 401.
type Authenticate func(r *http.Request) (context.Context, error)

// WithAuth makes every read under /api/ authenticate first: 401 without
// valid credentials, else the store reads of the request are confined to
// its tenant. The web UI's pages and /health carry no data and stay open.
func WithAuth(auth Authenticate) Option {
	return func(a *api) { a.auth = auth }
}

// NewHandler returns the API's routes over r.
func NewHandler(r TraceReader, logger *zap.Logger, opts ...Option) http.Handler {
	a := &api{reader: r, logger: logger, limits: DefaultLimits}
	for _, o := range opts {
		o(a)
	}
	a.slots = make(chan struct{}, a.limits.MaxConcurrent)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/traces/{traceId}", a.getTrace)
	mux.HandleFunc("GET /api/v1/traces/{traceId}/spans/{spanId}", a.getSpan)
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
	return a.authenticated(a.queued(mux))
}

type api struct {
	reader TraceReader
	logger *zap.Logger
	auth   Authenticate // nil: every request is the default tenant
	limits Limits
	slots  chan struct{} // one per request reading the store
}

// authenticated runs a.auth on the API's paths: a request it refuses reads
// nothing and is answered 401 in the route's format.
func (a *api) authenticated(next http.Handler) http.Handler {
	if a.auth == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			next.ServeHTTP(w, r)
			return
		}
		ctx, err := a.auth(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tracesift"`)
			msg := "unauthenticated: " + err.Error()
			failIn(w, r, http.StatusUnauthorized, msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// queued runs the API's reads (paths under /api/) at most MaxConcurrent at
// a time. A request waits for its turn up to QueueWait, then is answered
// 503 with Retry-After; one whose client went away while it waited runs no
// query.
func (a *api) queued(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			next.ServeHTTP(w, r)
			return
		}
		timer := time.NewTimer(a.limits.QueueWait)
		defer timer.Stop()
		select {
		case a.slots <- struct{}{}:
		case <-r.Context().Done():
			return
		case <-timer.C:
			w.Header().Set("Retry-After", "1")
			msg := fmt.Sprintf("too many queries in flight (%d at a time); retry shortly", a.limits.MaxConcurrent)
			failIn(w, r, http.StatusServiceUnavailable, msg)
			return
		}
		defer func() { <-a.slots }()
		ctx, cancel := context.WithTimeout(r.Context(), a.limits.RequestTime)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// failed answers for a read that failed with err, saying what failed (e.g.
// "searching logs"): 400 when the read met the store's limits or the
// request's time (the client asked for too much), nothing when the client
// went away, 500 otherwise.
// fail writes the answer in the route's format.
func (a *api) failed(w http.ResponseWriter, r *http.Request, fail func(code int, msg string), what string, err error) {
	switch {
	case errors.Is(err, store.ErrUnavailable):
		// Not the server's fault nor the client's: the store comes back.
		w.Header().Set("Retry-After", "5")
		fail(http.StatusServiceUnavailable, what+" failed: the store is not reachable yet; retry shortly")
	case store.IsQueryLimit(err) || errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil:
		fail(http.StatusBadRequest, what+" exceeded the store's limits on a query's time or memory: "+
			"narrow the window or add filters")
	case r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
	default:
		a.logger.Error(what+" failed", zap.Error(err))
		fail(http.StatusInternalServerError, what+" failed; see the server log")
	}
}

type errorBody struct {
	Error string `json:"error"`
}

func (a *api) getTrace(w http.ResponseWriter, r *http.Request) {
	brief, err := boolParam(r.URL.Query(), "brief")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if t := a.readTrace(w, r); t != nil {
		writeJSON(w, http.StatusOK, traceJSON(t, brief))
	}
}

// getSpan answers one span of a trace in full, its times corrected as in the
// whole trace (which it reads: the offsets are the trace's).
func (a *api) getSpan(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("spanId")
	t := a.readTrace(w, r)
	if t == nil {
		return
	}
	for i := range t.Spans {
		if t.Spans[i].SpanID == id {
			writeJSON(w, http.StatusOK, spanJSON(&t.Spans[i], viewOf(t).adj.Time))
			return
		}
	}
	writeError(w, http.StatusNotFound, "trace "+t.TraceID+" has no span "+id)
}

// readTrace reads the trace the path names, or answers why it cannot and
// returns nil.
func (a *api) readTrace(w http.ResponseWriter, r *http.Request) *model.Trace {
	id := r.PathValue("traceId")
	if !store.ValidTraceID(id) {
		msg := "malformed trace id: want 32 hex characters, not all zero"
		if lower := strings.ToLower(id); lower != id && store.ValidTraceID(lower) {
			msg = "malformed trace id: use lowercase hex (" + lower + ")"
		}
		writeError(w, http.StatusBadRequest, msg)
		return nil
	}
	t, err := a.reader.GetTrace(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "trace "+id+" is not stored (never received, not kept by the sampler, or expired)")
	case err != nil:
		a.failed(w, r, func(code int, msg string) { writeError(w, code, msg) }, "reading trace "+id, err)
	default:
		return t
	}
	return nil
}

// boolParam reads an optional true/false query parameter.
func boolParam(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("`%s`: want true or false", name)
	}
	return b, nil
}

// answer writes v with 200, or, when the store failed (err), answers as
// failed says.
func (a *api) answer(w http.ResponseWriter, r *http.Request, what string, v any, err error) {
	if err != nil {
		a.failed(w, r, func(code int, msg string) { writeError(w, code, msg) }, what, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// failIn answers an error in the format of the request's route: ours under
// /api/v1/, Jaeger's under the rest of /api/.
func failIn(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/v1/") {
		writeError(w, code, msg)
	} else {
		jaegerFail(w, code, msg)
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

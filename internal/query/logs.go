package query

import (
	"fmt"
	"net/http"
	"time"

	"github.com/tracesift/tracesift/internal/store"
)

// Defaults and bounds of GET /api/v1/logs.
const (
	defaultLogsRange = time.Hour
	defaultLogsLimit = 100
	maxLogsLimit     = 1000
	maxQueryLen      = 1024
)

// getLogs serves GET /api/v1/logs?q=&service=&severity=&traceId=&attr.KEY=VALUE
// &start=&end=&limit=: log lines whose body has every word of q (whole
// words, any case) and whose attributes or resource (a Loki stream's labels)
// have each KEY=VALUE, newest first, each with its traceId and whether that
// trace is stored. Bounded by time: the last hour unless start/end say
// otherwise.
func (a *api) getLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.LogsFilter{Service: q.Get("service"), Severity: q.Get("severity"), TraceID: q.Get("traceId")}
	text := q.Get("q")
	switch {
	case len(text) > maxQueryLen:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("`q` is at most %d bytes", maxQueryLen))
		return
	case len(f.Service) > maxParamLen || len(f.Severity) > maxParamLen:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("`service` and `severity` are at most %d bytes", maxParamLen))
		return
	case f.TraceID != "" && !store.ValidTraceID(f.TraceID):
		writeError(w, http.StatusBadRequest, "`traceId`: want 32 lowercase hex characters, not all zero")
		return
	}
	if f.Words = store.SearchWords(text); len(f.Words) > store.MaxSearchWords {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("`q` has %d words; at most %d", len(f.Words), store.MaxSearchWords))
		return
	}
	var msg string
	if f.Attributes, msg = attributeFilters(q); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	if f.Start, f.End, f.Limit, msg = a.window(q, time.Now(), defaultLogsRange, defaultLogsLimit, maxLogsLimit); msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	logs, err := a.reader.SearchLogs(r.Context(), f)
	a.answer(w, r, "searching logs", struct {
		Start int64      `json:"start,string"`
		End   int64      `json:"end,string"`
		Logs  []LogMatch `json:"logs"`
	}{f.Start, f.End, logMatches(logs)}, err)
}

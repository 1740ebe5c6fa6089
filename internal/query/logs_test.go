package query

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/store"
)

func TestGetLogs(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	get := func(path string) *httptest.ResponseRecorder { return getJSON(t, h, path) }
	rec := get("/api/v1/logs?q=Card%20DECLINED%2C%20again!&service=payments&severity=error&limit=20")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"kept":true`)
	assert.Contains(t, rec.Body.String(), `"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"`)
	assert.Equal(t, []string{"card", "declined", "again"}, lastLogs.Words)
	assert.Equal(t, "payments", lastLogs.Service)
	assert.Equal(t, "error", lastLogs.Severity)
	assert.Equal(t, 20, lastLogs.Limit)
	assert.Equal(t, time.Hour.Nanoseconds(), lastLogs.End-lastLogs.Start, "the last hour by default")

	rec = get("/api/v1/logs?traceId=4bf92f3577b34da6a3ce929d0e0e4736&start=2026-11-30T10:00:00Z&end=2026-11-30T11:00:00Z")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, store.LogsFilter{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Limit: 100,
		Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixNano(),
		End:   time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC).UnixNano()}, lastLogs)

	rec = get("/api/v1/logs?attr.thread.name=main&attr.env=prod&attr.env=eu")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, []store.AttributeFilter{{Key: "env", Value: "eu"}, {Key: "env", Value: "prod"}, {Key: "thread.name", Value: "main"}},
		lastLogs.Attributes, "every attr.KEY=VALUE, in a stable order")

	for path, want := range map[string]string{
		"/api/v1/logs?attr.=x": "`attr.KEY`",
		"/api/v1/logs?attr.a=1&attr.b=2&attr.c=3&attr.d=4&attr.e=5&attr.f=6&attr.g=7&attr.h=8&attr.i=9": "at most",
		"/api/v1/logs?traceId=XYZ":                         "`traceId`",
		"/api/v1/logs?limit=0":                             "`limit`",
		"/api/v1/logs?start=soon":                          "`start`",
		"/api/v1/logs?start=2000&end=1000":                 "`start` is after `end`",
		"/api/v1/logs?q=" + strings.Repeat("ab+", 9):       "at most 8",
		"/api/v1/logs?q=" + strings.Repeat("x", 2000):      "`q` is at most",
		"/api/v1/logs?service=" + strings.Repeat("s", 300): "at most",
	} {
		rec := get(path)
		assert.Equal(t, http.StatusBadRequest, rec.Code, path)
		assert.Contains(t, rec.Body.String(), want, path)
	}
	assert.Equal(t, http.StatusInternalServerError, get("/api/v1/logs?service=fail").Code)
}

package query

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/store"
)

func TestSearchTracesAPI(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	get := func(path string) *httptest.ResponseRecorder { return getJSON(t, h, path) }
	rec := get("/api/v1/traces?service=shop&operation=GET%20/cart&minDuration=1.5s&maxDuration=2s&status=error" +
		"&attr.http.route=/cart&attr.db.system=postgresql&start=2026-11-30T10:00:00Z&end=1796036400000000000&limit=5&offset=10")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"traces":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","rootService":"shop"`)
	assert.Contains(t, rec.Body.String(), `"startTimeUnixNano":"1796010663450975897"`)
	assert.Equal(t, store.TracesFilter{Service: "shop", Operation: "GET /cart", MinDuration: 1500 * time.Millisecond,
		MaxDuration: 2 * time.Second, ErrorsOnly: true, Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixNano(),
		Attributes: []store.AttributeFilter{{Key: "db.system", Value: "postgresql"}, {Key: "http.route", Value: "/cart"}},
		End:        1796036400000000000, Limit: 5, Offset: 10}, lastTraces)

	rec = get("/api/v1/traces")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, time.Hour.Nanoseconds(), lastTraces.End-lastTraces.Start, "the last hour by default")
	assert.Equal(t, 20, lastTraces.Limit)

	for path, want := range map[string]string{
		"/api/v1/traces?minDuration=fast":               "`minDuration`",
		"/api/v1/traces?maxDuration=-1s":                "`maxDuration`",
		"/api/v1/traces?minDuration=2s&maxDuration=1s":  "above `maxDuration`",
		"/api/v1/traces?status=ok":                      "`status`",
		"/api/v1/traces?limit=100000":                   "`limit`",
		"/api/v1/traces?start=2000&end=1000":            "`start` is after `end`",
		"/api/v1/services/x/operations?start=yesterday": "`start`",
	} {
		rec := get(path)
		assert.Equal(t, http.StatusBadRequest, rec.Code, path)
		assert.Contains(t, rec.Body.String(), want, path)
	}
	assert.Equal(t, http.StatusInternalServerError, get("/api/v1/traces?service=fail").Code)

	rec = get("/api/v1/services")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"services":["shop","shop-db"]}`, rec.Body.String())
	rec = get("/api/v1/services/shop%2Fweb/operations")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"operations":["GET /cart shop/web"]}`, rec.Body.String())
	assert.Equal(t, http.StatusInternalServerError, get("/api/v1/services/fail/operations").Code)
}

package embedded

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/store"
)

// SQL injection through the query API: every parameter of every GET
// endpoint, given values that would change a query if they reached its text,
// against the real handler, reader and chDB. The answer is a 400, or a 200
// with no result (a filter value matches nothing) or with stored results (a
// window or a page); never a 500, which is what an error from ClickHouse
// becomes. The tables are intact afterwards.

// maxFilterLen is the API's bound on a filter value (service, operation,
// kind, attribute key and value, …).
const maxFilterLen = 256

func injectionPayloads() []string {
	return []string{
		`' OR 1=1 --`,
		`' OR '1'='1`,
		`\'`,
		`\`,
		`'; DROP TABLE spans; --`,
		`x') UNION ALL SELECT name FROM system.tables --`,
		`'] = '' OR 1=1 OR attributes['`,
		`{x:String}`,
		`{service:String}`,
		`{start_ns:Int64}`,
		`${db}`,
		`${attrs}`,
		`${words}`,
		`${conditions}`,
		"\x00",
		"%00",
		"a\x00' OR 1=1 --",
		"`spans`",
		`") OR 1=1 --`,
		"/* */ OR 1=1",
		"1; SELECT 1",
		"\r\n-- x\n",
		"%27%20OR%201%3D1",
		"ünïcødé ✓ 🔥 \u202e",
		"\xff\xfe\xfd",
		"4bf92f3577b34da6a3ce929d0e0e473'",
		"4BF92F3577B34DA6A3CE929D0E0E4736",
		"0123456789abcdef0123456789abcdef",
		"-1",
		"9223372036854775807",
		"-9223372036854775808",
		"99999999999999999999",
		"0x1F",
		"1e9",
		"NaN",
		"2562048h",
		"0001-01-01T00:00:00Z",
		"2262-04-11T23:47:16.854775808Z",
		strings.Repeat("'", maxFilterLen),
		strings.Repeat(`\`, maxFilterLen),
		strings.Repeat("a", maxFilterLen+1),
		strings.Repeat("' OR 1=1 -- ", 10000),
	}
}

// paramKind says which answers a parameter may give to a payload.
type paramKind int

const (
	// kindFilter: a value to match (service, kind, …): 400, or 200 and nothing.
	kindFilter paramKind = iota
	// kindParsed: a number, duration, time or enum: 400, or 200 and stored
	// results.
	kindParsed
	// kindWords: the log search's q: 400, or 200 and nothing when the payload
	// has search words (the fixture's log lines have none of them), all the
	// lines when it has none.
	kindWords
	// kindTraceID: the path of GET /api/v1/traces/{traceId}: 400, or 404.
	kindTraceID
)

// apiEndpoint is a GET endpoint of the query API.
type apiEndpoint struct {
	path  string // "{}" stands for its path parameter
	field string // the list its answer holds
	key   string // the field that names an item of the list; "" for a list of names
	// params hold the whole fixture: the results of a 200 are some of
	// these.
	params url.Values
	// tried are its parameters with their kinds: "{}" is the path
	// parameter, "attr.*" an attribute filter's key.
	tried map[string]paramKind
}

func apiEndpoints() []apiEndpoint {
	// The longest window the API takes, around the fixture.
	everything := func(kv ...string) url.Values {
		v := url.Values{"start": {fixtureNs(-15 * 24 * time.Hour)}, "end": {fixtureNs(16 * 24 * time.Hour)}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	return []apiEndpoint{
		{path: "/api/v1/traces/{}", tried: map[string]paramKind{"{}": kindTraceID}},
		{path: "/api/v1/traces", field: "traces", key: "traceId", params: everything("limit", "1000"),
			tried: map[string]paramKind{"service": kindFilter, "operation": kindFilter, "attr.*": kindFilter, "attr.db.system": kindFilter,
				"minDuration": kindParsed, "maxDuration": kindParsed, "status": kindParsed, "start": kindParsed, "end": kindParsed,
				"limit": kindParsed, "offset": kindParsed}},
		{path: "/api/v1/services", field: "services", params: everything(),
			tried: map[string]paramKind{"start": kindParsed, "end": kindParsed, "limit": kindParsed}},
		{path: "/api/v1/services/{}/operations", field: "operations", params: everything(),
			tried: map[string]paramKind{"{}": kindFilter, "start": kindParsed, "end": kindParsed}},
		{path: "/api/v1/findings", field: "findings", key: "subject", params: everything(),
			tried: map[string]paramKind{"kind": kindFilter, "service": kindFilter, "start": kindParsed, "end": kindParsed, "limit": kindParsed}},
		{path: "/api/v1/logs", field: "logs", key: "body", params: everything("limit", "1000"),
			tried: map[string]paramKind{"q": kindWords, "service": kindFilter, "severity": kindFilter, "traceId": kindParsed,
				"attr.*": kindFilter, "attr.thread.name": kindFilter, "start": kindParsed, "end": kindParsed, "limit": kindParsed}},
	}
}

// basePath is the endpoint's path for the fixture's main service.
func (e apiEndpoint) basePath() string { return strings.Replace(e.path, "{}", "shop-web", 1) }

// request is the path and parameters that put payload into param.
func (e apiEndpoint) request(param, payload string) (string, url.Values) {
	params := url.Values{}
	for k, v := range e.params {
		params[k] = slices.Clone(v)
	}
	path := e.basePath()
	switch param {
	case "{}":
		path = strings.Replace(e.path, "{}", url.PathEscape(payload), 1)
	case "attr.*":
		params.Set("attr."+payload, "x")
	default:
		params.Set(param, payload)
	}
	return path, params
}

// results names the items of a 200's list.
func (e apiEndpoint) results(t *testing.T, body []byte) []string {
	t.Helper()
	var items []json.RawMessage
	decodeField(t, body, e.field, &items)
	out := make([]string, len(items))
	for i, item := range items {
		if e.key == "" {
			require.NoError(t, json.Unmarshal(item, &out[i]))
			continue
		}
		var obj map[string]any
		require.NoError(t, json.Unmarshal(item, &obj))
		out[i] = fmt.Sprint(obj[e.key])
	}
	return out
}

// tableCounts is the tables and views of db with their row counts (0 for
// a view).
func tableCounts(t *testing.T, db string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, row := range queryRows(t, "SELECT name, engine FROM system.tables WHERE database = {db:String}", store.Params{"db": db}) {
		name := fmt.Sprint(row["name"])
		out[name] = 0
		// A background merge may collapse the rows of an
		// AggregatingMergeTree at any time: count them as merged.
		final := ""
		if strings.HasSuffix(fmt.Sprint(row["engine"]), "MergeTree") && row["engine"] != "MergeTree" {
			final = " FINAL"
		}
		if row["engine"] != "MaterializedView" {
			n, err := strconv.ParseUint(fmt.Sprint(queryRows(t, "SELECT count() AS n FROM "+db+"."+name+final, nil)[0]["n"]), 10, 64)
			require.NoError(t, err)
			out[name] = n
		}
	}
	return out
}

// quoteShort is a payload as a test message shows it.
func quoteShort(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q… (%d bytes)", s[:40], len(s))
	}
	return fmt.Sprintf("%q", s)
}

func TestInjectionInEveryParameter(t *testing.T) {
	const db = "ts_api_injection"
	h := writeFixture(t, db)
	databases := func() []map[string]any { return queryRows(t, "SELECT name FROM system.databases ORDER BY name", nil) }
	databasesBefore, before := databases(), tableCounts(t, db)
	require.NotZero(t, before["spans"])
	require.NotZero(t, before["logs"])
	require.NotZero(t, before["trace_facts"])

	for _, e := range apiEndpoints() {
		var stored []string
		if e.field != "" {
			code, body := apiGet(t, h, e.basePath(), e.params)
			require.Equal(t, http.StatusOK, code, "%s %v: %s", e.basePath(), e.params, body)
			stored = e.results(t, body)
			require.NotEmpty(t, stored, "%s: the fixture has results for it", e.path)
		}
		for _, param := range slices.Sorted(maps.Keys(e.tried)) {
			kind := e.tried[param]
			t.Run(e.path+" "+param, func(t *testing.T) {
				for _, payload := range injectionPayloads() {
					path, params := e.request(param, payload)
					code, body := apiGet(t, h, path, params)
					what := fmt.Sprintf("%s=%s: %d %.300s", param, quoteShort(payload), code, body)
					switch {
					case code == http.StatusBadRequest:
					case kind == kindTraceID:
						assert.Equal(t, http.StatusNotFound, code, what)
					case code != http.StatusOK:
						t.Errorf("want 400 or 200: %s", what)
					case kind == kindFilter:
						assert.Empty(t, e.results(t, body), what)
					case kind == kindParsed:
						assert.Subset(t, stored, e.results(t, body), what)
					case kind == kindWords && len(store.SearchWords(payload)) == 0:
						assert.Equal(t, stored, e.results(t, body), what)
					case kind == kindWords:
						assert.Empty(t, e.results(t, body), what)
					}
				}
			})
		}
	}

	assert.Equal(t, before, tableCounts(t, db), "every table and view still there, with the same rows")
	assert.Equal(t, databasesBefore, databases(), "every database still there")
	code, body := apiGet(t, h, "/api/v1/traces", url.Values{"start": {fixtureNs(-3 * time.Hour)}, "end": {fixtureNs(time.Hour)}})
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, fixtureIDs(0x37, 0x35, 0x34, 0x3c, 0x3b, 0x32, 0x31, 0x30),
		apiEndpoint{field: "traces", key: "traceId"}.results(t, body), "the search answers as before")
}

// A time beyond what Unix nanoseconds hold (after 2262-04-11, before
// 1677-09-21) is out of range, not another time: a window that starts in the
// year 9999 holds nothing.
func TestOutOfRangeTimesAreNotWrapped(t *testing.T) {
	h := writeFixture(t, "ts_api_time_range")
	for _, e := range apiEndpoints() {
		if e.field == "" {
			continue
		}
		params := url.Values{"start": {"9999-12-31T23:59:59Z"}, "end": {"9223372036854775807"}}
		code, body := apiGet(t, h, e.basePath(), params)
		if code != http.StatusBadRequest {
			require.Equal(t, http.StatusOK, code, "%s: %s", e.basePath(), body)
			assert.Empty(t, e.results(t, body), "%s: a window from the year 9999", e.basePath())
		}
		// The last window there is: times near it do not wrap around.
		last := url.Values{"start": {strconv.FormatInt(math.MaxInt64-int64(30*24*time.Hour), 10)},
			"end": {"9223372036854775807"}, "attr.db.system": {"postgresql"}}
		code, body = apiGet(t, h, e.basePath(), last)
		require.Equal(t, http.StatusOK, code, "%s: %s", e.basePath(), body)
		assert.Empty(t, e.results(t, body), "%s: a window in 2262", e.basePath())
		code, body = apiGet(t, h, e.basePath(), url.Values{"end": {"3000-01-01T00:00:00Z"}})
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", e.basePath(), body)
		assert.Contains(t, string(body), "2262-04-11", "%s: the answer names the range", e.basePath())
	}
}

package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
)

// Migrations from the previous versions: a database made by the schema as
// it was released, holding rows written the way that release wrote them,
// brought up to date by ApplySchema as a collector does at start.
//
// testdata/released_schema/ holds the schema files as they were released,
// frozen: version N of the schema is its first N files. They are copies, not
// the files of internal/store/schema, so that a change made to a released
// file (a column added to its CREATE TABLE, which a database created before
// would never get) shows up here as a difference between a migrated
// database and a new one. A new schema file, once released, is copied there.

// releasedSchema returns the released schema files, in order.
func releasedSchema(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "released_schema", "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	slices.Sort(files)
	return files
}

// queryRows runs sql and returns its rows, numbers as json.Number.
func queryRows(t *testing.T, sql string, params store.Params) []map[string]any {
	t.Helper()
	var rows []map[string]any
	require.NoError(t, conn.Query(context.Background(), sql, params, func(b []byte) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var row map[string]any
		err := dec.Decode(&row)
		rows = append(rows, row)
		return err
	}), sql)
	return rows
}

// schemaOf describes what the schema made of db: its tables and views with
// their engines and keys, their columns with types, defaults and codecs,
// and their indexes; db's name is replaced by ${db}.
func schemaOf(t *testing.T, db string) []string {
	t.Helper()
	var out []string
	p := store.Params{"db": db}
	for _, q := range []string{
		"SELECT name, engine, engine_full, sorting_key, partition_key, primary_key, as_select FROM system.tables WHERE database = {db:String}",
		"SELECT table, name, type, default_kind, default_expression, compression_codec FROM system.columns WHERE database = {db:String}",
		"SELECT table, name, type_full, expr, granularity FROM system.data_skipping_indices WHERE database = {db:String}",
	} {
		for _, row := range queryRows(t, q, p) {
			b, err := json.Marshal(row) // keys sorted: one line per row, comparable
			require.NoError(t, err)
			out = append(out, strings.ReplaceAll(string(b), db+".", "${db}."))
		}
	}
	slices.Sort(out)
	return out
}

// sameSchema checks that a migrated database's schema (got) is a new
// one's (want), naming what differs.
func sameSchema(t *testing.T, want, got []string) {
	t.Helper()
	missing := slices.DeleteFunc(slices.Clone(want), func(s string) bool { return slices.Contains(got, s) })
	extra := slices.DeleteFunc(slices.Clone(got), func(s string) bool { return slices.Contains(want, s) })
	assert.Empty(t, missing, "in a new database, not in the migrated one: a released schema file was changed "+
		"in place (add a new file instead), or a migration is missing")
	assert.Empty(t, extra, "in the migrated database, not in a new one")
}

// columnsOf lists the columns of db's tables as "table.column".
func columnsOf(t *testing.T, db string) []string {
	t.Helper()
	var out []string
	for _, row := range queryRows(t, "SELECT table, name FROM system.columns WHERE database = {db:String}", store.Params{"db": db}) {
		out = append(out, fmt.Sprint(row["table"], ".", row["name"]))
	}
	return out
}

// migrationBase is when the old release wrote its rows.
var migrationBase = time.Date(2026, 11, 30, 16, 0, 0, 123456789, time.UTC)

// oldRows are rows as the released versions wrote them (JSONEachRow, times
// as "seconds.nanoseconds" text), by table; each is written with the
// columns its table has in the version under test.
func oldRows() map[string][]map[string]any {
	at := func(d time.Duration) string {
		ns := migrationBase.Add(d).UnixNano()
		return fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9)
	}
	trace := traceID(0x61).String()
	return map[string][]map[string]any{
		"spans": {
			{"timestamp": at(0), "trace_id": trace, "span_id": spanID(1).String(), "parent_span_id": "", "trace_state": "",
				"name": "POST /checkout", "kind": "server", "service": "checkout", "host": "web-1", "duration_ns": 900_000_000,
				"status_code": "ERROR", "status_message": "card declined", "attributes": map[string]string{"http.route": "/checkout"},
				"resource": map[string]string{"service.name": "checkout"}, "scope_name": "otel", "scope_version": "1.0",
				"events": `[{"timeUnixNano":"0","name":"exception","attributes":{}}]`, "links": "[]"},
			{"timestamp": at(100 * time.Millisecond), "trace_id": trace, "span_id": spanID(2).String(),
				"parent_span_id": spanID(1).String(), "trace_state": "", "name": "charge", "kind": "client", "service": "payments",
				"host": "pay-1", "duration_ns": 700_000_000, "status_code": "UNSET", "status_message": "",
				"attributes": map[string]string{}, "resource": map[string]string{}, "scope_name": "", "scope_version": "",
				"events": "[]", "links": "[]"},
		},
		"logs": {
			{"timestamp": at(200 * time.Millisecond), "observed_timestamp": at(300 * time.Millisecond), "trace_id": trace,
				"span_id": spanID(2).String(), "severity_text": "ERROR", "severity_number": 17, "service": "payments",
				"host": "pay-1", "body": "acquirer refused the card", "attributes": map[string]string{},
				"resource": map[string]string{}, "scope_name": ""},
		},
		"findings": {
			{"timestamp": at(0), "trace_id": trace, "kind": "retry_fanout", "service": "checkout",
				"subject": "checkout → payments charge", "span_ids": []string{spanID(2).String()}, "value": 3.0,
				"summary": "3 attempts"},
		},
		"trace_clock": {
			{"timestamp": at(0), "trace_id": trace, "host": "pay-1", "offset_ns": -5_000_000, "source": "estimate"},
		},
	}
}

// writeOldRows inserts oldRows into the tables db has, keeping of each row
// the columns its table has.
func writeOldRows(t *testing.T, db string) {
	t.Helper()
	cols := columnsOf(t, db)
	for table, rows := range oldRows() {
		if !slices.ContainsFunc(cols, func(c string) bool { return strings.HasPrefix(c, table+".") }) {
			continue // not in this version
		}
		var buf bytes.Buffer
		for _, row := range rows {
			old := map[string]any{}
			for k, v := range row {
				if slices.Contains(cols, table+"."+k) {
					old[k] = v
				}
			}
			require.NoError(t, json.NewEncoder(&buf).Encode(old))
		}
		require.NoError(t, conn.Insert(context.Background(), db+"."+table, store.FormatJSONEachRow, buf.Bytes()), table)
	}
	// From schema 008 on, the writer sums up each trace into trace_index
	// (until 010) and trace_summaries itself; releases before had views do
	// it.
	views := queryRows(t, "SELECT name FROM system.tables WHERE database = {db:String} AND name = 'trace_index_mv'",
		store.Params{"db": db})
	if len(views) == 0 {
		var stmts []string
		if slices.ContainsFunc(cols, func(c string) bool { return strings.HasPrefix(c, "trace_index.") }) {
			stmts = append(stmts, `INSERT INTO `+db+`.trace_index SELECT trace_id, min(timestamp), max(addNanoseconds(timestamp, duration_ns)),
				maxIf(toString(service), parent_span_id = ''), maxIf(toString(name), parent_span_id = ''), count(),
				countIf(status_code = 'ERROR'), groupUniqArray(toString(service)) FROM `+db+`.spans GROUP BY trace_id`)
		}
		for _, stmt := range append(stmts,
			`INSERT INTO `+db+`.trace_summaries SELECT min(timestamp), trace_id,
				toUInt64(toUnixTimestamp64Nano(max(addNanoseconds(timestamp, duration_ns))) - toUnixTimestamp64Nano(min(timestamp))),
				maxIf(toString(service), parent_span_id = ''), maxIf(toString(name), parent_span_id = ''), count(),
				countIf(status_code = 'ERROR'), groupUniqArray(toString(service)) FROM `+db+`.spans GROUP BY trace_id`,
		) {
			require.NoError(t, conn.Exec(context.Background(), stmt, nil))
		}
	}
}

func TestMigrationsFromReleasedVersions(t *testing.T) {
	ctx := context.Background()
	const freshDB = "ts_migrate_fresh"
	freshDatabase(t, freshDB)
	require.NoError(t, store.ApplySchema(ctx, conn, freshDB))
	want := schemaOf(t, freshDB)

	files := releasedSchema(t)
	for version := 1; version <= len(files); version++ {
		t.Run(fmt.Sprintf("from version %d (%s)", version, filepath.Base(files[version-1])), func(t *testing.T) {
			db := fmt.Sprintf("ts_migrate_v%d", version)
			freshDatabase(t, db)
			for _, f := range files[:version] {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				// chDB runs a file's statements in one call, as the
				// release did one by one.
				require.NoError(t, conn.Exec(ctx, strings.ReplaceAll(string(b), "${db}", db), nil), f)
			}
			oldColumns := columnsOf(t, db)
			writeOldRows(t, db)
			oldCounts := tableCounts(t, db)

			require.NoError(t, store.ApplySchema(ctx, conn, db))
			sameSchema(t, want, schemaOf(t, db))
			// Released stores have no schema_migrations: every file is
			// applied, then recorded.
			assert.Equal(t, buildSchema(t), recordedVersions(t, db))
			checkNewColumnDefaults(t, db, oldColumns)
			checkOldRowsRead(t, db, oldColumns)
			traces := queryRows(t, "SELECT uniqExact(trace_id) AS n FROM "+db+".spans", nil)
			summaries := queryRows(t, "SELECT count() AS n FROM "+db+".trace_summaries", nil)
			assert.Equal(t, traces[0]["n"], summaries[0]["n"], "one summary per trace stored before")

			require.NoError(t, store.ApplySchema(ctx, conn, db), "a second start")
			sameSchema(t, want, schemaOf(t, db))
			assert.Equal(t, buildSchema(t), recordedVersions(t, db), "nothing recorded twice")
			require.NoError(t, store.CheckSchema(ctx, conn, db))
			counts := tableCounts(t, db)
			for table, n := range oldCounts {
				if table == "trace_index" {
					continue // dropped by 010: its traces are in trace_summaries (checked above)
				}
				assert.Equal(t, n, counts[table], "%s: rows neither lost nor doubled", table)
			}
			checkNewRowsWritten(t, db)
		})
	}
}

// checkNewColumnDefaults checks that every column the migration added to a
// table of the old release holds its default in the rows written before.
// Tables the migration created are filled from the old ones (trace_summaries
// from trace_index, which 010 drops: one row per stored trace).
func checkNewColumnDefaults(t *testing.T, db string, oldColumns []string) {
	t.Helper()
	rows := queryRows(t, "SELECT table, name, type, default_kind, default_expression FROM system.columns "+
		"WHERE database = {db:String} AND table IN (SELECT name FROM system.tables WHERE database = {db:String} "+
		"AND engine NOT LIKE '%View')", store.Params{"db": db})
	for _, c := range rows {
		table, name := fmt.Sprint(c["table"]), fmt.Sprint(c["name"])
		if slices.Contains(oldColumns, table+"."+name) || c["default_kind"] == "ALIAS" {
			continue
		}
		newTable := !slices.ContainsFunc(oldColumns, func(col string) bool { return strings.HasPrefix(col, table+".") })
		if newTable {
			continue
		}
		def := fmt.Sprint(c["default_expression"])
		if def == "" {
			def = "defaultValueOfTypeName({type:String})"
		}
		n := queryRows(t, fmt.Sprintf("SELECT count() AS n FROM %s.%s WHERE NOT (`%s` = (%s))", db, table, name, def),
			store.Params{"type": fmt.Sprint(c["type"])})
		assert.Equal(t, json.Number("0"), n[0]["n"], "%s.%s: added by the migration, the old rows hold its default (%s)",
			table, name, def)
	}
}

// checkOldRowsRead reads the old release's rows through the Reader;
// oldColumns are the ones the release had.
func checkOldRowsRead(t *testing.T, db string, oldColumns []string) {
	t.Helper()
	ctx := context.Background()
	r := store.NewReader(conn, db, store.ReaderConfig{LogWindow: time.Minute})
	id := traceID(0x61).String()
	from, to := migrationBase.Add(-time.Minute).UnixNano(), migrationBase.Add(time.Minute).UnixNano()

	tr, err := r.GetTrace(ctx, id)
	require.NoError(t, err)
	require.Len(t, tr.Spans, 2)
	s := tr.Spans[0]
	assert.Equal(t, model.Span{TraceID: id, SpanID: spanID(1).String(), Name: "POST /checkout", Kind: model.KindServer,
		Service: "checkout", Host: "web-1", StartUnixNano: uint64(migrationBase.UnixNano()),
		EndUnixNano: uint64(migrationBase.UnixNano()) + 900_000_000,
		StatusCode:  model.StatusError, StatusMessage: "card declined", Attributes: map[string]string{"http.route": "/checkout"},
		Resource: map[string]string{"service.name": "checkout"}, ScopeName: "otel", ScopeVersion: "1.0",
		Events: []model.Event{{Name: "exception", Attributes: map[string]string{}}}, Links: []model.Link{}}, s)
	assert.Equal(t, spanID(1).String(), tr.Spans[1].ParentSpanID)
	require.Len(t, tr.Logs, 1)
	assert.Equal(t, "acquirer refused the card", tr.Logs[0].Body)
	assert.Equal(t, uint64(migrationBase.Add(300*time.Millisecond).UnixNano()), tr.Logs[0].ObservedTimeUnixNano)
	subject := ""
	if slices.Contains(oldColumns, "findings.subject") {
		subject = "checkout → payments charge"
	}
	assert.Equal(t, []model.Finding{{TraceID: id, Kind: "retry_fanout", SpanIDs: []string{spanID(2).String()}, Service: "checkout",
		Subject: subject, Value: 3, Summary: "3 attempts"}}, tr.Findings, "a subject only where the release wrote one")
	offsets := map[string]int64{}
	if slices.Contains(oldColumns, "trace_clock.offset_ns") {
		offsets["pay-1"] = -5_000_000
	}
	assert.Equal(t, offsets, tr.ClockOffsets)

	found, err := r.SearchTraces(ctx, store.TracesFilter{Service: "payments", ErrorsOnly: true, Start: from, End: to, Limit: 10,
		Attributes: []store.AttributeFilter{{Key: "http.route", Value: "/checkout"}}})
	require.NoError(t, err)
	assert.Equal(t, []model.TraceSummary{{TraceID: id, RootService: "checkout", RootName: "POST /checkout",
		StartUnixNano: uint64(migrationBase.UnixNano()), DurationNano: 900_000_000, SpanCount: 2,
		ErrorCount: 1, Services: []string{"checkout", "payments"}}}, found, "the per-trace index the old view filled")
	logs, err := r.SearchLogs(ctx, store.LogsFilter{Words: []string{"acquirer"}, Start: from, End: to, Limit: 10})
	require.NoError(t, err)
	require.Len(t, logs, 1)
	assert.True(t, logs[0].Kept)
	sums, err := r.GetFindingSummaries(ctx, store.FindingsFilter{Start: from, End: to, Limit: 10})
	require.NoError(t, err)
	require.Len(t, sums, 1)
	assert.Equal(t, subject, sums[0].Subject)
	services, err := r.Services(ctx, from, to)
	require.NoError(t, err)
	assert.Equal(t, []string{"checkout", "payments"}, services)
}

// checkNewRowsWritten writes with today's Writer into the migrated database
// and reads it back: the columns it writes exist (JSONEachRow would drop an
// unknown one silently).
func checkNewRowsWritten(t *testing.T, db string) {
	t.Helper()
	ctx := context.Background()
	w := store.NewWriter(conn, db)
	// A new trace, at the fixture's times.
	_, err := w.WriteTraces(ctx, fixtureSpans(t, []fixtureTrace{{0x62, []fixtureSpan{
		{service: "checkout", name: "GET /cart", dur: time.Millisecond}}}}, false))
	require.NoError(t, err)
	id, at := traceID(0x62).String(), uint64(fixtureBase.UnixNano())
	require.NoError(t, w.WriteFindings(ctx, []model.Finding{{TraceID: id, TimeUnixNano: at,
		Kind: "slowest_hop", Service: "checkout", Subject: "checkout GET /cart", Value: 1, Summary: "1 ms"}}))
	require.NoError(t, w.WriteClockOffsets(ctx, []model.ClockOffset{{TraceID: id, TimeUnixNano: at,
		Host: "web-2", OffsetNanos: 7, Source: "estimate"}}))

	got, err := store.NewReader(conn, db, store.ReaderConfig{}).GetTrace(ctx, id)
	require.NoError(t, err)
	require.Len(t, got.Spans, 1)
	assert.Equal(t, map[string]string{"service.name": "checkout", "deployment.environment": "prod"}, got.Spans[0].Resource,
		"the resource, stored once in resources")
	require.Len(t, got.Findings, 1)
	assert.Equal(t, "checkout GET /cart", got.Findings[0].Subject)
	assert.Equal(t, map[string]int64{"web-2": 7}, got.ClockOffsets)
}

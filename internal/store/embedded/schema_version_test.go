package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/store"
	"github.com/tracesift/tracesift/internal/tenant"
)

// The schema versions a store records (schema_migrations), what a start does
// with them, and the query service's read-only check.

// buildSchema is the build's schema files as "version name", in order.
func buildSchema(t *testing.T) []string {
	t.Helper()
	migs, err := store.Migrations("x")
	require.NoError(t, err)
	var out []string
	for _, m := range migs {
		out = append(out, fmt.Sprint(m.Version, " ", m.Name))
	}
	return out
}

// recordedVersions lists db's schema_migrations rows as "version name".
func recordedVersions(t *testing.T, db string) []string {
	t.Helper()
	var out []string
	for _, row := range queryRows(t, "SELECT version, name FROM "+db+".schema_migrations ORDER BY version, applied_at", nil) {
		out = append(out, fmt.Sprint(row["version"], " ", row["name"]))
	}
	return out
}

// tablesOf lists db's tables and views.
func tablesOf(t *testing.T, db string) []string {
	t.Helper()
	var out []string
	for _, row := range queryRows(t, "SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name",
		store.Params{"db": db}) {
		out = append(out, fmt.Sprint(row["name"]))
	}
	return out
}

func TestSchemaVersionsRecorded(t *testing.T) {
	ctx := context.Background()
	const vdb = "ts_schema_recorded"
	freshDatabase(t, vdb)
	want := buildSchema(t)

	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	assert.Equal(t, want, recordedVersions(t, vdb), "a new store records every version, once")
	require.NoError(t, store.CheckSchema(ctx, conn, vdb))

	require.NoError(t, store.ApplySchema(ctx, conn, vdb), "a second start")
	assert.Equal(t, want, recordedVersions(t, vdb), "nothing new to record")

	// Two collectors that started together both recorded the last version.
	last := want[len(want)-1]
	version, name, _ := strings.Cut(last, " ")
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s.schema_migrations (version, name) VALUES (%s, '%s')",
		vdb, version, name), nil))
	require.NoError(t, store.CheckSchema(ctx, conn, vdb))
	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	assert.Equal(t, append(want, last), recordedVersions(t, vdb), "the twice-recorded version is the store's version")
}

// A store a version behind gets the last file alone: the files it recorded
// are not applied again.
func TestSchemaAppliesFilesAboveRecorded(t *testing.T) {
	ctx := context.Background()
	const vdb, fresh = "ts_schema_behind", "ts_schema_behind_fresh"
	freshDatabase(t, vdb)
	freshDatabase(t, fresh)
	want := buildSchema(t)
	require.NoError(t, store.ApplySchema(ctx, conn, fresh))

	// The store as the build before the last file left it, recorded at
	// len(want)-1, and short of an index of 010 (trace_summaries'
	// idx_trace_id), which applying 010 again would add.
	schemaUpTo(t, vdb, len(want)-1)
	require.NoError(t, conn.Exec(ctx, "ALTER TABLE "+vdb+".trace_summaries DROP INDEX idx_trace_id", nil))
	err := store.CheckSchema(ctx, conn, vdb)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("is at version %s, this tracesift-query needs version %d (",
		strings.Replace(want[len(want)-2], " ", " (", 1)+")", len(want)))
	assert.Contains(t, err.Error(), "start the collector of this version first")

	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	assert.Equal(t, want, recordedVersions(t, vdb))
	// The last file applied: the schema is a new store's, but for the
	// index of the recorded file, not applied again.
	withoutIndex := slices.DeleteFunc(schemaOf(t, fresh), func(s string) bool {
		return strings.Contains(s, `"idx_trace_id"`) && strings.Contains(s, `"trace_summaries"`)
	})
	require.Len(t, withoutIndex, len(schemaOf(t, fresh))-1)
	sameSchema(t, withoutIndex, schemaOf(t, vdb))
	require.NoError(t, store.CheckSchema(ctx, conn, vdb))
}

// schemaUpTo makes db (new) a store of this build's schema files up to
// version, recorded as a start of that build would have.
func schemaUpTo(t *testing.T, db string, version int) {
	t.Helper()
	ctx := context.Background()
	migs, err := store.Migrations(db)
	require.NoError(t, err)
	require.LessOrEqual(t, version, len(migs))
	require.NoError(t, conn.Exec(ctx, "CREATE DATABASE "+db, nil))
	require.NoError(t, conn.Exec(ctx, "CREATE TABLE "+db+".schema_migrations (version UInt32, name String, "+
		"applied_at DateTime64(3) DEFAULT now64(3)) ENGINE = MergeTree ORDER BY version", nil))
	var values []string
	for _, m := range migs[:version] {
		for _, s := range m.Statements {
			require.NoError(t, conn.Exec(ctx, s, nil), m.Name)
		}
		values = append(values, fmt.Sprintf("(%d, '%s')", m.Version, m.Name))
	}
	require.NoError(t, conn.Exec(ctx, "INSERT INTO "+db+".schema_migrations (version, name) VALUES "+strings.Join(values, ", "), nil))
}

// A store a later build upgraded is left as it is, by a collector and by
// the query service.
func TestSchemaNewerRefused(t *testing.T) {
	ctx := context.Background()
	const vdb = "ts_schema_newer"
	freshDatabase(t, vdb)
	latest := len(buildSchema(t))
	// The table as the later build made it, at the version after this
	// build's, and nothing else: a start that went ahead would create the
	// schema's tables.
	require.NoError(t, conn.Exec(ctx, "CREATE DATABASE "+vdb, nil))
	require.NoError(t, conn.Exec(ctx, "CREATE TABLE "+vdb+".schema_migrations (version UInt32, name String, "+
		"applied_at DateTime64(3) DEFAULT now64(3)) ENGINE = MergeTree ORDER BY version", nil))
	require.NoError(t, conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s.schema_migrations (version, name) VALUES (%d, 'from_the_future')",
		vdb, latest+1), nil))
	tables, recorded := tablesOf(t, vdb), recordedVersions(t, vdb)
	require.Equal(t, []string{"schema_migrations"}, tables)

	want := fmt.Sprintf("the store's schema (database %s) is at version %d (from_the_future), newer than this build's %d (",
		vdb, latest+1, latest)
	err := store.ApplySchema(ctx, conn, vdb)
	require.Error(t, err)
	assert.Contains(t, err.Error(), want)
	assert.Contains(t, err.Error(), "run a tracesift of that version or later")
	err = store.CheckSchema(ctx, conn, vdb)
	require.Error(t, err)
	assert.Contains(t, err.Error(), want)

	assert.Equal(t, tables, tablesOf(t, vdb), "no table created")
	assert.Equal(t, recorded, recordedVersions(t, vdb), "nothing recorded")
}

// Stores written before schema_migrations have no table: the query service
// refuses them without creating it; a collector's start upgrades and records.
func TestCheckSchemaWithoutTable(t *testing.T) {
	ctx := context.Background()

	const absent = "ts_schema_absent"
	freshDatabase(t, absent)
	err := store.CheckSchema(ctx, conn, absent)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has no schema_migrations table")
	assert.Empty(t, queryRows(t, "SELECT name FROM system.databases WHERE name = {db:String}", store.Params{"db": absent}),
		"no database created")

	const vdb = "ts_schema_unrecorded"
	freshDatabase(t, vdb)
	files := releasedSchema(t)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, conn.Exec(ctx, strings.ReplaceAll(string(b), "${db}", vdb), nil), f)
	}
	tables := tablesOf(t, vdb)
	err = store.CheckSchema(ctx, conn, vdb)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("the store (database %s) has no schema_migrations table", vdb))
	assert.Contains(t, err.Error(), "start the collector of this version first, which upgrades it")
	assert.Equal(t, tables, tablesOf(t, vdb), "nothing created")

	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	assert.Equal(t, buildSchema(t), recordedVersions(t, vdb), "every file applied again (idempotent), and recorded")
	require.NoError(t, store.CheckSchema(ctx, conn, vdb))
}

// Spans written before schema 018 get its filter of attribute values from
// the mutation it starts: a search for a value no span has then skips every
// granule of theirs.
func TestAttributeFilterOfPartsWrittenBefore(t *testing.T) {
	ctx := context.Background()
	const vdb = "ts_schema_attr_filter"
	freshDatabase(t, vdb)
	schemaUpTo(t, vdb, 17)
	w := store.NewWriter(conn, vdb)
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range 20_000 { // more than one granule
		sp := ss.AppendEmpty()
		sp.SetTraceID(traceID(byte(i % 200)))
		sp.SetSpanID(spanID(byte(i % 250)))
		sp.SetName("op")
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(getTraceBase))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(getTraceBase.Add(time.Millisecond)))
		sp.Attributes().PutStr("app.order.id", fmt.Sprintf("order-%d", i))
	}
	_, err := w.WriteTraces(ctx, td)
	require.NoError(t, err)

	applyAndMutate(t, vdb)
	plan := explainIndexes(t, "SELECT count() FROM "+vdb+".spans WHERE attributes['app.order.id'] = 'none'", nil)
	i := slices.Index(plan, "Name: idx_attr_value_bloom")
	require.GreaterOrEqual(t, i, 0, "%v", plan)
	require.Greater(t, len(plan), i+3, "%v", plan)
	assert.Regexp(t, `^Granules: 0/[1-9]`, plan[i+3], "%v", plan)
}

// Lines written before schema 019 are copied into trace_logs when it is
// applied and lines written after by its view; schema 023 copies them all
// into trace_facts, and its view the lines written after it: each once, and
// a trace by id shows them all. The copy is not made again by a later
// start, nor by the file's statements run again once it is recorded.
func TestTraceLinesOfLinesWrittenBefore(t *testing.T) {
	ctx := context.Background()
	const vdb = "ts_schema_trace_logs"
	freshDatabase(t, vdb)
	schemaUpTo(t, vdb, 18)
	w := store.NewWriter(conn, vdb)
	_, err := w.WriteTraces(ctx, shopTrace(0x97, tenant.Default, getTraceBase, false))
	require.NoError(t, err)
	writeLines := func(from time.Duration, bodies ...string) {
		ld := plog.NewLogs()
		recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		for i, body := range bodies {
			lr := recs.AppendEmpty()
			lr.SetTimestamp(pcommon.NewTimestampFromTime(getTraceBase.Add(from + time.Duration(i)*time.Millisecond)))
			lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(getTraceBase.Add(time.Second)))
			lr.SetTraceID(traceID(0x97))
			lr.Body().SetStr(body)
		}
		recs.AppendEmpty().Body().SetStr("no trace")
		_, err := w.WriteLogs(ctx, ld)
		require.NoError(t, err)
	}
	writeLines(0, "before 019, first", "before 019, fourth")

	migs, err := store.Migrations(vdb)
	require.NoError(t, err)
	require.Equal(t, "019_trace_logs", migs[18].Name)
	require.Equal(t, "023_trace_lines_in_facts", migs[22].Name)
	for _, m := range migs[18:22] { // as ApplySchema would, up to 022
		for _, s := range m.Statements {
			require.NoError(t, conn.Exec(ctx, s, nil), m.Name)
		}
		require.NoError(t, conn.Exec(ctx, "INSERT INTO "+vdb+".schema_migrations (version, name) SELECT {v:UInt32}, {n:String}",
			store.Params{"v": uint64(m.Version), "n": m.Name}))
	}
	writeLines(time.Millisecond/2, "after 019, second")
	require.EqualValues(t, 3, count(t, "SELECT count() AS n FROM "+vdb+".trace_logs", nil))

	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	writeLines(3*time.Millisecond/4, "after 023, third")
	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	for _, s := range migs[22].Statements {
		require.NoError(t, conn.Exec(ctx, s, nil))
	}

	assert.EqualValues(t, 4, count(t, "SELECT count() AS n FROM "+vdb+".trace_facts WHERE fact = 'line'", nil), "each traced line once")
	assert.EqualValues(t, 0, count(t, "SELECT count() AS n FROM "+vdb+".trace_logs", nil), "emptied")
	tr, err := store.NewReader(conn, vdb, store.ReaderConfig{}).GetTrace(ctx, traceID(0x97).String())
	require.NoError(t, err)
	var got []string
	for _, l := range tr.Logs {
		got = append(got, l.Body)
		assert.Equal(t, getTraceBase.Add(time.Second).UnixNano(), int64(l.ObservedTimeUnixNano), l.Body)
		assert.Equal(t, traceID(0x97).String(), l.TraceID)
	}
	assert.Equal(t, []string{"before 019, first", "after 019, second", "after 023, third", "before 019, fourth"}, got)
}

// Findings and clock offsets written before schema 020 (into findings and
// trace_clock) are copied into trace_facts when it is applied; those that a
// collector of an earlier version writes there after come by its views, and
// the writer's own go to trace_facts alone: each is shown once by the trace
// by id and counted once across traces. Neither copy is made again.
func TestTraceFactsOfRowsWrittenBefore(t *testing.T) {
	ctx := context.Background()
	const vdb = "ts_schema_trace_facts"
	freshDatabase(t, vdb)
	schemaUpTo(t, vdb, 19)
	w := store.NewWriter(conn, vdb)
	_, err := w.WriteTraces(ctx, shopTrace(0x98, tenant.Default, getTraceBase, false))
	require.NoError(t, err)
	id, at := traceID(0x98).String(), getTraceBase.UnixNano()
	// As a collector of an earlier version writes them.
	earlier := func(kind, host string, offset int64) {
		require.NoError(t, conn.Exec(ctx, "INSERT INTO "+vdb+".findings (timestamp, trace_id, kind, service, subject, span_ids, value, summary) "+
			"VALUES (fromUnixTimestamp64Nano({at:Int64}), {id:String}, {kind:String}, 'shop', 'shop GET /cart', [], 2, {kind:String})",
			store.Params{"at": at, "id": id, "kind": kind}))
		require.NoError(t, conn.Exec(ctx, "INSERT INTO "+vdb+".trace_clock (timestamp, trace_id, host, offset_ns, source) "+
			"VALUES (fromUnixTimestamp64Nano({at:Int64}), {id:String}, {host:String}, {offset:Int64}, 'estimate')",
			store.Params{"at": at, "id": id, "host": host, "offset": offset}))
	}
	earlier("before 020", "shop-1", -3)

	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	earlier("by an earlier collector", "pay-1", 8)
	require.NoError(t, w.WriteFacts(ctx, []model.Finding{{TraceID: id, TimeUnixNano: uint64(at), Kind: "by this writer",
		Service: "shop", Subject: "shop GET /cart", Value: 2}},
		[]model.ClockOffset{{TraceID: id, TimeUnixNano: uint64(at), Host: "cart-1", OffsetNanos: 5, Source: "estimate"}}))
	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	migs, err := store.Migrations(vdb)
	require.NoError(t, err)
	require.Equal(t, "020_trace_facts", migs[19].Name)
	for _, s := range migs[19].Statements {
		require.NoError(t, conn.Exec(ctx, s, nil))
	}

	assert.EqualValues(t, 6, count(t, "SELECT count() AS n FROM "+vdb+".trace_facts", nil), "each finding and offset once")
	assert.EqualValues(t, 2, count(t, "SELECT count() AS n FROM "+vdb+".findings", nil), "the earlier collector's; the writer writes trace_facts alone")
	r := store.NewReader(conn, vdb, store.ReaderConfig{})
	tr, err := r.GetTrace(ctx, id)
	require.NoError(t, err)
	var kinds []string
	for _, f := range tr.Findings {
		kinds = append(kinds, f.Kind)
	}
	assert.ElementsMatch(t, []string{"before 020", "by an earlier collector", "by this writer"}, kinds)
	assert.Equal(t, map[string]int64{"shop-1": -3, "pay-1": 8, "cart-1": 5}, tr.ClockOffsets)
	sums, err := r.GetFindingSummaries(ctx, store.FindingsFilter{Start: at - int64(time.Hour), End: at + int64(time.Hour), Limit: 10})
	require.NoError(t, err)
	require.Len(t, sums, 3)
	for _, s := range sums {
		assert.EqualValues(t, 1, s.Count, s.Kind)
		assert.Equal(t, []string{id}, s.ExampleTraceIDs, s.Kind)
	}
}

// Lines and findings written before schema 021 get its filters of trace ids
// from the mutations it starts: a trace by id for a trace that a part's key
// range covers but that is not in it skips the part's granules, in both of
// the tables that its facts statement read then.
func TestTraceIDFiltersOfPartsWrittenBefore(t *testing.T) {
	ctx := context.Background()
	const vdb = "ts_schema_trace_id_filters"
	freshDatabase(t, vdb)
	schemaUpTo(t, vdb, 20)
	w := store.NewWriter(conn, vdb)
	// One part each, the trace read below sorting between its two.
	ld := plog.NewLogs()
	recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	var findings []model.Finding
	for _, b := range []byte{0x10, 0x30} {
		lr := recs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(getTraceBase))
		lr.SetTraceID(traceID(b))
		lr.Body().SetStr("a line")
		findings = append(findings, model.Finding{TraceID: traceID(b).String(), TimeUnixNano: uint64(getTraceBase.UnixNano()),
			Kind: "slowest_hop", Service: "shop", Subject: "shop GET /cart", Value: 2})
	}
	_, err := w.WriteLogs(ctx, ld)
	require.NoError(t, err)
	require.NoError(t, w.WriteFacts(ctx, findings, nil))

	applyAndMutate(t, vdb)
	plan := explainIndexes(t, store.Query("trace_facts", vdb),
		store.Params{"trace_id": traceID(0x20).String(), "tenant": tenant.Default, "max_logs": uint64(10)})
	var filtered []string
	for i, line := range plan {
		if line == "Name: idx_trace_id" && i+3 < len(plan) {
			filtered = append(filtered, plan[i+3])
		}
	}
	require.Len(t, filtered, 1, "the filter of trace_facts, where the lines are too since schema 023: %v", plan)
	assert.Regexp(t, `^Granules: 0/2$`, filtered[0], "%v", plan)
	rows := 0
	require.NoError(t, conn.Query(ctx, store.Query("trace_facts", vdb),
		store.Params{"trace_id": traceID(0x30).String(), "tenant": tenant.Default, "max_logs": uint64(10)},
		func([]byte) error { rows++; return nil }))
	assert.Equal(t, 2, rows, "a trace in the parts: its line and its finding")
}

// applyAndMutate brings db's schema up to the build's and waits for the
// mutations it started (filters materialized on parts written before).
func applyAndMutate(t *testing.T, db string) {
	t.Helper()
	require.NoError(t, store.ApplySchema(context.Background(), conn, db))
	require.Eventually(t, func() bool {
		return count(t, "SELECT count() AS n FROM system.mutations WHERE database = {db:String} AND NOT is_done",
			store.Params{"db": db}) == 0
	}, time.Minute, 10*time.Millisecond)
}

// explainIndexes is the engine's plan of query with the indexes it used, a
// line each, trimmed.
func explainIndexes(t *testing.T, query string, params store.Params) []string {
	t.Helper()
	var plan []string
	require.NoError(t, conn.Query(context.Background(), "EXPLAIN indexes = 1 "+query, params, func(b []byte) error {
		var row struct{ Explain string }
		err := json.Unmarshal(b, &row)
		plan = append(plan, strings.TrimSpace(row.Explain))
		return err
	}))
	return plan
}

// insertBlobParts inserts two parts of spans into db, each of 10 MiB of
// random attribute values: their merged part is over 16 MiB compressed
// whatever the codec, so its codec depends on its share of the table
// (engine.xml).
func insertBlobParts(t *testing.T, db string) {
	t.Helper()
	for range 2 {
		require.NoError(t, conn.Exec(context.Background(), "INSERT INTO "+db+".spans (timestamp, trace_id, span_id, name, attributes) "+
			"SELECT "+fixtureBaseSQL+", hex(randomString(16)), hex(randomString(8)), 'op', map('blob', randomString(1000)) "+
			"FROM numbers(10000)", nil))
	}
}

// From schema 022 the spans' larger columns take the engine's compression
// (engine.xml): LZ4 in the parts inserts write, ZSTD(6) in a part a
// merge makes of 16 MiB or more that holds half its table (here all of it).
// The server's copy of the file is this one.
func TestSpansCompressedByPartSize(t *testing.T) {
	ctx := context.Background()
	const vdb = "ts_schema_part_compression"
	freshDatabase(t, vdb)
	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	insertBlobParts(t, vdb)
	codecs := func() []string {
		var out []string
		for _, row := range queryRows(t, "SELECT default_compression_codec AS c FROM system.parts "+
			"WHERE database = {db:String} AND table = 'spans' AND active ORDER BY name", store.Params{"db": vdb}) {
			out = append(out, fmt.Sprint(row["c"]))
		}
		return out
	}
	assert.Equal(t, []string{"LZ4", "LZ4"}, codecs(), "as inserted")
	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+vdb+".spans FINAL", nil))
	assert.Equal(t, []string{"ZSTD(6)"}, codecs(), "merged")
	for _, row := range queryRows(t, "SELECT name, compression_codec FROM system.columns WHERE database = {db:String} "+
		"AND table = 'spans' AND name IN ('attributes', 'timestamp')", store.Params{"db": vdb}) {
		assert.Contains(t, fmt.Sprint(row["compression_codec"]), "Default", "%v", row)
	}

	// A merged part under 256 MiB that holds less than half its table stays
	// LZ4: its rows are merged again before they stay.
	const sdb = "ts_schema_part_compression_share"
	freshDatabase(t, sdb)
	require.NoError(t, store.ApplySchema(ctx, conn, sdb))
	require.NoError(t, conn.Exec(ctx, "INSERT INTO "+sdb+".spans (timestamp, trace_id, span_id, name, attributes) "+
		"SELECT "+fixtureBaseSQL+" - INTERVAL 2 DAY, hex(randomString(16)), hex(randomString(8)), 'op', map('blob', randomString(1000)) "+
		"FROM numbers(50000)", nil))
	insertBlobParts(t, sdb)
	rows := queryRows(t, "SELECT partition_id AS p FROM system.parts WHERE database = {db:String} AND table = 'spans' AND active "+
		"GROUP BY partition_id HAVING count() = 2", store.Params{"db": sdb})
	require.Len(t, rows, 1)
	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+sdb+".spans PARTITION ID '"+fmt.Sprint(rows[0]["p"])+"' FINAL", nil))
	merged := queryRows(t, "SELECT default_compression_codec AS c, bytes_on_disk AS b FROM system.parts "+
		"WHERE database = {db:String} AND table = 'spans' AND active AND level > 0", store.Params{"db": sdb})
	require.Len(t, merged, 1)
	size, err := strconv.ParseInt(fmt.Sprint(merged[0]["b"]), 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, size, int64(16<<20), "the merged part is large enough for the 16 MiB case")
	assert.Equal(t, "LZ4", fmt.Sprint(merged[0]["c"]), "a merged part of 20 MiB beside 50 MiB: %v", merged[0])

	server, err := os.ReadFile("../../../deploy/clickhouse/config.d/tracesift.xml")
	require.NoError(t, err)
	assert.Equal(t, string(engineConfig), string(server), "deploy/clickhouse/config.d has the embedded store's file")
}

// The engine's configuration puts merges below inserts and reads (applied
// with CAP_SYS_NICE only, so what is tested is that the engine read it).
func TestMergesAtLowerPriority(t *testing.T) {
	rows := queryRows(t, "SELECT value FROM system.server_settings WHERE name = 'os_threads_nice_value_merge_mutate'", nil)
	require.Len(t, rows, 1)
	assert.Equal(t, "10", fmt.Sprint(rows[0]["value"]))
}

// From schema 024 the columns of trace_facts that only a trace by id reads
// are compressed in blocks of a granule or so (8 KiB at least); those that
// findings across traces read keep the engine's 64 KiB.
func TestTraceFactsLookupBlocks(t *testing.T) {
	const vdb = "ts_schema_lookup_blocks"
	freshDatabase(t, vdb)
	require.NoError(t, store.ApplySchema(context.Background(), conn, vdb))
	rows := queryRows(t, "SELECT create_table_query AS q FROM system.tables WHERE database = {db:String} AND name = 'trace_facts'",
		store.Params{"db": vdb})
	require.Len(t, rows, 1)
	create := fmt.Sprint(rows[0]["q"])
	// A column's definition runs to the next backquoted name: types such as
	// Map(String, String) hold commas.
	small := regexp.MustCompile("`(\\w+)` [^`]*?SETTINGS \\(min_compress_block_size = 8192\\)")
	var got []string
	for _, m := range small.FindAllStringSubmatch(create, -1) {
		got = append(got, m[1])
	}
	assert.ElementsMatch(t, []string{"body", "span_id", "span_ids", "summary", "offset_ns"}, got, create)
}

// Lines, findings and clock offsets written before schema 025 hold their
// fields in columns; a trace by id reads them through the default of
// fields, the same before a merge stores it and after. Lines written after
// hold them in fields alone, the columns left empty. Findings and offsets
// that a collector of an earlier version inserts after, without fields, get
// theirs from the default.
func TestTraceFactsFieldsOfRowsWrittenBefore(t *testing.T) {
	ctx := context.Background()
	const vdb = "ts_schema_trace_facts_fields"
	freshDatabase(t, vdb)
	schemaUpTo(t, vdb, 24)
	w := store.NewWriter(conn, vdb)
	_, err := w.WriteTraces(ctx, shopTrace(0x99, tenant.Default, getTraceBase, false))
	require.NoError(t, err)
	id, at := traceID(0x99).String(), getTraceBase.UnixNano()
	var want []model.Log
	writeLine := func(body string, after time.Duration) {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "shop")
		rl.Resource().Attributes().PutStr("host.name", "shop-1")
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName("shop.cart")
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(getTraceBase.Add(after)))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(getTraceBase.Add(after + time.Second)))
		lr.SetTraceID(traceID(0x99))
		lr.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
		lr.SetSeverityText("WARN")
		lr.SetSeverityNumber(plog.SeverityNumberWarn)
		lr.Attributes().PutStr("cart.id", "c-"+body)
		lr.Body().SetStr(body)
		st, err := w.WriteLogs(ctx, ld)
		require.NoError(t, err)
		require.Equal(t, 1, st.Written)
		want = append(want, model.Log{TimeUnixNano: uint64(at + after.Nanoseconds()),
			ObservedTimeUnixNano: uint64(at + (after + time.Second).Nanoseconds()), SeverityText: "WARN",
			SeverityNumber: int(plog.SeverityNumberWarn), Body: body, TraceID: id, SpanID: "0102030405060708",
			Service: "shop", Host: "shop-1", Attributes: map[string]string{"cart.id": "c-" + body},
			Resource: map[string]string{"service.name": "shop", "host.name": "shop-1"}})
	}
	// As a collector of version 24 writes findings and clock offsets.
	earlier := func(kind, host string, offset int64) {
		require.NoError(t, conn.Exec(ctx, "INSERT INTO "+vdb+".trace_facts (tenant, trace_id, fact, timestamp, kind, service, subject, span_ids, value, summary) "+
			"VALUES ('default', {id:String}, 'finding', fromUnixTimestamp64Nano({at:Int64}), {kind:String}, 'shop', 'shop GET /cart', ['0102030405060708'], 2.5, 'took \"long\"')",
			store.Params{"at": at, "id": id, "kind": kind}))
		require.NoError(t, conn.Exec(ctx, "INSERT INTO "+vdb+".trace_facts (tenant, trace_id, fact, timestamp, host, offset_ns, source) "+
			"VALUES ('default', {id:String}, 'clock_offset', fromUnixTimestamp64Nano({at:Int64}), {host:String}, {offset:Int64}, 'estimate')",
			store.Params{"at": at, "id": id, "host": host, "offset": offset}))
	}
	writeLine("before 025", time.Millisecond)
	earlier("before 025", "shop-1", -3_000_000_000)

	require.NoError(t, store.ApplySchema(ctx, conn, vdb))
	writeLine("after 025", 2*time.Millisecond)
	earlier("by an earlier collector", "pay-1", 8)
	require.NoError(t, w.WriteFacts(ctx, []model.Finding{{TraceID: id, TimeUnixNano: uint64(at), Kind: "by this writer",
		Service: "shop", Subject: "shop GET /cart", SpanIDs: []string{"0102030405060708"}, Value: 2.5, Summary: `took "long"`}},
		[]model.ClockOffset{{TraceID: id, TimeUnixNano: uint64(at), Host: "cart-1", OffsetNanos: 5, Source: "estimate"}}))

	r := store.NewReader(conn, vdb, store.ReaderConfig{})
	read := func() *model.Trace {
		tr, err := r.GetTrace(ctx, id)
		require.NoError(t, err)
		return tr
	}
	tr := read()
	assert.Equal(t, want, tr.Logs)
	require.Len(t, tr.Findings, 3)
	for _, f := range tr.Findings {
		assert.Equal(t, model.Finding{TraceID: id, Kind: f.Kind, Service: "shop", Subject: "shop GET /cart",
			SpanIDs: []string{"0102030405060708"}, Value: 2.5, Summary: `took "long"`}, f)
	}
	assert.Equal(t, map[string]int64{"shop-1": -3_000_000_000, "pay-1": 8, "cart-1": 5}, tr.ClockOffsets)
	assert.EqualValues(t, 1, count(t, "SELECT count() AS n FROM "+vdb+".trace_facts WHERE fact = 'line' AND body != ''", nil),
		"the line written after has its fields alone")
	assert.EqualValues(t, 4, count(t, "SELECT count() AS n FROM "+vdb+".trace_facts WHERE fact != 'line' AND (summary != '' OR host != '')", nil),
		"the earlier collector's rows alone have theirs in columns")

	require.NoError(t, conn.Exec(ctx, "OPTIMIZE TABLE "+vdb+".trace_facts FINAL", nil))
	assert.EqualValues(t, 0, count(t, "SELECT count() AS n FROM system.parts p WHERE database = {db:String} AND table = 'trace_facts' AND active "+
		"AND NOT has((SELECT groupArray(name) FROM system.parts_columns WHERE database = {db:String} AND table = 'trace_facts' AND active AND column = 'fields' AND name = p.name), p.name)",
		store.Params{"db": vdb}), "merged: fields stored")
	assert.Equal(t, tr, read(), "the same after the merge")
}

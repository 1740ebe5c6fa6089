package store

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenderParams(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		params  Params
		want    string
		wantErr string
	}{
		{"string", "x = {a:String}", Params{"a": "abc"}, "x = 'abc'", ""},
		{"quote cannot end the literal", "x = {a:String}", Params{"a": `' OR 1=1 --`}, `x = '\' OR 1=1 --'`, ""},
		{"backslash escaped", "x = {a:String}", Params{"a": `\'`}, `x = '\\\''`, ""},
		{"nul escaped", "x = {a:String}", Params{"a": "a\x00b"}, `x = 'a\0b'`, ""},
		{"ints", "{a:Int64} {b:UInt64} {c:Int64}", Params{"a": int64(-5), "b": uint64(7), "c": 3}, "-5 7 3", ""},
		{"missing", "{a:String}", Params{}, "", `"a" has no value`},
		{"type mismatch", "{a:Int64}", Params{"a": "1; DROP"}, "", "string value for type Int64"},
		{"unsupported", "{a:String}", Params{"a": 1.5}, "", "unsupported value type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderParams(tt.query, tt.params)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSchemaStatements(t *testing.T) {
	stmts, err := SchemaStatements("tsdb")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(stmts), 6)
	assert.Equal(t, "CREATE DATABASE IF NOT EXISTS tsdb", stmts[0])
	for _, s := range stmts {
		assert.NotContains(t, s, "${db}")
		assert.NotContains(t, s, "--", "comments are dropped")
		assert.False(t, strings.HasSuffix(s, ";"))
		idempotent := strings.Contains(s, "IF NOT EXISTS") || strings.Contains(s, " MODIFY SETTING ") ||
			strings.Contains(s, " DROP INDEX IF EXISTS ") ||
			strings.Contains(s, " MATERIALIZE INDEX ") || // built again from the rows: the same index
			strings.Contains(s, " MODIFY COLUMN IF EXISTS ") || // to the type it has: nothing to do
			strings.Contains(s, " MODIFY QUERY\n") || // a view's query set to the one it has: nothing to do
			strings.HasPrefix(s, "DROP VIEW IF EXISTS ") || strings.HasPrefix(s, "DROP TABLE IF EXISTS ") ||
			strings.HasPrefix(s, "TRUNCATE TABLE IF EXISTS ") || // of a table no longer written
			(strings.HasPrefix(s, "INSERT INTO ") && strings.Contains(s, ") = 0")) // fills a new, still empty table
		assert.True(t, idempotent, "every statement must be idempotent: %s", firstLine(s))
		// Not even for a moment at start: another collector writing to the
		// same store would get a view's rows on top of its writer's. The RED
		// rollup and the copy of traced lines are filled by their views alone
		// (schema 014, 019, 023); trace_facts by views from the tables that only
		// collectors of an earlier version write (schema 020).
		if !strings.Contains(s, " TO tsdb.red_rollup AS") && !strings.Contains(s, " TO tsdb.trace_logs AS") &&
			!strings.Contains(s, " TO tsdb.trace_facts AS\nSELECT tenant, trace_id, 'line' AS fact, timestamp,") &&
			!strings.Contains(s, " TO tsdb.trace_facts AS\nSELECT tenant, trace_id, 'finding' AS fact, timestamp, kind, service, subject, span_ids, value, summary\nFROM tsdb.findings") &&
			!strings.Contains(s, " TO tsdb.trace_facts AS\nSELECT tenant, trace_id, 'clock_offset' AS fact, timestamp, host, offset_ns, source\nFROM tsdb.trace_clock") {
			assert.NotContains(t, s, "MATERIALIZED VIEW", "the writer fills the per-trace tables (schema 008)")
		}
	}
	_, err = SchemaStatements("bad-name; DROP")
	require.Error(t, err)
}

func TestQueriesSnapshot(t *testing.T) {
	for _, name := range []string{"trace_spans", "trace_facts"} {
		q := Query(name, "tsdb")
		assert.Contains(t, q, "tsdb.", name)
		assert.Contains(t, q, "{trace_id:String}", "%s reads one trace by a bound parameter", name)
		assert.NotContains(t, q, "${db}")
	}
	assert.Contains(t, Query("trace_window", "tsdb"), "intDiv({from_ns:Int64}, 1000000000)", "the skewed pairs are bounded by the trace's window")
	assert.Equal(t, 1, strings.Count(Query("trace_window", "tsdb"), "${resources}"), "one slot for the resources the cache lacks")
	search := Query("logs_search", "tsdb")
	assert.Equal(t, 1, strings.Count(search, "${conditions}"), "one slot for the word and attribute conditions")
	assert.Contains(t, search, "fromUnixTimestamp64Nano({start_ns:Int64})", "searches are bounded by time")
}

func TestNanosText(t *testing.T) {
	assert.Equal(t, "1700000000.000000001", nanosText(1700000000000000001))
	assert.Equal(t, "0.000000000", nanosText(0))
	assert.Equal(t, "1.123456789", nanosText(1123456789))
}

func TestValidTraceID(t *testing.T) {
	assert.True(t, ValidTraceID("4bf92f3577b34da6a3ce929d0e0e4736"))
	assert.False(t, ValidTraceID("4BF92F3577B34DA6A3CE929D0E0E4736"))
	assert.False(t, ValidTraceID("00000000000000000000000000000000"))
	assert.False(t, ValidTraceID("4bf92f3577b34da6"))
	assert.False(t, ValidTraceID("4bf92f3577b34da6a3ce929d0e0e473'"))
}

func TestSearchWords(t *testing.T) {
	assert.Equal(t, []string{"card", "declined", "again", "x9", "über", "fail", "traceid", "4bf92f35"},
		SearchWords("Card DECLINED, again! a x9 über-fail traceId=4bf92f35"))
	assert.Equal(t, []string{"or"}, SearchWords(" ,;' OR 1=1 -- "), "separators and one-character words dropped: SQL stays text")
}

func TestInsertStatementToken(t *testing.T) {
	rows := []byte(`{"trace_id":"a"}` + "\n")
	st := InsertStatement("db.spans", FormatJSONEachRow, rows)
	assert.Equal(t, st, InsertStatement("db.spans", FormatJSONEachRow, bytes.Clone(rows)), "the same rows, the same token")
	assert.True(t, strings.HasPrefix(st, "INSERT INTO db.spans SETTINGS deduplicate_blocks_in_dependent_materialized_views = 1, insert_deduplication_token = '"))
	assert.True(t, strings.HasSuffix(st, "' FORMAT JSONEachRow\n"+string(rows)))
	other := InsertStatement("db.spans", FormatJSONEachRow, []byte(`{"trace_id":"b"}`+"\n"))
	assert.NotEqual(t, st[:len(st)-len(rows)], other[:len(other)-len(rows)], "other rows, another token")

	// Binary rows start right after the line feed, whatever their first byte.
	native := []byte{0x0c, 0x20, 0x0a}
	assert.True(t, strings.HasSuffix(InsertStatement("db.logs", FormatNative, native), "' FORMAT Native\n\x0c \n"))

	// From a file: the same token for the same rows, the path quoted.
	file := InsertFromFileStatement("db.spans", "/tmp/it's", FormatJSONEachRow, rows)
	assert.True(t, strings.HasPrefix(file, `INSERT INTO db.spans FROM INFILE '/tmp/it\'s' SETTINGS `), file)
	assert.Equal(t, st[strings.Index(st, " SETTINGS"):len(st)-len(rows)], file[strings.Index(file, " SETTINGS"):])
}

func TestErrorsAreClassified(t *testing.T) {
	for msg, permanent := range map[string]bool{
		"Code: 27. DB::Exception: Cannot parse input":                                            true,
		"code: 62, message: Syntax error":                                                        true,
		"Code: 252. DB::Exception: Too many parts":                                               false,
		"Code: 252. DB::Exception: Too many partitions for single INSERT block (more than 100).": true,
		"Code: 241. DB::Exception: Memory limit (total) exceeded":                                false,
		"read tcp 10.0.0.1:5000->10.0.0.2:9000: i/o timeout":                                     false,
		"Code: 2700. DB::Exception: a code that only looks like one":                             false,
	} {
		assert.Equal(t, permanent, IsPermanent(errors.New(msg)), msg)
	}
	assert.False(t, IsPermanent(nil))

	for msg, limit := range map[string]bool{
		"Code: 159. DB::Exception: Timeout exceeded: elapsed 4.0 seconds, maximum: 4. (TIMEOUT_EXCEEDED)": true,
		"code: 241, message: Memory limit (for query) exceeded":                                           true,
		"Code: 62. DB::Exception: Syntax error":                                                           false,
		"context canceled":                                                                                false,
	} {
		assert.Equal(t, limit, IsQueryLimit(errors.New(msg)), msg)
	}
	assert.False(t, IsQueryLimit(nil))
}

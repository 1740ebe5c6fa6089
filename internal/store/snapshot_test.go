package store

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/tenant"
)

var updateSnapshots = flag.Bool("update", false, "rewrite testdata/snapshots/ from the SQL the Reader sends")

// The SQL the Reader sends is held to golden files: a change of a query, of
// a slot expansion (${attrs}, ${conditions}) or of the parameters bound to them
// shows up as a diff in review. `go test ./internal/store/ -run Snapshot
// -update` rewrites them.

const (
	snapshotDir = "testdata/snapshots"
	snapshotDB  = "tsdb"
)

// sentQuery is one Query call as the Reader made it.
type sentQuery struct {
	sql    string
	params Params
}

// recordingConn is a Conn that keeps what it is asked and answers every
// query with one row of just a trace id (and a resource id, to the queries
// that select one), so that GetTrace goes on past the trace's window and
// reads the spans' resources, and SearchLogs reads every slice of its range
// and asks whether the trace is stored. Safe for concurrent use.
type recordingConn struct {
	mu   sync.Mutex
	sent []sentQuery
}

// record keeps a query sent.
func (c *recordingConn) record(query string, params Params) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, sentQuery{sql: query, params: maps.Clone(params)})
}

var _ Conn = (*recordingConn)(nil)

func (c *recordingConn) Exec(context.Context, string, Params) error {
	return errors.New("recordingConn: the Reader does not run statements")
}

func (c *recordingConn) Insert(context.Context, string, Format, []byte) error {
	return errors.New("recordingConn: the Reader does not insert")
}

func (c *recordingConn) Query(_ context.Context, query string, params Params, row func([]byte) error) error {
	c.record(query, params)
	if params["max_pairs"] != nil {
		// A pair of the spans' host, kept without its estimates: the window is read.
		return row([]byte(`{"host_a":"shop-1","host_b":"shop-1","first_s":0,"last_s":0}`))
	}
	if params["max_resources"] != nil {
		return nil // no resource in use: the window reads the spans'
	}
	if params["max_logs"] != nil {
		// A line of the trace, its resource by id (trace_facts.sql).
		return row([]byte(`{"part":0,"timestamp":1,"fields":"{\"host\":\"shop-1\",\"resource_id\":1234567}"}`))
	}
	if strings.Contains(query, "resource_id") {
		return row([]byte(`{"trace_id":"0af7651916cd43dd8448eb211c80319c","resource_id":1234567,"host":"shop-1"}`))
	}
	return row([]byte(`{"trace_id":"0af7651916cd43dd8448eb211c80319c"}`))
}

func (c *recordingConn) Close() error { return nil }

// snapshotCase is a representative use of a Reader method. run is called
// with two variants that differ in every filter value but not in which
// filters are set: the SQL must be the same for both.
type snapshotCase struct {
	name string
	run  func(ctx context.Context, r *Reader, variant int) error
}

// snapshotTraceIDs are the trace ids of the two variants.
var snapshotTraceIDs = [2]string{"4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"}

// snapshotTenants are the tenants of the two variants' contexts.
var snapshotTenants = [2]string{"acme'0 {x:String} ${db}", "globex'1 {x:String} ${db}"}

func snapshotCases() []snapshotCase {
	// Values, different in each variant, with quotes and placeholder-like
	// text in them: none of it may reach the SQL.
	str := func(s string, v int) string { return fmt.Sprintf("%s'%d {x:String} ${db}", s, v) }
	start := func(v int) int64 { return time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixNano() + int64(v) }
	end := func(v int) int64 { return start(v) + time.Hour.Nanoseconds() + int64(v) }
	return []snapshotCase{
		{"trace by id", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.GetTrace(ctx, snapshotTraceIDs[v])
			return err
		}},
		{"trace by id, its resources cached: the tenant's skewed pairs, then its window", func(ctx context.Context, r *Reader, v int) error {
			r.cacheResources(tenant.FromContext(ctx), map[uint64]map[string]string{1234567: {"host.name": "shop-1"}})
			_, err := r.GetTrace(ctx, snapshotTraceIDs[v])
			return err
		}},
		{"traces, no filter", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.SearchTraces(ctx, TracesFilter{Start: start(v), End: end(v), Limit: 20 + v})
			return err
		}},
		{"traces, every filter, two attributes", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.SearchTraces(ctx, TracesFilter{Service: str("shop", v), Operation: str("GET /cart", v),
				MinDuration: time.Duration(1500+v) * time.Millisecond, MaxDuration: time.Duration(2500+v) * time.Millisecond,
				ErrorsOnly: true, Attributes: []AttributeFilter{{Key: str("http.route", v), Value: str("/cart", v)},
					{Key: str("db.system", v), Value: str("postgresql", v)}}, SpanName: str("SELECT cart", v),
				Start: start(v), End: end(v), Limit: 50 + v, Offset: 4000 + v})
			return err
		}},
		{"logs of one trace, one pass", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.SearchLogs(ctx, LogsFilter{TraceID: snapshotTraceIDs[v], Start: start(v), End: end(v), Limit: 100 + v})
			return err
		}},
		{"logs, three words, service and severity, three slices", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.SearchLogs(ctx, LogsFilter{Words: []string{str("card", v), str("declined", v), str("again", v)},
				Service: str("payments", v), Severity: str("error", v), Start: start(v), End: end(v), Limit: 100 + v})
			return err
		}},
		{"logs, a word and two attributes", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.SearchLogs(ctx, LogsFilter{Words: []string{str("timeout", v)},
				Attributes: []AttributeFilter{{Key: str("thread.name", v), Value: str("main", v)}, {Key: str("env", v), Value: str("prod", v)}},
				Start:      start(v), End: end(v), Limit: 100 + v})
			return err
		}},
		{"RED by a dimension, with points", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.RED(ctx, REDFilter{Service: str("cat", v), Operation: str("GET /cat", v), GroupBy: str("cloud.region", v),
				Start: start(v), End: end(v), Step: int64(10+v) * 1e9})
			return err
		}},
		{"RED tallies of a window", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.REDTallies(ctx, REDFilter{Service: str("cat", v), Operation: str("GET /cat", v), Start: start(v), End: end(v)},
				int32(500+v))
			return err
		}},
		{"findings, no filter", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.GetFindingSummaries(ctx, FindingsFilter{Start: start(v), End: end(v), Limit: 100 + v})
			return err
		}},
		{"findings, kind and service", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.GetFindingSummaries(ctx, FindingsFilter{Kind: str("retry_fanout", v), Service: str("checkout", v),
				Start: start(v), End: end(v), Limit: 10 + v})
			return err
		}},
		{"services", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.Services(ctx, start(v), end(v))
			return err
		}},
		{"operations of a service", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.Operations(ctx, str("shop", v), start(v), end(v))
			return err
		}},
		{"clock pairs", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.ClockPairs(ctx, start(v), end(v))
			return err
		}},
		{"dependencies", func(ctx context.Context, r *Reader, v int) error {
			_, err := r.Dependencies(ctx, start(v), end(v))
			return err
		}},
	}
}

// queryNames lists queries/*.sql by name.
func queryNames(t *testing.T) []string {
	t.Helper()
	files, err := fs.Glob(queryFS, "queries/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = strings.TrimSuffix(path.Base(f), ".sql")
	}
	return names
}

var slotRe = regexp.MustCompile(`\$\{[A-Za-z_]+\}`)

// queryOf names the query file that sql was made from: the file's text for
// the database, with its slot (if any) expanded.
func queryOf(t *testing.T, names []string, sql string) string {
	t.Helper()
	limits := ReaderConfig{MaxQueryTime: DefaultMaxQueryTime, MaxQueryMemory: DefaultMaxQueryMemory}
	for _, name := range names {
		// As written, or without its lines marked "ordered" (trace_spans.sql)
		// and "full" (trace_facts.sql).
		q0 := Query(name, snapshotDB)
		for _, q := range []string{q0, unordered(q0), unmarked(q0, "ordered", "full")} {
			// With every slot empty, the limits follow the text before the last.
			if filled(sql, slotRe.Split(withQueryLimits(q, limits), -1)) || sql == withQueryLimits(slotRe.ReplaceAllString(q, ""), limits) {
				return name
			}
		}
	}
	t.Fatalf("the Reader sent SQL that is none of queries/*.sql:\n%s", sql)
	return ""
}

// filled says whether sql is the text parts (a query split at its slots)
// with something, or nothing, in each slot.
func filled(sql string, parts []string) bool {
	if len(parts) == 1 {
		return sql == parts[0]
	}
	rest, ok := strings.CutPrefix(sql, parts[0])
	if !ok {
		return false
	}
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return strings.HasSuffix(rest, last)
}

// formatSent is one section of a snapshot: the parameters' names with their
// Go types and the placeholders the SQL declares for them, then the SQL.
func formatSent(title string, s sentQuery) string {
	declared := map[string][]string{}
	for _, m := range placeholderRe.FindAllStringSubmatch(s.sql, -1) {
		if !slices.Contains(declared[m[1]], m[0]) {
			declared[m[1]] = append(declared[m[1]], m[0])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "=== %s\n--- params (name: Go type, placeholders)\n", title)
	for _, name := range slices.Sorted(maps.Keys(s.params)) {
		use := strings.Join(declared[name], " ")
		if use == "" {
			use = "(not in this query)"
		}
		fmt.Fprintf(&b, "%s: %T %s\n", name, s.params[name], use)
	}
	// Blanks that end a line are dropped (an emptied slot leaves some), so
	// that an editor trimming them does not break the snapshot.
	b.WriteString("--- sql\n")
	for _, line := range strings.Split(strings.TrimRight(s.sql, "\n"), "\n") {
		b.WriteString(strings.TrimRight(line, " \t"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.String()
}

func TestQuerySnapshots(t *testing.T) {
	ctx := context.Background()
	names := queryNames(t)
	sections := map[string][]string{} // by query name
	for _, c := range snapshotCases() {
		var sent [2][]sentQuery
		for v := range sent {
			rc := &recordingConn{}
			r := NewReader(rc, snapshotDB, ReaderConfig{})
			require.NoError(t, c.run(tenant.NewContext(ctx, snapshotTenants[v]), r, v), c.name)
			r.Wait()
			// GetTrace reads a trace's facts, and the tenant's pairs and
			// resources in use, beside its spans, so they come in any order:
			// after the others, the pairs, the resources, then the facts.
			rank := func(s sentQuery) int {
				switch {
				case strings.Contains(s.sql, "FROM "+snapshotDB+".trace_facts"):
					return 3
				case s.params["max_resources"] != nil:
					return 2
				case s.params["max_pairs"] != nil:
					return 1
				}
				return 0
			}
			slices.SortStableFunc(rc.sent, func(a, b sentQuery) int { return cmp.Compare(rank(a), rank(b)) })
			sent[v] = rc.sent
		}
		require.NotEmpty(t, sent[0], c.name)
		require.Len(t, sent[1], len(sent[0]), "%s: the number of queries depends on filter values", c.name)
		for i, s := range sent[0] {
			title := c.name
			if len(sent[0]) > 1 {
				title = fmt.Sprintf("%s (query %d of %d)", c.name, i+1, len(sent[0]))
			}
			checkBound(t, title, s, sent[1][i])
			// Every read is confined to the caller's tenant: each statement
			// binds it, once per table it reads.
			assert.Equal(t, snapshotTenants[0], s.params["tenant"], "%s: the context's tenant", title)
			assert.Equal(t, strings.Count(s.sql, "FROM "+snapshotDB+"."), strings.Count(s.sql, "tenant = {tenant:String}"),
				"%s: a tenant condition for each table read", title)
			assert.True(t, strings.HasSuffix(s.sql, "max_execution_time = 4, max_memory_usage = 1073741824\n"),
				"%s: every read ends with the reader's limits", title)
			name := queryOf(t, names, s.sql)
			sections[name] = append(sections[name], formatSent(title, s))
		}
	}

	for _, name := range names {
		if len(sections[name]) == 0 {
			t.Errorf("queries/%s.sql is sent by no case of snapshotCases: add one that makes the Reader send it", name)
			continue
		}
		got := fmt.Sprintf("# queries/%s.sql as the Reader sends it, for database %s: one section per query sent.\n"+
			"# Rewrite with: go test ./internal/store/ -run Snapshot -update\n\n%s",
			name, snapshotDB, strings.Join(sections[name], ""))
		compareSnapshot(t, filepath.Join(snapshotDir, name+".golden"), got)
	}
}

// checkBound checks that a query's values are bound, never in its text: the
// SQL and the parameters' names and types are the same for both variants,
// no string value appears in the SQL, and every placeholder has a value of a
// type it can take.
func checkBound(t *testing.T, title string, s, other sentQuery) {
	t.Helper()
	assert.Equal(t, s.sql, other.sql, "%s: the SQL text depends on the filter values", title)
	types := func(p Params) map[string]string {
		out := map[string]string{}
		for k, v := range p {
			out[k] = fmt.Sprintf("%T", v)
		}
		return out
	}
	assert.Equal(t, types(s.params), types(other.params), "%s: the parameters depend on the filter values", title)
	for _, p := range []sentQuery{s, other} {
		for name, v := range p.params {
			if str, ok := v.(string); ok && str != "" {
				assert.NotContains(t, p.sql, str, "%s: the value of %s is in the SQL text", title, name)
			}
		}
		_, err := RenderParams(p.sql, p.params)
		assert.NoError(t, err, "%s: a placeholder without a value", title)
		assert.NotRegexp(t, slotRe, p.sql, "%s: a slot left in the SQL", title)
	}
}

func compareSnapshot(t *testing.T, file, got string) {
	t.Helper()
	if *updateSnapshots {
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		require.NoError(t, os.WriteFile(file, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: no snapshot; write it with: go test ./internal/store/ -run Snapshot -update", file)
		return
	}
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "%s differs from the SQL the Reader sends; if the change is meant, "+
		"rewrite it with: go test ./internal/store/ -run Snapshot -update", file)
}

// Every snapshot belongs to a query file: one left behind by a removed or
// renamed query fails, so that testdata/snapshots/ lists exactly the queries.
func TestQuerySnapshotsHaveQueries(t *testing.T) {
	names := queryNames(t)
	files, err := filepath.Glob(filepath.Join(snapshotDir, "*"))
	require.NoError(t, err)
	for _, f := range files {
		name, ok := strings.CutSuffix(filepath.Base(f), ".golden")
		assert.True(t, ok && slices.Contains(names, name), "%s is the snapshot of no queries/*.sql: remove it", f)
	}
}

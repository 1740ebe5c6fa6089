package store

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

//go:embed queries/*.sql queries/fragments/*.sql
var queryFS embed.FS

// Query returns the named query of queries/ for database db.
func Query(name, db string) string {
	b, err := queryFS.ReadFile("queries/" + name + ".sql")
	if err != nil {
		// Query names are constants of this package; a miss is a build bug.
		panic(fmt.Sprintf("store: no query %q: %v", name, err))
	}
	return strings.ReplaceAll(string(b), "${db}", db)
}

var traceIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

const zeroTraceID = "00000000000000000000000000000000"

// ValidTraceID reports whether id is a trace id as the API spells it: 32
// lowercase hex characters, not all zero.
func ValidTraceID(id string) bool {
	return traceIDRe.MatchString(id) && id != zeroTraceID
}

// ReaderConfig bounds what a read returns and what it may cost.
type ReaderConfig struct {
	// LogWindow is how far before the trace's first span and after its last
	// one the skewed pairs of its hosts are looked for (its logs, until
	// schema 019); the name is the configuration's.
	LogWindow time.Duration
	// MaxLogs caps the logs returned with one trace.
	MaxLogs int
	// MaxSpans caps the spans returned with one trace (its earliest);
	// Trace.Truncated says when it had more. Default 100 000.
	MaxSpans int
	// MaxQueryTime bounds each statement of a read in the engine
	// (max_execution_time): past it the read fails with a query-limit error
	// (IsQueryLimit). Default 4 s.
	MaxQueryTime time.Duration
	// MaxQueryMemory bounds each statement's memory in the engine
	// (max_memory_usage), in bytes. Default 1 GiB.
	MaxQueryMemory int64
	// ReportRenewal, if set, is told when a read that renews what the
	// reader keeps of a tenant in the background (what: "skewed host pairs"
	// or "resources in use") fails, the first time in a row, and when it
	// succeeds again (err nil). Lookups answer without it meanwhile, with
	// one statement more.
	ReportRenewal func(what, tenant string, err error)
}

// Defaults of ReaderConfig.
const (
	// DefaultLogWindow covers clock pairs estimated around a trace's spans.
	DefaultLogWindow        = 5 * time.Minute
	DefaultMaxSpansPerTrace = 100000
	DefaultMaxQueryTime     = 4 * time.Second
	DefaultMaxQueryMemory   = 1 << 30
)

// Reader answers the query API from the store. Every read is confined to
// the tenant of its context (tenant.FromContext): another tenant's data
// reads as none.
type Reader struct {
	conn Conn
	cfg  ReaderConfig
	// The queries, rendered for the database once.
	spans, facts, summary, logSearch, logsKept  string
	spansOrdered, factsOrdered                  string // as written; spans and facts without their lines marked "ordered"
	factsFull                                   string // facts with their line marked "full"; facts is without it
	traceSearch, services, operations, redQuery string
	redTallies, dependencies, clockPairs        string
	spansTable, resourceTable                   string // qualified with the database
	// The trace's window without and with the part that reads resources.
	window, windowResources       string
	resourcesByID, resourcesInUse string

	// Resources read, by tenant and id (resourcecache.go). An id is a hash
	// of the resource's entries (and tenant), so what it names never changes.
	resMu      sync.Mutex
	resCache   map[resourceKey]map[string]string
	resRefresh refresher // of the tenant's resources in use

	// The skewed host pairs read, by tenant (skewedhosts.go).
	pairEstimates string
	pairsMu       sync.Mutex
	pairsKnown    map[string]*knownPairs
	pairsRefresh  refresher
	now           func() time.Time // time.Now; the tests' clock

	bg sync.WaitGroup // the reads of resRefresh and pairsRefresh
}

// Wait waits for the reads that renew what the reader keeps of each tenant,
// which its lookups start in the background, to end: call it before the
// Conn closes, once no lookup runs. The reader stays usable.
func (r *Reader) Wait() {
	r.bg.Wait()
}

// NewReader returns a reader of database db over conn.
func NewReader(conn Conn, db string, cfg ReaderConfig) *Reader {
	if cfg.LogWindow <= 0 {
		cfg.LogWindow = DefaultLogWindow
	}
	if cfg.MaxLogs <= 0 {
		cfg.MaxLogs = 10000
	}
	if cfg.MaxSpans <= 0 {
		cfg.MaxSpans = DefaultMaxSpansPerTrace
	}
	if cfg.MaxQueryTime <= 0 {
		cfg.MaxQueryTime = DefaultMaxQueryTime
	}
	if cfg.MaxQueryMemory <= 0 {
		cfg.MaxQueryMemory = DefaultMaxQueryMemory
	}
	limited := func(q string) string { return withQueryLimits(q, cfg) }
	r := &Reader{conn: conn, cfg: cfg,
		spans: limited(unordered(Query("trace_spans", db))), spansOrdered: limited(Query("trace_spans", db)),
		facts:     limited(unmarked(Query("trace_facts", db), "ordered", "full")),
		factsFull: limited(unordered(Query("trace_facts", db))), factsOrdered: limited(Query("trace_facts", db)),
		summary:   limited(Query("findings_summary", db)),
		logSearch: limited(Query("logs_search", db)), logsKept: limited(Query("logs_kept", db)),
		window:          limited(traceWindow(db, "")),
		windowResources: limited(traceWindow(db, Query("fragments/trace_resources", db))),
		traceSearch:     limited(Query("traces_search", db)), services: limited(Query("services", db)),
		operations: limited(Query("operations", db)),
		redQuery:   limited(redQuery("red", db)), redTallies: limited(redQuery("red_tallies", db)),
		dependencies: limited(Query("dependencies", db)), clockPairs: limited(Query("clock_pairs", db)),
		resourcesByID: limited(Query("resources", db)), resourcesInUse: limited(Query("resources_in_use", db)),
		pairEstimates: limited(Query("clock_pair_estimates", db)),
		spansTable:    db + ".spans", resourceTable: db + ".resources", now: time.Now,
	}
	r.resRefresh = refresher{what: "resources in use", every: resourcesInUseEvery, timeout: cfg.MaxQueryTime, bg: &r.bg,
		report: cfg.ReportRenewal}
	r.pairsRefresh = refresher{what: "skewed host pairs", every: pairsFresh / 2, timeout: cfg.MaxQueryTime, bg: &r.bg,
		report: cfg.ReportRenewal}
	return r
}

// unordered is q without its lines that end in "-- ordered": the clauses
// that sort a trace's rows, which the reader sorts more cheaply itself when
// the limit is not reached.
func unordered(q string) string {
	return unmarked(q, "ordered")
}

// unmarked is q without its lines that end in "-- " and one of marks.
func unmarked(q string, marks ...string) string {
	lines := strings.Split(q, "\n")
	return strings.Join(slices.DeleteFunc(lines, func(l string) bool {
		return slices.ContainsFunc(marks, func(m string) bool { return strings.HasSuffix(l, "-- "+m) })
	}), "\n")
}

// traceWindow is queries/trace_window.sql with resources in its slot.
func traceWindow(db, resources string) string {
	return strings.ReplaceAll(Query("trace_window", db), "${resources}", resources)
}

// settingsRe finds a query's own SETTINGS clause, on its last line.
var settingsRe = regexp.MustCompile(`\nSETTINGS [^\n]*\s*$`)

// noJIT keeps the engine from compiling the reader's expressions to machine
// code. It does so once an expression has been used three times, within the
// statement that uses it next, which waits for the compiler; the reader's
// statements read too little for compiled code to repay that wait.
const noJIT = "compile_expressions = 0, compile_aggregate_expressions = 0, compile_sort_description = 0"

// withQueryLimits is q with the reader's limits in its SETTINGS clause, so
// that the embedded engine and a server bound it alike, after noJIT.
func withQueryLimits(q string, cfg ReaderConfig) string {
	limits := fmt.Sprintf(noJIT+", max_execution_time = %g, max_memory_usage = %d", cfg.MaxQueryTime.Seconds(),
		cfg.MaxQueryMemory)
	q = strings.TrimRight(q, " \n;")
	if settingsRe.MatchString(q) {
		return q + ", " + limits + "\n"
	}
	return q + "\nSETTINGS " + limits + "\n"
}

// GetTrace returns the trace's spans, logs, findings and clock offsets, or
// ErrNotFound: its spans (queries/trace_spans.sql) and, at the same time,
// its lines, findings and clock offsets (trace_facts.sql, by its id alone).
// Once the spans gave its window and hosts, one more statement only when
// the reader lacks one of their resources or the tenant's skewed pairs it
// keeps cannot tell the window's: the window (trace_window.sql), with the
// resources it lacks. What the reader keeps of the tenant (skewedhosts.go,
// resourcecache.go) it renews in the background. Its slices and maps are
// empty, not nil, when there is nothing.
func (r *Reader) GetTrace(ctx context.Context, traceID string) (*model.Trace, error) {
	if !ValidTraceID(traceID) {
		return nil, fmt.Errorf("trace id %q: want 32 lowercase hex characters", traceID)
	}
	t := &model.Trace{TraceID: traceID, Spans: []model.Span{}, Logs: []model.Log{}, Findings: []model.Finding{},
		ClockOffsets: map[string]int64{}}
	tn := tenant.FromContext(ctx)
	// What the reader keeps of the tenant is renewed once the trace is read,
	// in the background; only what this lookup cannot do without is read
	// beside its statements, and waited for: the tenant's skewed pairs when
	// pairsFresh old or more, its resources in use when never read.
	tr := tenantReads{now: r.now()}
	if r.pairsAt(tn, tr.now) == nil {
		tr.pairs = r.renewPairs(ctx, tn, tr.now)
	}
	if !r.resRefresh.ever(tn) {
		tr.resources = r.renewResourcesInUse(ctx, tn, tr.now)
	}
	defer func() {
		// Not again when this lookup waited for a read (which may have failed).
		if tr.pairs == nil {
			r.renewPairs(ctx, tn, tr.now)
		}
		if tr.resources == nil {
			r.renewResourcesInUse(ctx, tn, tr.now)
		}
	}()
	var logResources []uint64 // of each line
	facts := make(chan error, 1)
	go func() { facts <- r.readFacts(ctx, t, tn, &logResources) }()
	resourceIDs, err := r.readSpans(ctx, t, tn)
	var res spanResources
	if err != nil {
		err = fmt.Errorf("reading the spans of trace %s: %w", traceID, err)
	} else if len(t.Spans) > 0 {
		// Started while the facts may still be read.
		res, err = r.readWindow(ctx, t, tn, resourceIDs, tr)
	}
	if ferr := <-facts; err == nil && ferr != nil {
		return nil, fmt.Errorf("reading the logs, findings and clock offsets of trace %s: %w", traceID, ferr)
	}
	if err != nil {
		return nil, err
	}
	if len(t.Spans) == 0 {
		return nil, ErrNotFound
	}
	// The lines' resources are mostly their spans'; the others come from the
	// cache or one more read.
	lineRes, err := r.lineResources(ctx, tn, logResources, res)
	if err != nil {
		return nil, fmt.Errorf("reading the resources of trace %s's logs: %w", traceID, err)
	}
	for i, id := range logResources {
		if id != 0 {
			t.Logs[i].Resource = lineRes[id]
		}
	}
	// The parts of one statement come in any order, and so may their rows.
	slices.SortStableFunc(t.Logs, func(a, b model.Log) int {
		return cmp.Or(cmp.Compare(a.TimeUnixNano, b.TimeUnixNano), cmp.Compare(a.ObservedTimeUnixNano, b.ObservedTimeUnixNano))
	})
	slices.SortStableFunc(t.Findings, func(a, b model.Finding) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), cmp.Compare(b.Value, a.Value))
	})
	slices.SortFunc(t.SkewedPairs, func(a, b model.ClockPair) int {
		return cmp.Or(strings.Compare(a.A, b.A), strings.Compare(a.B, b.B))
	})
	return t, nil
}

// tenantReads are a lookup's time and the reads of its tenant's skewed pairs
// and resources in use that it waits for (nil for none).
type tenantReads struct {
	now              time.Time
	pairs, resources <-chan struct{}
}

// readWindow puts the skewed pairs of the hosts of t's spans in their window
// into t, from the tenant's known pairs or else read, and gives each span its
// resource (resourceIDs[i] for t.Spans[i]), reading those the cache lacks;
// it returns the spans' resources.
func (r *Reader) readWindow(ctx context.Context, t *model.Trace, tn string, resourceIDs []uint64, tr tenantReads) (spanResources, error) {
	// The trace's window: from its first span's start to its last end.
	startNs, endNs := int64(t.Spans[0].StartUnixNano), int64(0)
	hosts := map[string]bool{}
	for _, s := range t.Spans {
		startNs, endNs = min(startNs, int64(s.StartUnixNano)), max(endNs, int64(s.EndUnixNano))
		if s.Host != "" && !strings.Contains(s.Host, "\n") {
			hosts[s.Host] = true
		}
	}
	w := r.cfg.LogWindow.Nanoseconds()
	fromNs, toNs, hostList := startNs-w, endNs+w, strings.Join(slices.Sorted(maps.Keys(hosts)), "\n")
	await(ctx, tr.resources) // if ctx is done first, so is the statement below
	res := r.cachedResources(tn, resourceIDs)
	missing := res.missing()
	if missing == "" {
		if pairs, ok := knownSkewedPairs(r.freshPairs(ctx, tn, tr.now, tr.pairs), hosts, fromNs, toNs); ok {
			t.SkewedPairs = pairs
			r.setResources(tn, t.Spans, resourceIDs, res, nil)
			return res, nil
		}
	}
	p := Params{"tenant": tn, "from_ns": fromNs, "to_ns": toNs, "hosts": hostList}
	query := r.window
	if missing != "" {
		query, p["resource_ids"] = r.windowResources, missing
	}
	var read map[uint64]map[string]string // resources
	err := r.conn.Query(ctx, query, p, func(b []byte) error {
		var row windowRow
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		switch row.Part {
		case partResource:
			if read == nil {
				read = map[uint64]map[string]string{}
			}
			read[row.ResourceID] = nonNil(row.Attributes)
		case partSkewedPair:
			t.SkewedPairs = append(t.SkewedPairs, model.ClockPair{A: row.Host, B: row.HostB, OffsetNanos: row.OffsetNs,
				Samples: row.Samples})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the skewed host pairs of trace %s: %w", t.TraceID, err)
	}
	r.setResources(tn, t.Spans, resourceIDs, res, read)
	return res, nil
}

// readFacts reads the trace's log lines, findings and clock offsets into t
// (its Logs, Findings and ClockOffsets only), each once, and the resource id
// of each line into logResources.
func (r *Reader) readFacts(ctx context.Context, t *model.Trace, tn string, logResources *[]uint64) error {
	reset := func() {
		t.Logs, t.Findings, t.ClockOffsets, *logResources = t.Logs[:0], t.Findings[:0], map[string]int64{}, (*logResources)[:0]
	}
	// Unordered, one line more than the cap: all of them when no more come.
	// Without the value column, which findings written by this version
	// repeat in fields; with it when a finding lacks that.
	maxLogs := uint64(r.cfg.MaxLogs) + 1
	lines, complete, err := r.readFactsOnce(ctx, r.facts, maxLogs, t, tn, logResources)
	if err == nil && !complete {
		reset()
		lines, _, err = r.readFactsOnce(ctx, r.factsFull, maxLogs, t, tn, logResources)
	}
	if err != nil || lines <= r.cfg.MaxLogs {
		return err
	}
	reset()
	_, _, err = r.readFactsOnce(ctx, r.factsOrdered, uint64(r.cfg.MaxLogs), t, tn, logResources)
	return err
}

// readFactsOnce reads q (a form of trace_facts.sql) with maxLogs into t and
// returns the number of log rows read, duplicates included, and whether
// every finding had its value.
func (r *Reader) readFactsOnce(ctx context.Context, q string, maxLogs uint64, t *model.Trace, tn string,
	logResources *[]uint64) (lines int, complete bool, err error) {
	seen := map[string]bool{} // by their row
	complete = true
	withValue := q != r.facts // the forms with the line marked "full"
	p := Params{"trace_id": t.TraceID, "tenant": tn, "max_logs": maxLogs}
	err = r.conn.Query(ctx, q, p, func(b []byte) error {
		var row factRow
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		if row.Part == partLog {
			lines++
		}
		if seen[string(b)] {
			return nil
		}
		seen[string(b)] = true
		var f factFields
		if err := json.Unmarshal([]byte(row.Fields), &f); err != nil {
			return fmt.Errorf("the fields of a row of part %d: %w", row.Part, err)
		}
		value := f.Value
		if value == nil {
			value = row.Value
		}
		if row.Part == partFinding && value == nil {
			if !withValue {
				complete = false
				return nil
			}
			value = new(float64) // the column's NaN or infinity, which JSON cannot hold
		}
		switch row.Part {
		case partLog:
			f.Timestamp, f.ObservedTimestamp, f.TraceID = row.Timestamp, row.Timestamp+nanoTime(f.ObservedAfterNs), t.TraceID
			t.Logs = append(t.Logs, f.log())
			*logResources = append(*logResources, uint64(f.ResourceID))
		case partFinding:
			t.Findings = append(t.Findings, model.Finding{TraceID: t.TraceID, Kind: f.Kind, SpanIDs: nonNilSlice(f.SpanIDs),
				Service: f.Service, Subject: f.Subject, Value: *value, Summary: f.Summary})
		case partClockOffset:
			t.ClockOffsets[f.Host] = int64(f.OffsetNs)
		}
		return nil
	})
	return lines, complete, err
}

// readSpans reads the spans of t into it, earliest first, each once, and
// returns each one's resource id. Unordered first, one span more than the
// cap: all of them when no more come, sorted and deduplicated here. Else
// again, sorted and deduplicated by the engine, to keep the earliest.
func (r *Reader) readSpans(ctx context.Context, t *model.Trace, tn string) ([]uint64, error) {
	type read struct {
		span model.Span
		ids  string
		res  uint64
	}
	var rows []read
	query := func(q string) error {
		rows = rows[:0]
		return r.conn.Query(ctx, q, Params{"trace_id": t.TraceID, "tenant": tn, "max_spans": uint64(r.cfg.MaxSpans) + 1}, func(b []byte) error {
			var row traceSpanRow
			if err := json.Unmarshal(b, &row); err != nil {
				return err
			}
			row.SpanID, row.ParentSpanID = splitIDs(row.IDs)
			rows = append(rows, read{row.span(), row.IDs, row.ResourceID})
			return nil
		})
	}
	if err := query(r.spans); err != nil {
		return nil, err
	}
	if len(rows) <= r.cfg.MaxSpans {
		slices.SortStableFunc(rows, func(a, b read) int {
			return cmp.Or(cmp.Compare(a.span.StartUnixNano, b.span.StartUnixNano), strings.Compare(a.ids, b.ids))
		})
		seen := make(map[string]bool, len(rows))
		rows = slices.DeleteFunc(rows, func(x read) bool {
			dup := seen[x.span.SpanID]
			seen[x.span.SpanID] = true
			return dup
		})
	} else if err := query(r.spansOrdered); err != nil {
		return nil, err
	}
	if len(rows) > r.cfg.MaxSpans {
		t.Truncated, rows = true, rows[:r.cfg.MaxSpans]
	}
	resourceIDs := make([]uint64, len(rows))
	for i, x := range rows {
		t.Spans = append(t.Spans, x.span)
		resourceIDs[i] = x.res
	}
	return resourceIDs, nil
}

// The parts of the rows of queries/trace_window.sql and trace_facts.sql.
const (
	partLog = iota
	partFinding
	partClockOffset
	partSkewedPair
	partResource
)

// traceSpanRow is a row of queries/trace_spans.sql: the span's and its
// parent's ids come as one hex string.
type traceSpanRow struct {
	spanRow
	IDs string `json:"ids"`
}

// splitIDs returns the span id and the parent's of ids as trace_spans.sql
// reads them (hex, the parent's zeros for none), lowercase.
func splitIDs(ids string) (span, parent string) {
	ids = strings.ToLower(ids)
	if len(ids) != 32 {
		return ids, ""
	}
	span, parent = ids[:16], ids[16:]
	if parent == "0000000000000000" {
		parent = ""
	}
	return span, parent
}

// windowRow is a row of queries/trace_window.sql: a skewed pair or a
// resource, by Part.
type windowRow struct {
	Part       int               `json:"part"`
	Host       string            `json:"host"`
	HostB      string            `json:"host_b"`
	OffsetNs   int64             `json:"offset_ns"`
	Samples    int               `json:"samples"`
	Attributes map[string]string `json:"attributes"`
	ResourceID uint64            `json:"resource_id"`
}

// factRow is a row of queries/trace_facts.sql: what it is, its time, the
// rest of it in fields (factFields) but a finding's value.
type factRow struct {
	Part      int      `json:"part"`
	Timestamp nanoTime `json:"timestamp"`
	Fields    string   `json:"fields"`
	Value     *float64 `json:"value"` // in the forms with the line marked "full" alone
}

// factFields is the fields column of trace_facts (schema 025): a line's, a
// finding's or a clock offset's, by its row's fact. A line's time and trace
// id are not in it, nor a finding's value in rows that a collector of an
// earlier version wrote (findings.go).
type factFields struct {
	logRow
	Value           *float64  `json:"value"`
	ObservedAfterNs jsonInt64 `json:"observed_after_ns"`
	Kind            string    `json:"kind"`
	Subject         string    `json:"subject"`
	SpanIDs         []string  `json:"span_ids"`
	Summary         string    `json:"summary"`
	OffsetNs        jsonInt64 `json:"offset_ns"`
}

// jsonInt64 and jsonUint64 read a JSON number or a number as text: how
// ClickHouse writes 64-bit integers depends on the session
// (output_format_json_quote_64bit_integers).
type (
	jsonInt64  int64
	jsonUint64 uint64
)

func (n *jsonInt64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(string(bytes.Trim(b, `"`)), 10, 64)
	*n = jsonInt64(v)
	return err
}

func (n *jsonUint64) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseUint(string(bytes.Trim(b, `"`)), 10, 64)
	*n = jsonUint64(v)
	return err
}

func (row spanRow) span() model.Span {
	return model.Span{
		TraceID: row.TraceID, SpanID: row.SpanID, ParentSpanID: row.ParentSpanID, TraceState: row.TraceState,
		Name: row.Name, Kind: model.ParseKind(row.Kind), Service: row.Service, Host: row.Host,
		StartUnixNano: uint64(row.Timestamp), EndUnixNano: uint64(row.Timestamp) + row.DurationNs,
		StatusCode: model.ParseStatusCode(row.StatusCode), StatusMessage: row.StatusMessage,
		Attributes: nonNil(row.Attributes), Resource: nonNil(row.Resource),
		ScopeName: row.ScopeName, ScopeVersion: row.ScopeVersion,
		Events: decodeEvents(row.Events), Links: decodeLinks(row.Links),
	}
}

func (row logRow) log() model.Log {
	return model.Log{
		TimeUnixNano: uint64(row.Timestamp), ObservedTimeUnixNano: uint64(row.ObservedTimestamp),
		SeverityText: row.SeverityText, SeverityNumber: int(row.SeverityNumber), Body: row.Body,
		TraceID: row.TraceID, SpanID: row.SpanID, Service: row.Service, Host: row.Host,
		Attributes: nonNil(row.Attributes), Resource: nonNil(row.Resource),
	}
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNil[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// FindingsFilter selects the findings GetFindingSummaries aggregates. Empty
// Kind or Service match all; Start and End (Unix nanoseconds) are inclusive.
type FindingsFilter struct {
	Kind, Service string
	Start, End    int64
	Limit         int
}

// GetFindingSummaries aggregates findings across traces by kind, service and
// subject, most frequent first.
func (r *Reader) GetFindingSummaries(ctx context.Context, f FindingsFilter) ([]model.FindingSummary, error) {
	out := []model.FindingSummary{}
	p := Params{"kind": f.Kind, "service": f.Service, "start_ns": f.Start, "end_ns": f.End, "limit": int64(f.Limit),
		"tenant": tenant.FromContext(ctx)}
	err := r.conn.Query(ctx, r.summary, p, func(b []byte) error {
		var row struct {
			Kind       string   `json:"kind"`
			Service    string   `json:"service"`
			Subject    string   `json:"subject"`
			Count      uint64   `json:"count"`
			Traces     uint64   `json:"traces"`
			LastSeenNs int64    `json:"last_seen_ns"`
			AvgValue   float64  `json:"avg_value"`
			P50Value   float64  `json:"p50_value"`
			MaxValue   float64  `json:"max_value"`
			Examples   []string `json:"example_trace_ids"`
		}
		if err := json.Unmarshal(b, &row); err != nil {
			return err
		}
		if row.Examples == nil {
			row.Examples = []string{}
		}
		out = append(out, model.FindingSummary{Kind: row.Kind, Service: row.Service, Subject: row.Subject,
			Count: row.Count, Traces: row.Traces, AvgValue: row.AvgValue, P50Value: row.P50Value, MaxValue: row.MaxValue,
			ExampleTraceIDs: row.Examples, LastSeenUnixNano: uint64(max(row.LastSeenNs, 0))})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("aggregating findings: %w", err)
	}
	return out, nil
}

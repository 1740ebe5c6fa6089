package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Writer turns pdata into rows and inserts them, one insert per table per
// call: callers batch (the sampler emits all the traces it kept in a pass).
// Every row carries its tenant (schema 015): a span's or log record's is its
// resource's (tenant.Of), an analysis row's its Tenant (empty: the default).
type Writer struct {
	conn Conn
	// Rows older than their retention are not written (they would expire
	// at once); now is the clock that says so.
	retention Retention
	now       func() time.Time
	// The tables, qualified with the database.
	spans, logs, facts            string
	traceSummaries, resourceTable string
	red, clockPairs               string
	resources                     writtenResources
}

// NewWriter returns a writer into database db over conn.
func NewWriter(conn Conn, db string) *Writer {
	return &Writer{conn: conn, spans: db + ".spans", logs: db + ".logs", facts: db + ".trace_facts",
		traceSummaries: db + ".trace_summaries", resourceTable: db + ".resources", red: db + ".red", clockPairs: db + ".clock_pairs",
		now: time.Now}
}

// SetRetention makes the writer skip the rows that are already older than
// the tables' retention (ApplyRetention) when they arrive, and count them
// as expired: stored, they would only make partitions for the engine to
// drop. Call it before the first write.
func (w *Writer) SetRetention(r Retention) { w.retention = r }

// notBefore is the oldest time (Unix nanoseconds) of a row kept for keep;
// 0 for no retention.
func (w *Writer) notBefore(keep time.Duration) uint64 {
	if keep <= 0 {
		return 0
	}
	return uint64(max(w.now().Add(-keep).UnixNano(), 0))
}

// WriteStats says what a write did with its input; a write that failed says
// nothing, so that a retry of the same batch counts its records once.
type WriteStats struct {
	Written int
	// Invalid counts records skipped whole because an id was invalid.
	Invalid int
	// Expired counts records skipped because they were older than their
	// retention already (SetRetention).
	Expired int
}

// spanRow is a row of the spans table as the reader's queries return it
// (they select the column names). The writer does not build spanRows: it
// encodes spans straight from pdata into a Native block with appendSpanRow,
// whose columns hold what the reader decodes into a spanRow (the tests hold
// the two to each other).
type spanRow struct {
	Timestamp     nanoTime          `json:"timestamp"`
	TraceID       string            `json:"trace_id"`
	SpanID        string            `json:"span_id"`
	ParentSpanID  string            `json:"parent_span_id"`
	TraceState    string            `json:"trace_state"`
	Name          string            `json:"name"`
	Kind          string            `json:"kind"`
	Service       string            `json:"service"`
	Host          string            `json:"host"`
	DurationNs    uint64            `json:"duration_ns"`
	StatusCode    string            `json:"status_code"`
	StatusMessage string            `json:"status_message"`
	Attributes    map[string]string `json:"attributes"`
	Resource      map[string]string `json:"resource"`
	ScopeName     string            `json:"scope_name"`
	ScopeVersion  string            `json:"scope_version"`
	Events        string            `json:"events"`
	Links         string            `json:"links"`
	// ResourceID names the span's resource in the resources table; 0 for
	// rows written before schema 008, which carry Resource themselves.
	ResourceID uint64 `json:"resource_id,omitempty"`
}

// logRow is a row of the logs table, read like spanRow and written by
// appendLogRow.
type logRow struct {
	Timestamp         nanoTime          `json:"timestamp"`
	ObservedTimestamp nanoTime          `json:"observed_timestamp"`
	TraceID           string            `json:"trace_id"`
	SpanID            string            `json:"span_id"`
	SeverityText      string            `json:"severity_text"`
	SeverityNumber    int32             `json:"severity_number"`
	Service           string            `json:"service"`
	Host              string            `json:"host"`
	Body              string            `json:"body"`
	Attributes        map[string]string `json:"attributes"`
	Resource          map[string]string `json:"resource"`
	ScopeName         string            `json:"scope_name"`
	// ResourceID names the line's resource in the resources table; 0 for
	// rows written before schema 017, which carry Resource themselves.
	ResourceID jsonUint64 `json:"resource_id,omitempty"`
}

// WriteTraces stores every span of td, and the findings and clock offsets
// it carries (analysis.go). A span without a valid trace or span id is
// skipped whole and counted in the returned stats.
//
// Three inserts, each idempotent: the resources the store may lack (first,
// so that no stored span names a missing one), the spans, and each trace's
// summary in trace_summaries (last: a search finds a trace through it once
// its spans are stored); then the findings and clock offsets, in one. When one
// fails, the call fails and the caller's retry of the same batch adds only
// what is missing. Spans over more days than one insert may write are
// inserted a range of days at a time (partitions.go), each range's traces
// summed up apart: a search sums a trace's summary rows.
func (w *Writer) WriteTraces(ctx context.Context, td ptrace.Traces) (WriteStats, error) {
	notBefore := w.notBefore(w.retention.Traces)
	st, err := writeByDays(spanColumns, func(e *rowEncoder, days dayRange) WriteStats {
		return e.appendSpans(td, days, notBefore)
	}, func(e *rowEncoder, n int) error {
		return w.insertSpans(ctx, e, n)
	})
	if err != nil {
		return st, err
	}
	a := AnalysisOf(td)
	if err := w.WriteFacts(ctx, a.Findings, a.Clocks); err != nil {
		return WriteStats{}, err
	}
	if err := w.WriteRED(ctx, a.RED); err != nil {
		return WriteStats{}, err
	}
	if err := w.WriteClockPairs(ctx, a.Pairs); err != nil {
		return WriteStats{}, err
	}
	return st, nil
}

// writeByDays encodes a batch's rows with encode and inserts them with
// insert: in one insert or, when they fall on more days than one insert may
// write, a range of days at a time, each encoded anew.
func writeByDays(cols []nativeColumnDef, encode func(e *rowEncoder, days dayRange) WriteStats,
	insert func(e *rowEncoder, n int) error) (WriteStats, error) {
	e := getRowEncoder(cols)
	defer putRowEncoder(e)
	st := encode(e, allDays)
	if st.Written == 0 {
		return st, nil
	}
	for _, r := range e.days.groups() {
		n := st.Written
		if r != allDays {
			e.reset(cols)
			n = encode(e, r).Written
		}
		if err := insert(e, n); err != nil {
			return WriteStats{}, err // the caller's retry counts the batch again
		}
	}
	return st, nil
}

// appendSpans appends the valid spans of td that start within days, and not
// before notBefore, to the encoder's block, and says what it took.
func (e *rowEncoder) appendSpans(td ptrace.Traces, days dayRange, notBefore uint64) WriteStats {
	var st WriteStats
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		if IsAnalysis(rs) {
			continue
		}
		e.setSpanResource(rs.Resource().Attributes())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				if s.TraceID().IsEmpty() || s.SpanID().IsEmpty() {
					st.Invalid++
					continue
				}
				start := uint64(s.StartTimestamp())
				if start < notBefore {
					st.Expired++
					continue
				}
				if days != allDays && !days.has(start) {
					continue
				}
				e.days.add(start)
				e.appendSpanRow(ss.Scope(), s)
				st.Written++
			}
		}
	}
	return st
}

// insertSpans inserts the n spans encoded in e, with their resources and
// trace summaries.
func (w *Writer) insertSpans(ctx context.Context, e *rowEncoder, n int) error {
	if err := w.insertResources(ctx, e, n, "spans"); err != nil {
		return err
	}
	if err := w.conn.Insert(ctx, w.spans, FormatNative, e.encode()); err != nil {
		return fmt.Errorf("inserting %d spans: %w", n, err)
	}
	e.aux.reset(traceSummaryColumns)
	e.sums.appendSummaryRows(&e.aux)
	if err := w.conn.Insert(ctx, w.traceSummaries, FormatNative, e.encodeAux()); err != nil {
		return fmt.Errorf("inserting the trace summaries of %d spans: %w", n, err)
	}
	return nil
}

// insertResources inserts the resources of the n rows (of what) encoded in e
// that the store may lack: before the rows, so that no stored row names a
// missing one.
func (w *Writer) insertResources(ctx context.Context, e *rowEncoder, n int, what string) error {
	e.aux.reset(resourceColumns)
	e.marks = w.resources.appendNew(&e.aux, e.res, e.resArena, e.marks[:0])
	if e.aux.rows == 0 {
		return nil
	}
	if err := w.conn.Insert(ctx, w.resourceTable, FormatNative, e.encodeAux()); err != nil {
		return fmt.Errorf("inserting the resources of %d %s: %w", n, what, err)
	}
	w.resources.mark(e.marks)
	return nil
}

// WriteLogs stores every log record of ld. Records need no ids: logs are all
// stored, linked to a trace when they carry one. Records over more days than
// one insert may write are inserted a range of days at a time.
func (w *Writer) WriteLogs(ctx context.Context, ld plog.Logs) (WriteStats, error) {
	notBefore := w.notBefore(w.retention.Logs)
	return writeByDays(logColumns, func(e *rowEncoder, days dayRange) WriteStats {
		return e.appendLogs(ld, days, notBefore)
	}, func(e *rowEncoder, n int) error {
		if err := w.insertResources(ctx, e, n, "log records"); err != nil {
			return err
		}
		if err := w.conn.Insert(ctx, w.logs, FormatNative, e.encode()); err != nil {
			return fmt.Errorf("inserting %d log records: %w", n, err)
		}
		return nil
	})
}

// appendLogs appends the records of ld whose time falls within days, and
// not before notBefore, to the encoder's block, and says what it took.
func (e *rowEncoder) appendLogs(ld plog.Logs, days dayRange, notBefore uint64) WriteStats {
	var st WriteStats
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		e.setRowResource(rl.Resource().Attributes())
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			recs := sl.LogRecords()
			for k := 0; k < recs.Len(); k++ {
				lr := recs.At(k)
				ts, observed := logTimes(lr)
				if ts < notBefore {
					st.Expired++
					continue
				}
				if days != allDays && !days.has(ts) {
					continue
				}
				e.days.add(ts)
				e.appendLogRow(sl.Scope(), lr, ts, observed)
				st.Written++
			}
		}
	}
	return st
}

// nanoTime is a time in Unix nanoseconds. In JSON rows it is written as text
// that ClickHouse parses into DateTime64(9) exactly on every version, and read as
// the integer the queries select with toUnixTimestamp64Nano.
type nanoTime uint64

// MarshalJSON writes t as appendNanoTime does.
func (t nanoTime) MarshalJSON() ([]byte, error) {
	return appendNanoTime(nil, uint64(t)), nil
}

func (t *nanoTime) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("time in Unix nanoseconds: %w", err)
	}
	// DateTime64 holds times before 1970; OTLP has none, so clamp.
	*t = nanoTime(max(v, 0))
	return nil
}

// appendNanosText appends Unix nanoseconds as "seconds.nanoseconds", which
// ClickHouse parses into DateTime64(9) exactly.
func appendNanosText(b []byte, ns uint64) []byte {
	b = strconv.AppendUint(b, ns/1e9, 10)
	var frac [10]byte // '.' and nine digits, zero-padded
	frac[0] = '.'
	for i, n := 9, ns%1e9; i > 0; i, n = i-1, n/10 {
		frac[i] = byte('0' + n%10)
	}
	return append(b, frac[:]...)
}

func durationNanos(start, end pcommon.Timestamp) uint64 {
	if end < start {
		return 0
	}
	return uint64(end - start)
}

// serviceAndHost reads the resource attributes that name where a span or log
// came from.
func serviceAndHost(attrs pcommon.Map) (service, host string) {
	return ServiceName(attrs), HostName(attrs)
}

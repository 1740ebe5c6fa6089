package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Writer turns pdata into rows and inserts them, one insert per table per
// call: callers batch (the sampler emits all the traces it kept in a pass).
type Writer struct {
	conn Conn
	// The tables, qualified with the database.
	spans, logs, findings, clock  string
	traceSummaries, resourceTable string
	resources                     writtenResources
}

// NewWriter returns a writer into database db over conn.
func NewWriter(conn Conn, db string) *Writer {
	return &Writer{conn: conn, spans: db + ".spans", logs: db + ".logs", findings: db + ".findings", clock: db + ".trace_clock",
		traceSummaries: db + ".trace_summaries", resourceTable: db + ".resources"}
}

// WriteStats says what a write did with its input.
type WriteStats struct {
	Written int
	// Invalid counts records skipped whole because an id was invalid.
	Invalid int
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
}

// WriteTraces stores every span of td. A span without a valid trace or span
// id is skipped whole and counted in the returned stats.
//
// Three inserts, each idempotent: the resources the store may lack (first,
// so that no stored span names a missing one), the spans, and each trace's
// summary in trace_summaries (last: a search finds a trace through it once
// its spans are stored). When one fails, the call fails and the caller's
// retry of the same batch adds only what is missing.
func (w *Writer) WriteTraces(ctx context.Context, td ptrace.Traces) (WriteStats, error) {
	var st WriteStats
	e := getRowEncoder(spanColumns)
	defer putRowEncoder(e)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
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
				e.appendSpanRow(ss.Scope(), s)
				st.Written++
			}
		}
	}
	if st.Written == 0 {
		return st, nil
	}
	failed := func(what string, err error) (WriteStats, error) {
		return WriteStats{Invalid: st.Invalid}, fmt.Errorf("inserting %s of %d spans: %w", what, st.Written, err)
	}
	e.aux.reset(resourceColumns)
	e.marks = w.resources.appendNew(&e.aux, e.res, e.resArena, e.marks[:0])
	if e.aux.rows > 0 {
		if err := w.conn.Insert(ctx, w.resourceTable, FormatNative, e.encodeAux()); err != nil {
			return failed("the resources", err)
		}
		w.resources.mark(e.marks)
	}
	if err := w.conn.Insert(ctx, w.spans, FormatNative, e.encode()); err != nil {
		return WriteStats{Invalid: st.Invalid}, fmt.Errorf("inserting %d spans: %w", st.Written, err)
	}
	e.aux.reset(traceSummaryColumns)
	e.sums.appendSummaryRows(&e.aux)
	if err := w.conn.Insert(ctx, w.traceSummaries, FormatNative, e.encodeAux()); err != nil {
		return failed("the trace summaries", err)
	}
	return st, nil
}

// WriteLogs stores every log record of ld. Records need no ids: logs are all
// stored, linked to a trace when they carry one.
func (w *Writer) WriteLogs(ctx context.Context, ld plog.Logs) (WriteStats, error) {
	var st WriteStats
	e := getRowEncoder(logColumns)
	defer putRowEncoder(e)
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		e.setResource(rl.Resource().Attributes())
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			recs := sl.LogRecords()
			for k := 0; k < recs.Len(); k++ {
				e.appendLogRow(sl.Scope(), recs.At(k))
				st.Written++
			}
		}
	}
	if st.Written == 0 {
		return st, nil
	}
	if err := w.conn.Insert(ctx, w.logs, FormatNative, e.encode()); err != nil {
		return WriteStats{}, fmt.Errorf("inserting %d log records: %w", st.Written, err)
	}
	return st, nil
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

// KindName is the API's name for a span kind: "server", "client", ….
func KindName(k ptrace.SpanKind) string {
	switch k {
	case ptrace.SpanKindServer:
		return "server"
	case ptrace.SpanKindClient:
		return "client"
	case ptrace.SpanKindProducer:
		return "producer"
	case ptrace.SpanKindConsumer:
		return "consumer"
	case ptrace.SpanKindInternal:
		return "internal"
	default:
		return "unspecified"
	}
}

// StatusName is the API's name for a status code: "UNSET", "OK", "ERROR".
func StatusName(c ptrace.StatusCode) string {
	switch c {
	case ptrace.StatusCodeUnset:
		return "UNSET"
	case ptrace.StatusCodeOk:
		return "OK"
	case ptrace.StatusCodeError:
		return "ERROR"
	default:
		return strings.ToUpper(c.String())
	}
}

package store

import (
	"bytes"
	"context"
	"encoding/json"
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
	db   string
}

// NewWriter returns a writer into database db over conn.
func NewWriter(conn Conn, db string) *Writer { return &Writer{conn: conn, db: db} }

// WriteStats says what a write did with its input.
type WriteStats struct {
	Written int
	// Invalid counts records skipped whole because an id was invalid.
	Invalid int
}

// spanRow is a row of the spans table, in both directions: inserted as
// JSONEachRow and decoded from the reader's queries, which select the same
// column names.
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
}

// logRow is a row of the logs table, in both directions like spanRow.
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
func (w *Writer) WriteTraces(ctx context.Context, td ptrace.Traces) (WriteStats, error) {
	var st WriteStats
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := attrMap(rs.Resource().Attributes())
		service, host := serviceAndHost(rs.Resource().Attributes())
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
				row := spanRow{
					Timestamp:     nanoTime(s.StartTimestamp()),
					TraceID:       s.TraceID().String(),
					SpanID:        s.SpanID().String(),
					ParentSpanID:  spanIDString(s.ParentSpanID()),
					TraceState:    s.TraceState().AsRaw(),
					Name:          s.Name(),
					Kind:          KindName(s.Kind()),
					Service:       service,
					Host:          host,
					DurationNs:    durationNanos(s.StartTimestamp(), s.EndTimestamp()),
					StatusCode:    StatusName(s.Status().Code()),
					StatusMessage: s.Status().Message(),
					Attributes:    attrMap(s.Attributes()),
					Resource:      res,
					ScopeName:     ss.Scope().Name(),
					ScopeVersion:  ss.Scope().Version(),
					Events:        eventsJSON(s.Events()),
					Links:         linksJSON(s.Links()),
				}
				if err := enc.Encode(&row); err != nil {
					return st, fmt.Errorf("encoding span %s: %w", row.SpanID, err)
				}
				st.Written++
			}
		}
	}
	if st.Written == 0 {
		return st, nil
	}
	if err := w.conn.Insert(ctx, w.db+".spans", buf.Bytes()); err != nil {
		return WriteStats{Invalid: st.Invalid}, fmt.Errorf("inserting %d spans: %w", st.Written, err)
	}
	return st, nil
}

// WriteLogs stores every log record of ld. Records need no ids: logs are all
// stored, linked to a trace when they carry one.
func (w *Writer) WriteLogs(ctx context.Context, ld plog.Logs) (WriteStats, error) {
	var st WriteStats
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		res := attrMap(rl.Resource().Attributes())
		service, host := serviceAndHost(rl.Resource().Attributes())
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			recs := sl.LogRecords()
			for k := 0; k < recs.Len(); k++ {
				lr := recs.At(k)
				ts, observed := uint64(lr.Timestamp()), uint64(lr.ObservedTimestamp())
				if ts == 0 {
					ts = observed
				}
				if observed == 0 {
					observed = ts
				}
				row := logRow{
					Timestamp:         nanoTime(ts),
					ObservedTimestamp: nanoTime(observed),
					SeverityText:      lr.SeverityText(),
					SeverityNumber:    int32(lr.SeverityNumber()),
					Service:           service,
					Host:              host,
					Body:              lr.Body().AsString(),
					Attributes:        attrMap(lr.Attributes()),
					Resource:          res,
					ScopeName:         sl.Scope().Name(),
				}
				if !lr.TraceID().IsEmpty() {
					row.TraceID = lr.TraceID().String()
					row.SpanID = spanIDString(lr.SpanID())
				}
				if err := enc.Encode(&row); err != nil {
					return st, fmt.Errorf("encoding log record: %w", err)
				}
				st.Written++
			}
		}
	}
	if st.Written == 0 {
		return st, nil
	}
	if err := w.conn.Insert(ctx, w.db+".logs", buf.Bytes()); err != nil {
		return WriteStats{}, fmt.Errorf("inserting %d log records: %w", st.Written, err)
	}
	return st, nil
}

// nanoTime is a time in Unix nanoseconds. It is written as text that
// ClickHouse parses into DateTime64(9) exactly on every version, and read as
// the integer the queries select with toUnixTimestamp64Nano.
type nanoTime uint64

func (t nanoTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + nanosText(uint64(t)) + `"`), nil
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

// nanosText renders Unix nanoseconds as "seconds.nanoseconds", which
// ClickHouse parses into DateTime64(9) exactly.
func nanosText(ns uint64) string {
	var b [32]byte
	out := strconv.AppendUint(b[:0], ns/1e9, 10)
	out = append(out, '.')
	frac := strconv.AppendUint(nil, ns%1e9, 10)
	for i := len(frac); i < 9; i++ {
		out = append(out, '0')
	}
	return string(append(out, frac...))
}

func durationNanos(start, end pcommon.Timestamp) uint64 {
	if end < start {
		return 0
	}
	return uint64(end - start)
}

func spanIDString(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return id.String()
}

func attrMap(attrs pcommon.Map) map[string]string {
	m := make(map[string]string, attrs.Len())
	attrs.Range(func(k string, v pcommon.Value) bool {
		m[k] = v.AsString()
		return true
	})
	return m
}

// serviceAndHost reads the resource attributes that name where a span or log
// came from.
func serviceAndHost(attrs pcommon.Map) (service, host string) {
	service = "unknown_service"
	if v, ok := attrs.Get("service.name"); ok && v.AsString() != "" {
		service = v.AsString()
	}
	for _, k := range []string{"host.name", "host.id", "k8s.pod.name"} {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			return service, v.AsString()
		}
	}
	return service, ""
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
	return strings.ToUpper(c.String())
}

func eventsJSON(evs ptrace.SpanEventSlice) string {
	out := make([]Event, 0, evs.Len())
	for i := 0; i < evs.Len(); i++ {
		e := evs.At(i)
		out = append(out, Event{TimeUnixNano: uint64(e.Timestamp()), Name: e.Name(), Attributes: attrMap(e.Attributes())})
	}
	return jsonArray(out, len(out))
}

func linksJSON(links ptrace.SpanLinkSlice) string {
	out := make([]Link, 0, links.Len())
	for i := 0; i < links.Len(); i++ {
		l := links.At(i)
		out = append(out, Link{TraceID: l.TraceID().String(), SpanID: spanIDString(l.SpanID()), Attributes: attrMap(l.Attributes())})
	}
	return jsonArray(out, len(out))
}

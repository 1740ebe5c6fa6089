package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// The writer's encoding before rowEncoder, kept as the oracle the new one is
// held to: pdata to spanRow and logRow, encoded by encoding/json. It is the
// old code with its helpers renamed, and the tenant (schema 015) added: a
// column of each row, not among the resource's attributes.

// oldResource is the resource map and tenant of a resource's rows.
func oldResource(attrs pcommon.Map) (map[string]string, string) {
	res := oldAttrMap(attrs)
	delete(res, tenant.Attribute)
	return res, tenant.Of(attrs)
}

// withTenant is a row of the oracle with its tenant column.
type withTenant[R any] struct {
	Row    R
	Tenant string `json:"tenant"`
}

func (r withTenant[R]) MarshalJSON() ([]byte, error) {
	row, err := json.Marshal(r.Row)
	if err != nil {
		return nil, err
	}
	t, err := json.Marshal(r.Tenant)
	if err != nil {
		return nil, err
	}
	return append(append(append(row[:len(row)-1], `,"tenant":`...), t...), '}'), nil
}

func oldEncodeTraces(td ptrace.Traces) ([]byte, WriteStats) {
	var st WriteStats
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res, tn := oldResource(rs.Resource().Attributes())
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
				row := withTenant[spanRow]{oldSpanRow(s, ss.Scope(), res, service, host), tn}
				if err := enc.Encode(&row); err != nil {
					panic(err)
				}
				st.Written++
			}
		}
	}
	return buf.Bytes(), st
}

func oldSpanRow(s ptrace.Span, scope pcommon.InstrumentationScope, res map[string]string, service, host string) spanRow {
	return spanRow{
		Timestamp:     nanoTime(s.StartTimestamp()),
		TraceID:       s.TraceID().String(),
		SpanID:        s.SpanID().String(),
		ParentSpanID:  oldSpanIDString(s.ParentSpanID()),
		TraceState:    s.TraceState().AsRaw(),
		Name:          s.Name(),
		Kind:          model.Kind(s.Kind()).String(),
		Service:       service,
		Host:          host,
		DurationNs:    durationNanos(s.StartTimestamp(), s.EndTimestamp()),
		StatusCode:    oldStatusName(s.Status().Code()),
		StatusMessage: s.Status().Message(),
		Attributes:    oldAttrMap(s.Attributes()),
		Resource:      res,
		ScopeName:     scope.Name(),
		ScopeVersion:  scope.Version(),
		Events:        oldEventsJSON(s.Events()),
		Links:         oldLinksJSON(s.Links()),
	}
}

func oldEncodeLogs(ld plog.Logs) ([]byte, WriteStats) {
	var st WriteStats
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		res, tn := oldResource(rl.Resource().Attributes())
		service, host := serviceAndHost(rl.Resource().Attributes())
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			sl := sls.At(j)
			recs := sl.LogRecords()
			for k := 0; k < recs.Len(); k++ {
				row := withTenant[logRow]{oldLogRow(recs.At(k), sl.Scope(), res, service, host), tn}
				if err := enc.Encode(&row); err != nil {
					panic(err)
				}
				st.Written++
			}
		}
	}
	return buf.Bytes(), st
}

func oldLogRow(lr plog.LogRecord, scope pcommon.InstrumentationScope, res map[string]string, service, host string) logRow {
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
		Attributes:        oldAttrMap(lr.Attributes()),
		Resource:          res,
		ScopeName:         scope.Name(),
	}
	if !lr.TraceID().IsEmpty() {
		row.TraceID = lr.TraceID().String()
		row.SpanID = oldSpanIDString(lr.SpanID())
	}
	return row
}

func oldSpanIDString(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return id.String()
}

func oldAttrMap(attrs pcommon.Map) map[string]string {
	m := make(map[string]string, attrs.Len())
	attrs.Range(func(k string, v pcommon.Value) bool {
		m[k] = v.AsString()
		return true
	})
	return m
}

func oldStatusName(c ptrace.StatusCode) string {
	return strings.ToUpper(c.String())
}

func oldEventsJSON(evs ptrace.SpanEventSlice) string {
	out := make([]storedEvent, 0, evs.Len())
	for i := 0; i < evs.Len(); i++ {
		e := evs.At(i)
		out = append(out, storedEvent{TimeUnixNano: uint64(e.Timestamp()), Name: e.Name(), Attributes: oldAttrMap(e.Attributes())})
	}
	return oldJSONArray(out, len(out))
}

func oldLinksJSON(links ptrace.SpanLinkSlice) string {
	out := make([]storedLink, 0, links.Len())
	for i := 0; i < links.Len(); i++ {
		l := links.At(i)
		out = append(out, storedLink{TraceID: l.TraceID().String(), SpanID: oldSpanIDString(l.SpanID()), Attributes: oldAttrMap(l.Attributes())})
	}
	return oldJSONArray(out, len(out))
}

func oldJSONArray(v any, n int) string {
	if n == 0 {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// oldNanosText is nanosText as it was, for the nanoTime written by the oracle.
func oldNanosText(ns uint64) string {
	var b [32]byte
	out := strconv.AppendUint(b[:0], ns/1e9, 10)
	out = append(out, '.')
	frac := strconv.AppendUint(nil, ns%1e9, 10)
	for i := len(frac); i < 9; i++ {
		out = append(out, '0')
	}
	return string(append(out, frac...))
}

// captureConn records inserts; the writer reuses its buffer, so it copies.
type captureConn struct {
	Conn
	mu      sync.Mutex
	inserts map[string][][]byte
}

func (c *captureConn) Insert(_ context.Context, table string, _ Format, rows []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inserts == nil {
		c.inserts = map[string][][]byte{}
	}
	c.inserts[table] = append(c.inserts[table], bytes.Clone(rows))
	return nil
}

type discardConn struct{ Conn }

func (discardConn) Insert(context.Context, string, Format, []byte) error { return nil }

// nanosText renders Unix nanoseconds as appendNanosText does, as a string.
func nanosText(ns uint64) string { return string(appendNanosText(nil, ns)) }

// tracesWrite is what a Writer inserted for one WriteTraces call.
type tracesWrite struct {
	st                       WriteStats
	spans, summaries, groups []byte // the blocks; groups: resources
}

func writeTraces(t testing.TB, td ptrace.Traces) tracesWrite {
	t.Helper()
	c := &captureConn{}
	st, err := NewWriter(c, "db").WriteTraces(context.Background(), td)
	require.NoError(t, err)
	w := tracesWrite{st: st}
	if st.Written == 0 {
		require.Empty(t, c.inserts, "nothing to insert")
		return w
	}
	for table, dst := range map[string]*[]byte{"db.spans": &w.spans, "db.trace_summaries": &w.summaries,
		"db.resources": &w.groups} {
		require.Len(t, c.inserts[table], 1, "one insert into %s per call", table)
		*dst = c.inserts[table][0]
	}
	return w
}

// spanRows decodes the spans block with each row's resource_id replaced by
// the resource it names in the resources block, as the oracle's rows carry
// it.
func (w tracesWrite) spanRows(t testing.TB) []map[string]any {
	t.Helper()
	return withResources(t, decodeNative(t, w.spans), decodeNative(t, w.groups))
}

// withResources replaces the resource_id of each span or log row by the
// "resource" of the resources row of that id, which must be there once.
func withResources(t testing.TB, rows, resources []map[string]any) []map[string]any {
	t.Helper()
	byID := map[json.Number]any{}
	for _, r := range resources {
		id := r["resource_id"].(json.Number)
		require.NotContains(t, byID, id, "resource %s written twice", id)
		require.NotEqual(t, json.Number("0"), id)
		byID[id] = r["attributes"]
	}
	for _, row := range rows {
		id := row["resource_id"].(json.Number)
		require.Contains(t, byID, id, "a row names resource %s, which is not written", id)
		row["resource"] = byID[id]
		delete(row, "resource_id")
	}
	return rows
}

// traceRowsOracle sums up the oracle's span rows, trace by trace (a trace
// is its tenant's) in order of first appearance, as trace_summaries holds
// them (its materialized view's definition, schema 005).
func traceRowsOracle(t testing.TB, spans []map[string]any) (summaries []map[string]any) {
	t.Helper()
	type sum struct {
		id, tenant            string
		start, end            uint64
		rootService, rootName string
		spans, errors         uint64
		services              []any
	}
	var order []string
	sums := map[string]*sum{}
	for _, row := range spans {
		secs, nanos, _ := strings.Cut(row["timestamp"].(string), ".")
		s, err := strconv.ParseUint(secs, 10, 64)
		require.NoError(t, err)
		n, err := strconv.ParseUint(nanos, 10, 64)
		require.NoError(t, err)
		start := s*1e9 + n
		dur, err := strconv.ParseUint(string(row["duration_ns"].(json.Number)), 10, 64)
		require.NoError(t, err)
		id, service, tn := row["trace_id"].(string), row["service"].(string), row["tenant"].(string)
		key := tn + "/" + id
		x, ok := sums[key]
		if !ok {
			x = &sum{id: id, tenant: tn, start: start, end: start + dur}
			sums[key] = x
			order = append(order, key)
		}
		x.start, x.end = min(x.start, start), max(x.end, start+dur)
		x.spans++
		if row["status_code"] == "ERROR" {
			x.errors++
		}
		if row["parent_span_id"] == "" {
			x.rootService, x.rootName = max(x.rootService, service), max(x.rootName, row["name"].(string))
		}
		if !slices.Contains(x.services, any(service)) {
			x.services = append(x.services, service)
		}
	}
	num := func(v uint64) json.Number { return json.Number(strconv.FormatUint(v, 10)) }
	for _, key := range order {
		x := sums[key]
		summaries = append(summaries, map[string]any{"start": nanosText(x.start), "trace_id": x.id,
			"duration_ns": num(x.end - x.start), "root_service": x.rootService, "root_name": x.rootName,
			"span_count": num(x.spans), "error_count": num(x.errors), "services": x.services, "tenant": x.tenant})
	}
	return summaries
}

// writeLogs writes ld and returns the rows of its one insert into logs,
// each row's resource_id replaced by the resource it names (withResources),
// in one insert into resources before it.
func writeLogs(t testing.TB, ld plog.Logs) ([]map[string]any, WriteStats) {
	t.Helper()
	c := &captureConn{}
	st, err := NewWriter(c, "db").WriteLogs(context.Background(), ld)
	require.NoError(t, err)
	ins := c.inserts["db.logs"]
	if st.Written == 0 {
		require.Empty(t, ins, "nothing to insert")
		return nil, st
	}
	require.Len(t, ins, 1, "one insert per call")
	require.Len(t, c.inserts["db.resources"], 1, "one insert of resources per call")
	return withResources(t, decodeNative(t, ins[0]), decodeNative(t, c.inserts["db.resources"][0])), st
}

// decodeRows decodes JSONEachRow as ClickHouse and the reader see it: every
// line a JSON object, numbers kept exact, and the events and links columns,
// JSON in a string, decoded too (the reader is their only consumer).
func decodeRows(t testing.TB, data []byte) []map[string]any {
	t.Helper()
	if len(data) == 0 {
		return nil
	}
	require.True(t, utf8.Valid(data), "rows are valid UTF-8")
	require.True(t, bytes.HasSuffix(data, []byte("\n")), "every row ends its line")
	var rows []map[string]any
	for _, line := range bytes.Split(data[:len(data)-1], []byte("\n")) {
		require.True(t, json.Valid(line), "row is valid JSON: %q", line)
		row := decodeJSON(t, line).(map[string]any)
		for _, col := range []string{"events", "links"} {
			if s, ok := row[col].(string); ok {
				require.True(t, json.Valid([]byte(s)), "%s column is valid JSON: %q", col, s)
				row[col] = decodeJSON(t, []byte(s))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// decodeNative decodes a Native block into rows as decodeRows makes them of
// the same rows in JSON: times as "seconds.nanoseconds" text, integers as
// json.Number, maps with their repeated keys sorted, and the events and links
// columns decoded. Every string must be valid UTF-8 and the block must end
// where its last column does.
func decodeNative(t testing.TB, data []byte) []map[string]any {
	t.Helper()
	if len(data) == 0 {
		return nil
	}
	r := bytes.NewReader(data)
	uvarint := func() uint64 {
		v, err := binary.ReadUvarint(r)
		require.NoError(t, err)
		return v
	}
	str := func() string {
		n := uvarint()
		require.LessOrEqual(t, n, uint64(r.Len()), "string longer than the block")
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		require.NoError(t, err)
		require.True(t, utf8.Valid(b), "string is valid UTF-8: %q", b)
		return string(b)
	}
	u64 := func() uint64 {
		var b [8]byte
		_, err := io.ReadFull(r, b[:])
		require.NoError(t, err)
		return binary.LittleEndian.Uint64(b[:])
	}
	ncols, nrows := uvarint(), int(uvarint())
	rows := make([]map[string]any, nrows)
	for i := range rows {
		rows[i] = map[string]any{}
	}
	for range ncols {
		name, typ := str(), str()
		if typ == "Array(String)" {
			ends := make([]uint64, nrows)
			for i := range ends {
				ends[i] = u64()
			}
			start := uint64(0)
			for i := range nrows {
				require.LessOrEqual(t, start, ends[i], "array offsets grow")
				a := []any{}
				for range ends[i] - start {
					a = append(a, str())
				}
				rows[i][name] = a
				start = ends[i]
			}
			continue
		}
		if typ == "Map(Int32, UInt64)" { // RED's latency buckets
			ends := make([]uint64, nrows)
			for i := range ends {
				ends[i] = u64()
			}
			total := uint64(0)
			if nrows > 0 {
				total = ends[nrows-1]
			}
			keys := make([]int32, total)
			for i := range keys {
				var b [4]byte
				_, err := io.ReadFull(r, b[:])
				require.NoError(t, err)
				keys[i] = int32(binary.LittleEndian.Uint32(b[:]))
			}
			start := uint64(0)
			for i := range nrows {
				m := map[int32]uint64{}
				for j := start; j < ends[i]; j++ {
					m[keys[j]] = u64()
				}
				rows[i][name] = m
				start = ends[i]
			}
			continue
		}
		for i := range nrows {
			if typ == "Map(String, String)" {
				break
			}
			var v any
			switch typ {
			case "DateTime64(9)":
				v = nanosText(u64())
			case "UInt64":
				v = json.Number(strconv.FormatUint(u64(), 10))
			case "Int64":
				v = json.Number(strconv.FormatInt(int64(u64()), 10))
			case "Float64":
				v = math.Float64frombits(u64())
			case "UInt32", "DateTime":
				var b [4]byte
				_, err := io.ReadFull(r, b[:])
				require.NoError(t, err)
				v = json.Number(strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[:])), 10))
			case "UInt8":
				b, err := r.ReadByte()
				require.NoError(t, err)
				v = json.Number(strconv.Itoa(int(b)))
			case "FixedString(16)":
				// The span's and its parent's ids, as the reader's query
				// shows them (queries/trace_spans.sql).
				require.Equal(t, "ids", name)
				var b [16]byte
				_, err := io.ReadFull(r, b[:])
				require.NoError(t, err)
				require.NotEqual(t, [8]byte{}, [8]byte(b[:8]), "a span id of zeros")
				rows[i]["span_id"], rows[i]["parent_span_id"] = hex.EncodeToString(b[:8]), ""
				if [8]byte(b[8:]) != [8]byte{} {
					rows[i]["parent_span_id"] = hex.EncodeToString(b[8:])
				}
				continue
			case "String":
				s := str()
				v = s
				if name == "events" || name == "links" {
					if s == "" {
						s = "[]" // none, as the reader takes it
					}
					require.True(t, json.Valid([]byte(s)), "%s column is valid JSON: %q", name, s)
					v = decodeJSON(t, []byte(s))
				}
			default:
				t.Fatalf("column %s: unexpected type %s", name, typ)
			}
			rows[i][name] = v
		}
		if typ != "Map(String, String)" {
			continue
		}
		ends := make([]uint64, nrows)
		for i := range ends {
			ends[i] = u64()
		}
		total := uint64(0)
		if nrows > 0 {
			total = ends[nrows-1]
		}
		keys := make([]string, total)
		for i := range keys {
			keys[i] = str()
		}
		values := make([]string, total)
		for i := range values {
			values[i] = str()
		}
		start := uint64(0)
		for i := range nrows {
			require.LessOrEqual(t, start, ends[i], "map offsets grow")
			m := map[string]any{}
			for j := start; j < ends[i]; j++ {
				switch prev := m[keys[j]].(type) {
				case nil:
					m[keys[j]] = values[j]
				case repeated:
					m[keys[j]] = append(prev, values[j])
				default:
					m[keys[j]] = repeated{prev, values[j]}
				}
			}
			for k, v := range m {
				if rv, ok := v.(repeated); ok {
					slices.SortFunc(rv, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
					m[k] = rv
				}
			}
			rows[i][name] = m
			start = ends[i]
		}
	}
	require.Zero(t, r.Len(), "bytes after the last column")
	return rows
}

// decodeJSON decodes b like json.Unmarshal into an any, numbers kept as
// json.Number, except for a key that an object holds twice: encoding/json
// keeps the last value, where a ClickHouse Map stores both, so they are kept
// as repeated. (Both writers repeat a key only when distinct keys with invalid
// UTF-8 become the same string, each bad byte replaced by U+FFFD.)
func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := decodeValue(d)
	require.NoError(t, err, "%s", b)
	_, err = d.Token()
	require.ErrorIs(t, err, io.EOF, "one value in %s", b)
	return v
}

// repeated holds the values of a key an object has more than once, sorted:
// which one a reader sees depends on the order of the pairs.
type repeated []any

func decodeValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			key := k.(string)
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			switch prev := m[key].(type) {
			case nil:
				m[key] = v
			case repeated:
				m[key] = append(prev, v)
			default:
				m[key] = repeated{prev, v}
			}
		}
		for k, v := range m {
			if r, ok := v.(repeated); ok {
				slices.SortFunc(r, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
				m[k] = r
			}
		}
		_, err = d.Token() // '}'
		return m, err
	case json.Delim('['):
		a := []any{}
		for d.More() {
			v, err := decodeValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = d.Token() // ']'
		return a, err
	default:
		return tok, nil
	}
}

// requireSameTraces holds the writer's rows of td to the oracle's.
func requireSameTraces(t testing.TB, td ptrace.Traces) {
	t.Helper()
	want, wantSt := oldEncodeTraces(td)
	got := writeTraces(t, td)
	require.Equal(t, wantSt, got.st)
	wantRows := decodeRows(t, want)
	require.Equal(t, wantRows, got.spanRows(t), "old:\n%s", want)
	require.Equal(t, traceRowsOracle(t, wantRows), decodeNative(t, got.summaries), "trace_summaries")
}

func requireSameLogs(t testing.TB, ld plog.Logs) {
	t.Helper()
	want, wantSt := oldEncodeLogs(ld)
	got, gotSt := writeLogs(t, ld)
	require.Equal(t, wantSt, gotSt)
	wantRows := decodeRows(t, want)
	for _, row := range wantRows {
		// The logs table's severity_number is a UInt8: numbers outside
		// OTLP's range are stored as 0 (unset).
		if n, err := row["severity_number"].(json.Number).Int64(); err != nil || n < 0 || n > 255 {
			row["severity_number"] = json.Number("0")
		}
	}
	require.Equal(t, wantRows, got, "old:\n%s", want)
}

func allBytes() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}

// nastyStrings are strings a JSON encoder can get wrong.
var nastyStrings = []string{
	"",
	"plain",
	"ünïcödé ☃ 日本語",
	"emoji 😀👍🏽🏳️‍🌈",
	"\xff", "a\xffb", "\xc3", "\xe2\x82", "\xc3(", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\x80\x80\x80",
	"\ufffd", "\uffff", "\U0010ffff",
	"\x00", "a\x00b",
	"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f",
	"\x7f",
	"\u2028\u2029",
	`"quoted"`, `back\slash\`, `\"`, `\\\"`, `\u0041`, `"\/\b\f\n\r\t`,
	"\b\f\n\r\t",
	"<script>alert('&amp;')</script>",
	"}\n{\"injected\":1}",
	"'; DROP TABLE spans; --",
	allBytes(),
	strings.Repeat("x", 5000),
	strings.Repeat("é\"\\\x01\xff", 1000),
}

func nastyTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	for i, s := range nastyStrings {
		rs := td.ResourceSpans().AppendEmpty()
		ra := rs.Resource().Attributes()
		ra.PutStr("service.name", s)
		ra.PutStr("host.name", s)
		ra.PutStr(s, s)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(s)
		ss.Scope().SetVersion(s)
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{0xab, byte(i)})
		sp.SetSpanID(pcommon.SpanID{0xcd, byte(i)})
		sp.SetParentSpanID(pcommon.SpanID{0xef, byte(i)})
		sp.TraceState().FromRaw(s)
		sp.SetName(s)
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetStartTimestamp(1700000000123456789)
		sp.SetEndTimestamp(1700000000223456789)
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(s)
		sp.Attributes().PutStr(s, s)
		sp.Attributes().PutStr("k", s)
		sp.Attributes().PutEmptySlice("slice").AppendEmpty().SetStr(s)
		sp.Attributes().PutEmptyMap("map").PutStr(s, s)
		sp.Attributes().PutEmptyBytes("bytes").FromRaw([]byte(s))
		ev := sp.Events().AppendEmpty()
		ev.SetName(s)
		ev.SetTimestamp(1700000000123456790)
		ev.Attributes().PutStr(s, s)
		ev.Attributes().PutStr("exception.message", s)
		l := sp.Links().AppendEmpty()
		l.SetTraceID(pcommon.TraceID{1, byte(i)})
		l.SetSpanID(pcommon.SpanID{2, byte(i)})
		l.TraceState().FromRaw(s)
		l.Attributes().PutStr(s, s)
	}
	return td
}

func nastyLogs() plog.Logs {
	ld := plog.NewLogs()
	for i, s := range nastyStrings {
		rl := ld.ResourceLogs().AppendEmpty()
		ra := rl.Resource().Attributes()
		ra.PutStr("service.name", s)
		ra.PutStr("k8s.pod.name", s)
		ra.PutStr(s, s)
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName(s)
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(1700000000123456789)
		lr.SetObservedTimestamp(1700000000123456799)
		lr.SetTraceID(pcommon.TraceID{0xab, byte(i)})
		lr.SetSpanID(pcommon.SpanID{0xcd, byte(i)})
		lr.SetSeverityText(s)
		lr.SetSeverityNumber(plog.SeverityNumberError)
		lr.Body().SetStr(s)
		lr.Attributes().PutStr(s, s)
		lr.Attributes().PutStr("k", s)
		mb := sl.LogRecords().AppendEmpty()
		mb.Body().SetEmptyMap().PutStr(s, s)
		mb.Body().Map().PutEmptySlice("list").AppendEmpty().SetStr(s)
	}
	return ld
}

// attrValues covers every value type and the numbers at their edges.
func attrValues(m pcommon.Map) {
	m.PutEmpty("empty")
	m.PutStr("str", "s")
	m.PutBool("true", true)
	m.PutBool("false", false)
	for i, n := range []int64{0, 1, -1, 200, math.MaxInt64, math.MinInt64} {
		m.PutInt("int"+strconv.Itoa(i), n)
	}
	for i, f := range []float64{0, math.Copysign(0, -1), 0.1, -2.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, 5e-324,
		math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1), 1.0 / 3} {
		m.PutDouble("double"+strconv.Itoa(i), f)
	}
	m.PutEmptyBytes("bytes.empty")
	m.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 0xfe, 0xff})
	m.PutEmptyMap("map.empty")
	nested := m.PutEmptyMap("map")
	nested.PutInt("n", 1)
	nested.PutEmptyMap("inner").PutBool("b", true)
	nested.PutStr("html", "<&>")
	m.PutEmptySlice("slice.empty")
	sl := m.PutEmptySlice("slice")
	sl.AppendEmpty().SetInt(1)
	sl.AppendEmpty().SetStr("two")
	sl.AppendEmpty().SetDouble(3.5)
	sl.AppendEmpty()
}

// fromJSON builds pdata from OTLP/JSON; it is how the tests make maps with
// duplicate keys, which the pdata setters never make.
func tracesFromJSON(t testing.TB, s string) ptrace.Traces {
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(s))
	require.NoError(t, err)
	return td
}

func logsFromJSON(t testing.TB, s string) plog.Logs {
	ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs([]byte(s))
	require.NoError(t, err)
	return ld
}

// dupAttrs is an OTLP/JSON attribute list with repeated keys.
const dupAttrs = `[{"key":"a","value":{"stringValue":"1"}},{"key":"b","value":{"intValue":"2"}},
	{"key":"a","value":{"stringValue":"3"}},{"key":"c","value":{}},{"key":"a","value":{"boolValue":true}},
	{"key":"b","value":{"stringValue":"last b"}}]`

func manyAttrs(m pcommon.Map, n int) {
	for i := range n {
		m.PutStr(fmt.Sprintf("attr.%03d", n-i), strings.Repeat("v", i))
	}
}

func TestWriteTracesMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name  string
		build func(t testing.TB) ptrace.Traces
	}{
		{"nasty strings everywhere", func(testing.TB) ptrace.Traces { return nastyTraces() }},
		{"every value type", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			attrValues(rs.Resource().Attributes())
			sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{1})
			sp.SetSpanID(pcommon.SpanID{1})
			attrValues(sp.Attributes())
			attrValues(sp.Events().AppendEmpty().Attributes())
			attrValues(sp.Links().AppendEmpty().Attributes())
			return td
		}},
		{"empty everything", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{1})
			sp.SetSpanID(pcommon.SpanID{1})
			sp.Events().AppendEmpty()
			sp.Links().AppendEmpty()
			return td
		}},
		{"service and host fallbacks", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			for i, attrs := range []map[string]any{
				{},
				{"service.name": ""},
				{"service.name": 42, "host.id": "id-1", "k8s.pod.name": "pod"},
				{"host.name": "", "host.id": "", "k8s.pod.name": "pod"},
				{"host.name": true, "host.id": "id-1"},
			} {
				rs := td.ResourceSpans().AppendEmpty()
				require.NoError(t, rs.Resource().Attributes().FromRaw(attrs))
				sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
				sp.SetTraceID(pcommon.TraceID{byte(i + 1)})
				sp.SetSpanID(pcommon.SpanID{1})
			}
			return td
		}},
		{"kinds, statuses, times and ids", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
			times := [][2]pcommon.Timestamp{{0, 0}, {1, 0}, {0, math.MaxUint64}, {math.MaxUint64, math.MaxUint64},
				{math.MaxUint64, 0}, {999999999, 1000000000}, {1e9, 1e9 + 1}, {1700000000000000000, 1700000000000000001}}
			for i := range 8 {
				sp := ss.Spans().AppendEmpty()
				sp.SetTraceID(pcommon.TraceID{0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(i)})
				sp.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, byte(i + 1)})
				if i%2 == 0 {
					sp.SetParentSpanID(pcommon.SpanID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, byte(i)})
				}
				sp.SetKind(ptrace.SpanKind(i))
				sp.Status().SetCode(ptrace.StatusCode(i % 4))
				sp.SetStartTimestamp(times[i][0])
				sp.SetEndTimestamp(times[i][1])
				l := sp.Links().AppendEmpty()
				if i%2 == 1 {
					l.SetTraceID(pcommon.TraceID{byte(i)})
				}
				if i%3 == 0 {
					l.SetSpanID(pcommon.SpanID{byte(i)})
				}
				sp.Events().AppendEmpty().SetTimestamp(times[i][1])
			}
			return td
		}},
		{"invalid spans are skipped", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
			spans.AppendEmpty().SetName("no ids")
			spans.AppendEmpty().SetTraceID(pcommon.TraceID{1})
			spans.AppendEmpty().SetSpanID(pcommon.SpanID{1})
			ok := spans.AppendEmpty()
			ok.SetTraceID(pcommon.TraceID{1})
			ok.SetSpanID(pcommon.SpanID{1})
			return td
		}},
		{"only invalid spans", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			return td
		}},
		{"no spans", func(testing.TB) ptrace.Traces { return ptrace.NewTraces() }},
		{"keys that invalid UTF-8 makes equal", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("\xd9", "first")
			rs.Resource().Attributes().PutStr("\x80", "second")
			sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{1})
			sp.SetSpanID(pcommon.SpanID{1})
			for i, k := range []string{"\xff", "a\xc3", "\x80", "a\xff", "\ufffd"} {
				sp.Attributes().PutInt(k, int64(i))
				sp.Events().AppendEmpty().Attributes().PutInt(k, int64(i))
			}
			return td
		}},
		{"many resources, scopes and spans", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			for r := range 3 {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", fmt.Sprint("svc-", r))
				manyAttrs(rs.Resource().Attributes(), r*20)
				for s := range 3 {
					ss := rs.ScopeSpans().AppendEmpty()
					ss.Scope().SetName(fmt.Sprint("scope-", s))
					for k := range 4 {
						sp := ss.Spans().AppendEmpty()
						sp.SetTraceID(pcommon.TraceID{byte(r), byte(s), byte(k)})
						sp.SetSpanID(pcommon.SpanID{byte(r), byte(s), byte(k)})
						manyAttrs(sp.Attributes(), k*12)
					}
				}
			}
			return td
		}},
		{"traces across resources: several roots, errors, the same resource twice", func(testing.TB) ptrace.Traces {
			td := ptrace.NewTraces()
			// Resource blocks a, b, a again (the same attributes: one
			// resource row); spans of traces 1 and 2 interleaved in each.
			for _, svc := range []string{"a", "b\xff", "a"} {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", svc)
				spans := rs.ScopeSpans().AppendEmpty().Spans()
				// Trace 1: two roots, whose names compare one way as
				// sent and the other way as stored; trace 2: a child and
				// a root.
				for i, name := range []string{"\xf5", "child", "\xf0\x9f\x98\x80", "z"} {
					sp := spans.AppendEmpty()
					sp.SetTraceID(pcommon.TraceID{byte(1 + i%2)})
					sp.SetSpanID(pcommon.SpanID{byte(len(svc)), byte(i), 1})
					if i == 1 {
						sp.SetParentSpanID(pcommon.SpanID{9})
					}
					sp.SetName(name)
					sp.SetStartTimestamp(pcommon.Timestamp(1000 + 10*i + len(svc)))
					sp.SetEndTimestamp(pcommon.Timestamp(1000 + 30*i - len(svc)))
					if i == 3 {
						sp.Status().SetCode(ptrace.StatusCodeError)
					}
				}
			}
			return td
		}},
		{"duplicate keys: the last one wins", func(t testing.TB) ptrace.Traces {
			many := make([]string, 0, 80)
			for i := range 40 {
				many = append(many, fmt.Sprintf(`{"key":"k%d","value":{"intValue":"%d"}}`, i%37, i))
			}
			return tracesFromJSON(t, `{"resourceSpans":[{"resource":{"attributes":`+dupAttrs+`},"scopeSpans":[{"spans":[
				{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","attributes":`+dupAttrs+`,
				 "events":[{"name":"e","attributes":`+dupAttrs+`}],"links":[{"traceId":"0102030405060708090a0b0c0d0e0f10","attributes":`+dupAttrs+`}]},
				{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060709","attributes":[`+strings.Join(many, ",")+`]}
			]}]}]}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSameTraces(t, tt.build(t))
		})
	}
}

func TestWriteLogsMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name  string
		build func(t testing.TB) plog.Logs
	}{
		{"nasty strings everywhere", func(testing.TB) plog.Logs { return nastyLogs() }},
		{"every value type", func(testing.TB) plog.Logs {
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			attrValues(rl.Resource().Attributes())
			recs := rl.ScopeLogs().AppendEmpty().LogRecords()
			attrValues(recs.AppendEmpty().Attributes())
			var bodies pcommon.Map = pcommon.NewMap()
			attrValues(bodies)
			for _, v := range bodies.All() {
				v.CopyTo(recs.AppendEmpty().Body())
			}
			return ld
		}},
		{"times, ids and severities", func(testing.TB) plog.Logs {
			ld := plog.NewLogs()
			recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
			times := [][2]pcommon.Timestamp{{0, 0}, {1, 0}, {0, 1}, {5, 7}, {math.MaxUint64, 0}, {0, math.MaxUint64}}
			sevs := []plog.SeverityNumber{0, 1, 9, 17, 24, 255, -1, math.MaxInt32, math.MinInt32}
			i := 0
			for _, tm := range times {
				for _, sev := range sevs {
					lr := recs.AppendEmpty()
					lr.SetTimestamp(tm[0])
					lr.SetObservedTimestamp(tm[1])
					lr.SetSeverityNumber(sev)
					switch i % 4 {
					case 1:
						lr.SetTraceID(pcommon.TraceID{byte(i)})
					case 2:
						lr.SetTraceID(pcommon.TraceID{byte(i)})
						lr.SetSpanID(pcommon.SpanID{byte(i)})
					case 3:
						lr.SetSpanID(pcommon.SpanID{byte(i)}) // no trace: not linked
					}
					i++
				}
			}
			return ld
		}},
		{"empty everything", func(testing.TB) plog.Logs {
			ld := plog.NewLogs()
			ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
			return ld
		}},
		{"no records", func(testing.TB) plog.Logs { return plog.NewLogs() }},
		{"duplicate keys: the last one wins", func(t testing.TB) plog.Logs {
			return logsFromJSON(t, `{"resourceLogs":[{"resource":{"attributes":`+dupAttrs+`},"scopeLogs":[{"logRecords":[
				{"body":{"stringValue":"x"},"attributes":`+dupAttrs+`},
				{"body":{"kvlistValue":{"values":`+dupAttrs+`}}}
			]}]}]}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSameLogs(t, tt.build(t))
		})
	}
}

// TestRowFormat pins a span and a log row, and the start of a block.
func TestRowFormat(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	rs.Resource().Attributes().PutStr("host.name", "node-1")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("io.otel")
	ss.Scope().SetVersion("1.2")
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{0xab, 0xcd, 15: 1})
	sp.SetSpanID(pcommon.SpanID{0x12, 7: 2})
	sp.SetName(`GET "/a"`)
	sp.SetKind(ptrace.SpanKindServer)
	sp.SetStartTimestamp(1700000000000000001)
	sp.SetEndTimestamp(1700000000250000001)
	sp.Status().SetCode(ptrace.StatusCodeError)
	sp.Status().SetMessage("it's\tbroken")
	sp.Attributes().PutInt("http.response.status_code", 500)
	sp.Attributes().PutStr("b", "<\x01\xff>")
	ev := sp.Events().AppendEmpty()
	ev.SetTimestamp(1700000000000000002)
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.message", `say "hi"`)

	got := writeTraces(t, td)
	// The block's header: 18 columns, 1 row, then the first column's name
	// and type and its one value.
	assert.Equal(t, "\x12\x01\x09timestamp\x0dDateTime64(9)\x01\x00\x2a\x36\xfe\x9c\x97\x17", string(got.spans[:34]))
	assert.Equal(t, []map[string]any{{
		"timestamp": "1700000000.000000001", "trace_id": "abcd0000000000000000000000000001",
		"span_id": "1200000000000002", "parent_span_id": "", "trace_state": "", "name": `GET "/a"`, "kind": "server",
		"service": "checkout", "host": "node-1", "duration_ns": json.Number("250000000"), "status_code": "ERROR",
		"status_message": "it's\tbroken",
		"attributes":     map[string]any{"http.response.status_code": "500", "b": "<\x01\ufffd>"},
		"resource":       map[string]any{"service.name": "checkout", "host.name": "node-1"},
		"scope_name":     "io.otel", "scope_version": "1.2",
		"events": []any{map[string]any{"timeUnixNano": "1700000000000000002", "name": "exception",
			"attributes": map[string]any{"exception.message": `say "hi"`}}},
		"links": []any{}, "tenant": "default",
	}}, got.spanRows(t))
	resource := decodeNative(t, got.groups)
	require.Len(t, resource, 1)
	assert.Equal(t, json.Number("1700000000"), resource[0]["last_seen"], "the time of its last span, in seconds")
	assert.Equal(t, []map[string]any{{"start": "1700000000.000000001", "duration_ns": json.Number("250000000"),
		"trace_id": "abcd0000000000000000000000000001", "root_service": "checkout", "root_name": `GET "/a"`,
		"span_count": json.Number("1"), "error_count": json.Number("1"), "services": []any{"checkout"},
		"tenant": "default"}}, decodeNative(t, got.summaries))

	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "checkout")
	sl := rl.ScopeLogs().AppendEmpty()
	lr := sl.LogRecords().AppendEmpty()
	lr.SetObservedTimestamp(1700000000000000003)
	lr.SetTraceID(pcommon.TraceID{0xab, 0xcd, 15: 1})
	lr.SetSpanID(pcommon.SpanID{0x12, 7: 2})
	lr.SetSeverityText("ERROR")
	lr.SetSeverityNumber(plog.SeverityNumberError)
	lr.Body().SetStr("line\n")
	logs, _ := writeLogs(t, ld)
	assert.Equal(t, []map[string]any{{
		"timestamp": "1700000000.000000003", "observed_timestamp": "1700000000.000000003",
		"trace_id": "abcd0000000000000000000000000001", "span_id": "1200000000000002", "severity_text": "ERROR",
		"severity_number": json.Number("17"), "service": "checkout", "host": "", "body": "line\n",
		"attributes": map[string]any{}, "resource": map[string]any{"service.name": "checkout"}, "scope_name": "",
		"tenant": "default",
	}}, logs)
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	check := func(s string) {
		got := appendString([]byte("prefix"), s)
		require.True(t, bytes.HasPrefix(got, []byte("prefix")))
		got = got[len("prefix"):]
		require.True(t, utf8.Valid(got), "%q", s)
		require.True(t, json.Valid(got), "%q", s)
		want, err := json.Marshal(s)
		require.NoError(t, err)
		var g, w string
		require.NoError(t, json.Unmarshal(got, &g))
		require.NoError(t, json.Unmarshal(want, &w))
		require.Equal(t, w, g, "%q", s)
	}
	for _, s := range nastyStrings {
		check(s)
	}
	for c := range 256 {
		check(string([]byte{byte(c)}))
		check("a" + string([]byte{byte(c)}) + "é")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		check(string(b))
	}
}

func TestNanoTimeText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	values := []uint64{0, 1, 9, 10, 999999999, 1e9, 1e9 + 1, 1700000000000000001, math.MaxInt64, math.MaxUint64}
	for range 1000 {
		values = append(values, rng.Uint64(), rng.Uint64N(1e12))
	}
	for _, ns := range values {
		require.Equal(t, oldNanosText(ns), nanosText(ns))
		b, err := nanoTime(ns).MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, `"`+oldNanosText(ns)+`"`, string(b))
	}
}

// TestWriterReusesBuffers writes batches one after another and at once: each
// insert must carry its own rows, whatever the pooled buffers held before.
func TestWriterReusesBuffers(t *testing.T) {
	c := &captureConn{}
	w := NewWriter(c, "db")
	batch := func(n int) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprint("svc-", n))
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for i := range n%7 + 1 {
			sp := spans.AppendEmpty()
			sp.SetTraceID(pcommon.TraceID{byte(n), byte(i), 0xff})
			sp.SetSpanID(pcommon.SpanID{byte(n), byte(i), 0xff})
			sp.SetName(strings.Repeat("n", n*10))
			manyAttrs(sp.Attributes(), n%40)
		}
		return td
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 10 {
				_, err := w.WriteTraces(context.Background(), batch(g*10+i))
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, 40, len(c.inserts["db.spans"]))
	require.Equal(t, 40, len(c.inserts["db.resources"]), "one resource a batch, each its own")
	var resources []map[string]any
	for _, b := range c.inserts["db.resources"] {
		resources = append(resources, decodeNative(t, b)...)
	}
	want := map[string]bool{}
	for n := range 40 {
		b, _ := oldEncodeTraces(batch(n))
		want[fmt.Sprint(decodeRows(t, b))] = true
	}
	for _, got := range c.inserts["db.spans"] {
		key := fmt.Sprint(withResources(t, decodeNative(t, got), resources))
		require.True(t, want[key], "an insert matches no batch:\n%s", got)
		delete(want, key)
	}
}

func FuzzAppendSpanRow(f *testing.F) {
	f.Add("GET /a", "http.route", "/a", int64(200), 0.5, uint64(1700000000123456789))
	f.Add("", "", "", int64(0), 0.0, uint64(0))
	f.Add("\xff\x00\"\\", "\u2028", "<&>\x1f", int64(math.MinInt64), math.Inf(1), uint64(math.MaxUint64))
	f.Add("😀", "a\xc3", "\xed\xa0\x80", int64(-1), 1e21, uint64(1))
	f.Fuzz(func(t *testing.T, name, key, value string, n int64, d float64, ts uint64) {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", value)
		rs.Resource().Attributes().PutStr("host.name", name)
		rs.Resource().Attributes().PutStr(key, name)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName(key)
		ss.Scope().SetVersion(value)
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{byte(n), 15: byte(ts)})
		sp.SetSpanID(pcommon.SpanID{byte(ts), 7: 1})
		sp.SetParentSpanID(pcommon.SpanID{byte(n)})
		sp.TraceState().FromRaw(value)
		sp.SetName(name)
		sp.SetKind(ptrace.SpanKind(n & 7))
		sp.SetStartTimestamp(pcommon.Timestamp(ts))
		sp.SetEndTimestamp(pcommon.Timestamp(ts + uint64(n)))
		sp.Status().SetCode(ptrace.StatusCode(n & 3))
		sp.Status().SetMessage(value)
		a := sp.Attributes()
		a.PutStr(key, value)
		a.PutStr(value, key)
		a.PutStr(name, name)
		a.PutInt("n", n)
		a.PutDouble("d", d)
		a.PutBool(key+"?", n%2 == 0)
		a.PutEmptyBytes("raw").FromRaw([]byte(name))
		a.PutEmptySlice("list").AppendEmpty().SetStr(value)
		ev := sp.Events().AppendEmpty()
		ev.SetTimestamp(pcommon.Timestamp(ts))
		ev.SetName(name)
		ev.Attributes().PutStr(key, value)
		l := sp.Links().AppendEmpty()
		l.SetTraceID(pcommon.TraceID{byte(ts)})
		l.Attributes().PutStr(value, name)
		requireSameTraces(t, td)
	})
}

func FuzzAppendLogRow(f *testing.F) {
	f.Add("message", "logger", "app", int32(9), uint64(1700000000123456789), uint64(0))
	f.Add("\xff\x00\"\\\n", "\u2029", "<&>", int32(-1), uint64(0), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, body, key, value string, sev int32, ts, observed uint64) {
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", value)
		rl.Resource().Attributes().PutStr(key, body)
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName(key)
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(ts))
		lr.SetObservedTimestamp(pcommon.Timestamp(observed))
		if sev%2 == 0 {
			lr.SetTraceID(pcommon.TraceID{byte(ts), 15: 1})
		}
		lr.SetSpanID(pcommon.SpanID{byte(observed), 7: 1})
		lr.SetSeverityNumber(plog.SeverityNumber(sev))
		lr.SetSeverityText(value)
		lr.Body().SetStr(body)
		lr.Attributes().PutStr(key, value)
		lr.Attributes().PutStr(value, body)
		lr.Attributes().PutInt("sev", int64(sev))
		mb := sl.LogRecords().AppendEmpty()
		m := mb.Body().SetEmptyMap()
		m.PutStr(key, body)
		m.PutStr(value, key)
		requireSameLogs(t, ld)
	})
}

// benchSpans is a batch of n realistic HTTP server spans of one resource,
// ten attributes each; every tenth has an exception event.
func benchSpans(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	ra := rs.Resource().Attributes()
	ra.PutStr("service.name", "checkout")
	ra.PutStr("service.version", "2.14.1")
	ra.PutStr("service.instance.id", "6f1d2c3e-9a7b-4c1e-8f00-1b2c3d4e5f60")
	ra.PutStr("host.name", "ip-10-1-2-3.eu-west-1.compute.internal")
	ra.PutStr("deployment.environment.name", "production")
	ra.PutStr("telemetry.sdk.language", "java")
	ra.PutStr("telemetry.sdk.name", "opentelemetry")
	ra.PutInt("process.pid", 4242)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("io.opentelemetry.tomcat-10.0")
	ss.Scope().SetVersion("2.10.0-alpha")
	for i := range n {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, byte(i >> 8), byte(i)})
		s.SetSpanID(pcommon.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, byte(i >> 8), byte(i)})
		s.SetParentSpanID(pcommon.SpanID{0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, byte(i >> 8), byte(i)})
		s.SetName("GET /api/orders/{id}")
		s.SetKind(ptrace.SpanKindServer)
		s.SetStartTimestamp(pcommon.Timestamp(1700000000123456789 + int64(i)*1000))
		s.SetEndTimestamp(pcommon.Timestamp(1700000000223456789 + int64(i)*1000))
		a := s.Attributes()
		a.PutStr("http.request.method", "GET")
		a.PutStr("http.route", "/api/orders/{id}")
		a.PutStr("url.path", "/api/orders/12345")
		a.PutStr("url.scheme", "https")
		a.PutInt("http.response.status_code", 200)
		a.PutStr("server.address", "orders.internal")
		a.PutInt("server.port", 8443)
		a.PutStr("user_agent.original", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0")
		a.PutStr("network.protocol.version", "1.1")
		a.PutStr("client.address", "10.1.2.3")
		if i%10 == 9 {
			s.Status().SetCode(ptrace.StatusCodeError)
			ev := s.Events().AppendEmpty()
			ev.SetName("exception")
			ev.SetTimestamp(s.EndTimestamp())
			ev.Attributes().PutStr("exception.type", "java.lang.IllegalStateException")
			ev.Attributes().PutStr("exception.message", "order 12345 is \"locked\"")
			ev.Attributes().PutStr("exception.stacktrace", "java.lang.IllegalStateException: locked\n\tat com.example.Orders.get(Orders.java:42)\n\tat com.example.Api.handle(Api.java:17)")
		}
	}
	return td
}

func benchLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	ra := rl.Resource().Attributes()
	ra.PutStr("service.name", "checkout")
	ra.PutStr("service.version", "2.14.1")
	ra.PutStr("host.name", "ip-10-1-2-3.eu-west-1.compute.internal")
	ra.PutStr("deployment.environment.name", "production")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("com.example.Orders")
	for i := range n {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(1700000000123456789 + int64(i)*1000))
		lr.SetObservedTimestamp(pcommon.Timestamp(1700000000123999999 + int64(i)*1000))
		lr.SetTraceID(pcommon.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, byte(i >> 8), byte(i)})
		lr.SetSpanID(pcommon.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, byte(i >> 8), byte(i)})
		lr.SetSeverityText("WARN")
		lr.SetSeverityNumber(plog.SeverityNumberWarn)
		lr.Body().SetStr("order 12345: payment provider answered 503 after 1.2s, retrying (attempt 2 of 3)")
		a := lr.Attributes()
		a.PutStr("logger.name", "com.example.orders.PaymentClient")
		a.PutStr("thread.name", "http-nio-8443-exec-7")
		a.PutStr("code.function", "charge")
		a.PutInt("code.lineno", 118)
	}
	return ld
}

// BenchmarkSpanRow is the cost of one span row, its resource's columns
// encoded once beforehand (as both writers do). encoding_json is the old
// path, pdata to spanRow to encoding/json; encoding_json_encode_only leaves
// out building the spanRow; append is rowEncoder.
func BenchmarkSpanRow(b *testing.B) {
	rs := benchSpans(1).ResourceSpans().At(0)
	ss := rs.ScopeSpans().At(0)
	sp := ss.Spans().At(0)
	b.Run("encoding_json", func(b *testing.B) {
		res := oldAttrMap(rs.Resource().Attributes())
		service, host := serviceAndHost(rs.Resource().Attributes())
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			row := oldSpanRow(sp, ss.Scope(), res, service, host)
			_ = enc.Encode(&row)
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run("encoding_json_encode_only", func(b *testing.B) {
		res := oldAttrMap(rs.Resource().Attributes())
		service, host := serviceAndHost(rs.Resource().Attributes())
		row := oldSpanRow(sp, ss.Scope(), res, service, host)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(&row)
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run("native", func(b *testing.B) {
		e := getRowEncoder(spanColumns)
		defer putRowEncoder(e)
		e.setSpanResource(rs.Resource().Attributes())
		b.ReportAllocs()
		for b.Loop() {
			// The row, and its span counted in its trace's summary.
			e.block.reset(spanColumns)
			e.appendSpanRow(ss.Scope(), sp)
		}
		b.SetBytes(int64(e.block.size()))
	})
}

// BenchmarkLogRow is BenchmarkSpanRow for a log record.
func BenchmarkLogRow(b *testing.B) {
	rl := benchLogs(1).ResourceLogs().At(0)
	sl := rl.ScopeLogs().At(0)
	lr := sl.LogRecords().At(0)
	b.Run("encoding_json", func(b *testing.B) {
		res := oldAttrMap(rl.Resource().Attributes())
		service, host := serviceAndHost(rl.Resource().Attributes())
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			row := oldLogRow(lr, sl.Scope(), res, service, host)
			_ = enc.Encode(&row)
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run("encoding_json_encode_only", func(b *testing.B) {
		res := oldAttrMap(rl.Resource().Attributes())
		service, host := serviceAndHost(rl.Resource().Attributes())
		row := oldLogRow(lr, sl.Scope(), res, service, host)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(&row)
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run("native", func(b *testing.B) {
		e := getRowEncoder(logColumns)
		defer putRowEncoder(e)
		e.setRowResource(rl.Resource().Attributes())
		ts, observed := logTimes(lr)
		b.ReportAllocs()
		for b.Loop() {
			e.block.reset(logColumns)
			e.appendLogRow(sl.Scope(), lr, ts, observed)
		}
		b.SetBytes(int64(e.block.size()))
	})
}

// BenchmarkWriteTraces is a whole 100-span batch through the writer, into a
// connection that drops it.
func BenchmarkWriteTraces(b *testing.B) {
	td := benchSpans(100)
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rows, _ := oldEncodeTraces(td)
			_ = discardConn{}.Insert(context.Background(), "db.spans", FormatJSONEachRow, rows)
		}
	})
	b.Run("native", func(b *testing.B) {
		w := NewWriter(discardConn{}, "db")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := w.WriteTraces(context.Background(), td); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkWriteLogs is BenchmarkWriteTraces for 100 log records.
func BenchmarkWriteLogs(b *testing.B) {
	ld := benchLogs(100)
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rows, _ := oldEncodeLogs(ld)
			_ = discardConn{}.Insert(context.Background(), "db.logs", FormatJSONEachRow, rows)
		}
	})
	b.Run("native", func(b *testing.B) {
		w := NewWriter(discardConn{}, "db")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := w.WriteLogs(context.Background(), ld); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A resource is written the first time the writer meets it, then again only
// when its spans are an hour or more past the last_seen it stored; a write
// that failed is not remembered.
func TestResourcesWrittenOnceAnHour(t *testing.T) {
	batch := func(service string, at time.Duration) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(pcommon.SpanID{1})
		sp.SetStartTimestamp(pcommon.Timestamp(1_700_000_000*time.Second + at))
		return td
	}
	c := &captureConn{}
	w := NewWriter(c, "db")
	written := func() []any {
		var out []any
		for _, b := range c.inserts["db.resources"] {
			for _, row := range decodeNative(t, b) {
				out = append(out, []any{row["attributes"].(map[string]any)["service.name"], row["last_seen"]})
			}
		}
		c.inserts["db.resources"] = nil
		return out
	}
	for _, step := range []struct {
		service string
		at      time.Duration
		want    []any
	}{
		{"a", 0, []any{[]any{"a", json.Number("1700000000")}}},
		{"a", 59 * time.Minute, nil},
		{"b", 59 * time.Minute, []any{[]any{"b", json.Number("1700003540")}}},
		{"a", -time.Hour, nil}, // older spans: the stored row covers them
		{"a", 60 * time.Minute, []any{[]any{"a", json.Number("1700003600")}}},
		{"a", 61 * time.Minute, nil},
	} {
		_, err := w.WriteTraces(context.Background(), batch(step.service, step.at))
		require.NoError(t, err)
		assert.Equal(t, step.want, written(), "%s at %s", step.service, step.at)
	}

	// A resources insert that fails is tried again with the batch.
	f := &failingInserts{fail: "db.resources"}
	w = NewWriter(f, "db")
	_, err := w.WriteTraces(context.Background(), batch("c", 0))
	require.Error(t, err)
	f.fail = ""
	_, err = w.WriteTraces(context.Background(), batch("c", 0))
	require.NoError(t, err)
	assert.Len(t, f.inserts["db.resources"], 1, "written by the retry")
}

// failingInserts is a captureConn whose inserts into one table fail.
type failingInserts struct {
	captureConn
	fail string
}

func (c *failingInserts) Insert(ctx context.Context, table string, f Format, rows []byte) error {
	if table == c.fail {
		return errors.New("connection refused")
	}
	return c.captureConn.Insert(ctx, table, f, rows)
}

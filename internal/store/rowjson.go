package store

import (
	"encoding/hex"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// rowEncoder builds a JSONEachRow batch (one JSON object a line) of spans or
// log records straight from pdata, without reflection or intermediate maps.
//
// A row means what encoding/json makes of the spanRow or logRow the reader
// decodes it into: the same keys and values, strings escaped by the same
// rules, invalid UTF-8 included (each bad byte becomes U+FFFD). Two things
// differ and matter neither to ClickHouse nor to the reader: map keys keep
// their pdata order instead of being sorted, and <, >, &, U+2028 and U+2029
// are written as they are rather than as \u escapes.
//
// An encoder serves one goroutine at a time. WriteTraces and WriteLogs take
// one from a pool, so its buffers serve batch after batch.
type rowEncoder struct {
	buf []byte // the batch

	// The columns that every row of the current resource repeats, encoded
	// once as JSON values: service, host and resource are sub-slices of res.
	res                     []byte
	service, host, resource []byte

	tmp    []byte   // events or links JSON, before it is quoted as a string column
	keys   []string // a map's keys, to find duplicates
	sorted []string // the same, sorted, for large maps
}

var rowEncoders = sync.Pool{New: func() any { return new(rowEncoder) }}

// maxPooledBuffer bounds the buffers an encoder keeps for reuse, so that one
// huge batch does not pin its memory.
const maxPooledBuffer = 16 << 20

// getRowEncoder returns an encoder with an empty batch. The batch is only
// valid until putRowEncoder: Conn.Insert does not keep it.
func getRowEncoder() *rowEncoder { return rowEncoders.Get().(*rowEncoder) }

func putRowEncoder(e *rowEncoder) {
	if cap(e.buf) > maxPooledBuffer {
		e.buf = nil
	}
	if cap(e.tmp) > maxPooledBuffer {
		e.tmp = nil
	}
	e.buf = e.buf[:0]
	// Do not keep the pdata's strings alive while pooled.
	clear(e.keys[:cap(e.keys)])
	clear(e.sorted[:cap(e.sorted)])
	rowEncoders.Put(e)
}

// setResource encodes the columns that every row of a resource repeats.
func (e *rowEncoder) setResource(attrs pcommon.Map) {
	service, host := serviceAndHost(attrs)
	b := appendString(e.res[:0], service)
	endService := len(b)
	b = appendString(b, host)
	endHost := len(b)
	b = e.appendAttrs(b, attrs)
	e.res = b
	e.service, e.host, e.resource = b[:endService], b[endService:endHost], b[endHost:]
}

// appendSpanRow appends s, of the current resource, as a row of the spans
// table (see spanRow).
func (e *rowEncoder) appendSpanRow(scope pcommon.InstrumentationScope, s ptrace.Span) {
	b := e.buf
	b = append(b, `{"timestamp":`...)
	b = appendNanoTime(b, uint64(s.StartTimestamp()))
	b = append(b, `,"trace_id":`...)
	b = appendTraceID(b, s.TraceID())
	b = append(b, `,"span_id":`...)
	b = appendSpanID(b, s.SpanID())
	b = append(b, `,"parent_span_id":`...)
	b = appendSpanID(b, s.ParentSpanID())
	b = append(b, `,"trace_state":`...)
	b = appendString(b, s.TraceState().AsRaw())
	b = append(b, `,"name":`...)
	b = appendString(b, s.Name())
	b = append(b, `,"kind":`...)
	b = appendString(b, KindName(s.Kind()))
	b = append(b, `,"service":`...)
	b = append(b, e.service...)
	b = append(b, `,"host":`...)
	b = append(b, e.host...)
	b = append(b, `,"duration_ns":`...)
	b = strconv.AppendUint(b, durationNanos(s.StartTimestamp(), s.EndTimestamp()), 10)
	b = append(b, `,"status_code":`...)
	b = appendString(b, StatusName(s.Status().Code()))
	b = append(b, `,"status_message":`...)
	b = appendString(b, s.Status().Message())
	b = append(b, `,"attributes":`...)
	b = e.appendAttrs(b, s.Attributes())
	b = append(b, `,"resource":`...)
	b = append(b, e.resource...)
	b = append(b, `,"scope_name":`...)
	b = appendString(b, scope.Name())
	b = append(b, `,"scope_version":`...)
	b = appendString(b, scope.Version())
	b = append(b, `,"events":`...)
	e.tmp = e.appendEvents(e.tmp[:0], s.Events())
	b = appendJSONAsString(b, e.tmp)
	b = append(b, `,"links":`...)
	e.tmp = e.appendLinks(e.tmp[:0], s.Links())
	b = appendJSONAsString(b, e.tmp)
	e.buf = append(b, "}\n"...)
}

// appendLogRow appends lr, of the current resource, as a row of the logs
// table (see logRow).
func (e *rowEncoder) appendLogRow(scope pcommon.InstrumentationScope, lr plog.LogRecord) {
	ts, observed := uint64(lr.Timestamp()), uint64(lr.ObservedTimestamp())
	if ts == 0 {
		ts = observed
	}
	if observed == 0 {
		observed = ts
	}
	traceID, spanID := lr.TraceID(), lr.SpanID()
	if traceID.IsEmpty() {
		spanID = pcommon.NewSpanIDEmpty() // a span id means nothing without its trace
	}
	b := e.buf
	b = append(b, `{"timestamp":`...)
	b = appendNanoTime(b, ts)
	b = append(b, `,"observed_timestamp":`...)
	b = appendNanoTime(b, observed)
	b = append(b, `,"trace_id":`...)
	b = appendTraceID(b, traceID)
	b = append(b, `,"span_id":`...)
	b = appendSpanID(b, spanID)
	b = append(b, `,"severity_text":`...)
	b = appendString(b, lr.SeverityText())
	b = append(b, `,"severity_number":`...)
	b = strconv.AppendInt(b, int64(lr.SeverityNumber()), 10)
	b = append(b, `,"service":`...)
	b = append(b, e.service...)
	b = append(b, `,"host":`...)
	b = append(b, e.host...)
	b = append(b, `,"body":`...)
	b = appendValue(b, lr.Body())
	b = append(b, `,"attributes":`...)
	b = e.appendAttrs(b, lr.Attributes())
	b = append(b, `,"resource":`...)
	b = append(b, e.resource...)
	b = append(b, `,"scope_name":`...)
	b = appendString(b, scope.Name())
	e.buf = append(b, "}\n"...)
}

// appendEvents appends evs as the API's JSON array of Event, which the reader
// decodes from the events column.
func (e *rowEncoder) appendEvents(b []byte, evs ptrace.SpanEventSlice) []byte {
	b = append(b, '[')
	for i := 0; i < evs.Len(); i++ {
		ev := evs.At(i)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"timeUnixNano":"`...)
		b = strconv.AppendUint(b, uint64(ev.Timestamp()), 10)
		b = append(b, `","name":`...)
		b = appendString(b, ev.Name())
		b = append(b, `,"attributes":`...)
		b = e.appendAttrs(b, ev.Attributes())
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendLinks appends links as the API's JSON array of Link, which the reader
// decodes from the links column.
func (e *rowEncoder) appendLinks(b []byte, links ptrace.SpanLinkSlice) []byte {
	b = append(b, '[')
	for i := 0; i < links.Len(); i++ {
		l := links.At(i)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"traceId":`...)
		b = appendTraceID(b, l.TraceID())
		b = append(b, `,"spanId":`...)
		b = appendSpanID(b, l.SpanID())
		b = append(b, `,"attributes":`...)
		b = e.appendAttrs(b, l.Attributes())
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendAttrs appends m as a JSON object of strings, which is what a
// Map(String, String) column takes and what the API shows: values as
// Value.AsString renders them, each key once with its last value. OTLP
// forbids duplicate keys but its wire format cannot prevent them; the last
// one wins as it did when attributes went through a map[string]string.
// Distinct keys with invalid UTF-8 can still come out the same (each bad byte
// is U+FFFD), as they did from encoding/json.
func (e *rowEncoder) appendAttrs(b []byte, m pcommon.Map) []byte {
	var last map[string]int // where each key last occurs, only if one repeats
	if m.Len() > 1 {
		e.keys = e.keys[:0]
		for k := range m.All() {
			e.keys = append(e.keys, k)
		}
		if e.hasDuplicates() {
			last = make(map[string]int, len(e.keys))
			for i, k := range e.keys {
				last[k] = i
			}
		}
	}
	b = append(b, '{')
	i, n := -1, 0
	for k, v := range m.All() {
		i++
		if last != nil && last[k] != i {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = appendString(b, k)
		b = append(b, ':')
		b = appendValue(b, v)
	}
	return append(b, '}')
}

// hasDuplicates reports whether e.keys holds a key twice. Attribute maps are
// small: comparing every pair is the quickest way up to a few dozen keys.
func (e *rowEncoder) hasDuplicates() bool {
	keys := e.keys
	if len(keys) > 32 {
		e.sorted = append(e.sorted[:0], keys...)
		slices.Sort(e.sorted)
		for i := 1; i < len(e.sorted); i++ {
			if e.sorted[i] == e.sorted[i-1] {
				return true
			}
		}
		return false
	}
	for i := 1; i < len(keys); i++ {
		if slices.Contains(keys[:i], keys[i]) {
			return true
		}
	}
	return false
}

// appendValue appends v.AsString() as a JSON string, without building that
// string for the common types.
func appendValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendString(b, v.Str())
	case pcommon.ValueTypeInt:
		b = append(b, '"')
		b = strconv.AppendInt(b, v.Int(), 10)
		return append(b, '"')
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(b, `"true"`...)
		}
		return append(b, `"false"`...)
	case pcommon.ValueTypeEmpty:
		return append(b, `""`...)
	default:
		// Doubles, bytes, maps and slices: pdata's own rendering (ES6-style
		// numbers, base64, JSON) is the reference; it costs a string.
		return appendString(b, v.AsString())
	}
}

// appendNanoTime appends Unix nanoseconds as the JSON string ClickHouse parses
// into DateTime64(9) exactly (see nanoTime).
func appendNanoTime(b []byte, ns uint64) []byte {
	b = append(b, '"')
	b = appendNanosText(b, ns)
	return append(b, '"')
}

// appendTraceID appends id as a JSON string, as pcommon.TraceID.String
// renders it: lowercase hex, empty for the empty id.
func appendTraceID(b []byte, id pcommon.TraceID) []byte {
	if id.IsEmpty() {
		return append(b, `""`...)
	}
	b = append(b, '"')
	b = hex.AppendEncode(b, id[:])
	return append(b, '"')
}

// appendSpanID is appendTraceID for span ids.
func appendSpanID(b []byte, id pcommon.SpanID) []byte {
	if id.IsEmpty() {
		return append(b, `""`...)
	}
	b = append(b, '"')
	b = hex.AppendEncode(b, id[:])
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the bytes a JSON string holds as they are: ASCII other
// than control characters, quotes and backslashes.
var plainASCII = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string. It escapes quotes, backslashes and
// control characters and, like encoding/json, replaces each byte that is not
// part of valid UTF-8 with U+FFFD, so that any string makes valid JSON.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is still to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONAsString appends js as a JSON string. js is JSON written by this
// file, so it is valid UTF-8 without control characters (appendString escaped
// them): only its quotes and backslashes need escaping.
func appendJSONAsString(b, js []byte) []byte {
	b = append(b, '"')
	start := 0
	for i, c := range js {
		if c == '"' || c == '\\' {
			b = append(b, js[start:i]...)
			b = append(b, '\\', c)
			start = i + 1
		}
	}
	b = append(b, js[start:]...)
	return append(b, '"')
}

package store

import (
	"encoding/hex"
	"slices"
	"strconv"
	"unicode/utf8"

	json "github.com/goccy/go-json"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
)

// The JSON the store writes itself: the events and links columns hold a
// span's events and links as JSON arrays of storedEvent and storedLink.

// storedEvent is a span event as the events column holds it.
type storedEvent struct {
	TimeUnixNano uint64            `json:"timeUnixNano,string"`
	Name         string            `json:"name"`
	Attributes   map[string]string `json:"attributes"`
}

// storedLink is a span link as the links column holds it.
type storedLink struct {
	TraceID    string            `json:"traceId"`
	SpanID     string            `json:"spanId"`
	Attributes map[string]string `json:"attributes"`
}

// decodeEvents reads an events column.
func decodeEvents(col string) []model.Event {
	return decodeColumn(col, func(e storedEvent) model.Event {
		return model.Event{Name: e.Name, TimeUnixNano: e.TimeUnixNano, Attributes: nonNil(e.Attributes)}
	})
}

// decodeLinks reads a links column.
func decodeLinks(col string) []model.Link {
	return decodeColumn(col, func(l storedLink) model.Link {
		return model.Link{TraceID: l.TraceID, SpanID: l.SpanID, Attributes: nonNil(l.Attributes)}
	})
}

// decodeColumn reads a JSON array column of S into the model's T; a value
// that does not parse gives none rather than failing the whole trace.
func decodeColumn[S, T any](col string, to func(S) T) []T {
	var in []S
	if col != "" {
		_ = json.Unmarshal([]byte(col), &in)
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = to(v)
	}
	return out
}

// appendEvents appends evs as a JSON array of storedEvent.
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

// appendLinks appends links as a JSON array of storedLink.
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

// appendAttrs appends m as a JSON object of strings: values as Value.AsString renders them, each key once with its
// last value (see appendAttrEntries).
func (e *rowEncoder) appendAttrs(b []byte, m pcommon.Map) []byte {
	last := e.lastOccurrences(m)
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

// lastOccurrences is where in m each key last occurs, or nil when no key
// occurs twice (the rule almost always).
func (e *rowEncoder) lastOccurrences(m pcommon.Map) map[string]int {
	if m.Len() < 2 {
		return nil
	}
	e.keys = e.keys[:0]
	for k := range m.All() {
		e.keys = append(e.keys, k)
	}
	if !e.hasDuplicates() {
		return nil
	}
	last := make(map[string]int, len(e.keys))
	for i, k := range e.keys {
		last[k] = i
	}
	return last
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

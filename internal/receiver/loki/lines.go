package loki

import (
	"bytes"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/tracesift/tracesift/internal/traceid"
)

// maxJoinLines bounds the lines of one plain-text record (a stack trace).
const maxJoinLines = 1000

// cutLine returns the first line of b, without its "\n" or "\r\n", and
// what follows it.
func cutLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line, rest = b[:i], b[i+1:]
	} else {
		line = b
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v' {
			return false
		}
	}
	return true
}

// isContinuation reports whether a plain-text line continues the record
// before it, as the lines of a Java (or Node.js) stack trace do: a line
// starting with a tab ("\tat com.example…", "\t... 12 more",
// "\tSuppressed: …"), with blanks then "at " or "...", or (blanks allowed)
// with "Caused by:".
func isContinuation(line []byte) bool {
	if len(line) == 0 {
		return false
	}
	if line[0] == '\t' {
		return true
	}
	rest := bytes.TrimLeft(line, " \t")
	if bytes.HasPrefix(rest, []byte("Caused by:")) {
		return true
	}
	return len(rest) < len(line) && (bytes.HasPrefix(rest, []byte("at ")) || bytes.HasPrefix(rest, []byte("...")))
}

// isExceptionHeader reports whether line may be the first line of a Java
// stack trace: a class name ending in Exception, Error or Throwable, maybe
// followed by ": message" ("java.lang.IllegalStateException: boom").
func isExceptionHeader(line []byte) bool {
	name := line
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name = line[:i]
	}
	if len(name) == 0 || bytes.IndexByte(name, '.') < 0 {
		return false
	}
	for _, c := range name {
		if !(c == '.' || c == '_' || c == '$' || isAlnum(c)) {
			return false
		}
	}
	return bytes.HasSuffix(name, []byte("Exception")) || bytes.HasSuffix(name, []byte("Error")) ||
		bytes.HasSuffix(name, []byte("Throwable"))
}

func isAlnum(c byte) bool {
	return (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// nextIsFrame reports whether the next non-blank line of rest is a stack
// frame ("\tat …").
func nextIsFrame(rest []byte) bool {
	for len(rest) > 0 {
		var line []byte
		line, rest = cutLine(rest)
		if isBlank(line) {
			continue
		}
		t := bytes.TrimLeft(line, " \t")
		return len(t) < len(line) && bytes.HasPrefix(t, []byte("at "))
	}
	return false
}

// decodePlain turns a plain-text body into records, one a line; blank
// lines are skipped, and stack-trace lines are joined to the record before
// them with "\n": continuation lines (isContinuation), and the exception
// line that starts a trace (isExceptionHeader, when a frame follows), as
// Logback and Log4j print it under the message it belongs to. A record
// holds at most maxJoinLines lines and max_line_bytes; a line that would
// exceed either starts a new record. Records get the receive time.
func (d *decoder) decodePlain(body []byte, lrs plog.LogRecordSlice) {
	var cur []byte
	lines := 0
	joined := false
	for len(body) > 0 {
		var line []byte
		line, body = cutLine(body)
		if isBlank(line) {
			continue
		}
		if lines > 0 && d.full() {
			return
		}
		if lines > 0 && lines < maxJoinLines && len(cur)+1+len(line) <= d.maxLine &&
			(isContinuation(line) || (isExceptionHeader(line) && nextIsFrame(body))) {
			if !joined {
				d.join = append(d.join[:0], cur...)
				joined = true
			}
			d.join = append(d.join, '\n')
			d.join = append(d.join, line...)
			cur = d.join
			lines++
			continue
		}
		if lines > 0 {
			d.rawRecord(lrs, cur, 0)
		}
		cur, lines, joined = line, 1, false
	}
	if lines > 0 && !d.full() {
		d.rawRecord(lrs, cur, 0)
	}
}

// rawRecord stores text as the body of a record with the receive time.
func (d *decoder) rawRecord(lrs plog.LogRecordSlice, text []byte, f recFlags) {
	lr := d.newRecord(lrs)
	lr.Body().SetStr(d.text(text, &f))
	d.stats.add(f)
}

// notJSON stores an NDJSON line that is not a JSON object as it is.
func (d *decoder) notJSON(lrs plog.LogRecordSlice, line []byte) {
	d.noteBytes(int(reasonNotJSON), line)
	d.rawRecord(lrs, line, flagOf(reasonNotJSON))
}

// decodeNDJSON turns an NDJSON body into records, one a line (blank lines
// skipped); a line that is not a JSON object is stored raw as the body and
// counted. For curl's sake, a body that is a single JSON array, or a single
// object written over several lines, is taken as a whole: the array's
// elements are the records.
func (d *decoder) decodeNDJSON(body []byte, lrs plog.LogRecordSlice) {
	whole := bytes.TrimSpace(body)
	if len(whole) > 0 && (whole[0] == '[' || (whole[0] == '{' && bytes.IndexByte(whole, '\n') >= 0)) {
		if d.decodeWhole(whole, lrs) {
			return
		}
	}
	for len(body) > 0 {
		var line []byte
		line, body = cutLine(body)
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if d.full() {
			return
		}
		if !d.jsonLine(line, lrs) {
			d.notJSON(lrs, line)
		}
	}
}

// decodeWhole decodes a body that is one JSON value; false (nothing
// stored) when it is not.
func (d *decoder) decodeWhole(whole []byte, lrs plog.LogRecordSlice) bool {
	if whole[0] == '{' {
		return d.jsonLine(whole, lrs)
	}
	if !validJSON(&d.json, whole) {
		return false
	}
	// The elements are decoded with d.json, so walk the array with a
	// reader of its own.
	var arr jsonReader
	arr.reset(whole)
	arr.pos++ // '['
	for first := true; ; first = false {
		if more, _ := arr.more(']', first); !more {
			return true
		}
		elem, _ := arr.raw(1)
		if d.full() {
			return true
		}
		if elem[0] != '{' || !d.jsonLine(elem, lrs) {
			d.notJSON(lrs, elem)
		}
	}
}

// keyRole is what an NDJSON member is for.
type keyRole uint8

const (
	roleAttr keyRole = iota
	roleTime
	roleLevel
	roleMessage
	roleTraceID
	roleSpanID
)

// keyRoles maps lower-cased (flattened) keys to their role.
var keyRoles = map[string]keyRole{
	"time": roleTime, "timestamp": roleTime, "ts": roleTime, "@timestamp": roleTime, "@t": roleTime,
	"level": roleLevel, "severity": roleLevel, "lvl": roleLevel, "loglevel": roleLevel, "log.level": roleLevel,
	"@l":      roleLevel,
	"message": roleMessage, "msg": roleMessage, "log": roleMessage, "body": roleMessage, "@m": roleMessage,
	"traceid": roleTraceID, "trace_id": roleTraceID, "trace.id": roleTraceID,
	"spanid": roleSpanID, "span_id": roleSpanID, "span.id": roleSpanID,
}

// roleOf is the role of the member at d.path; case is ignored.
func (d *decoder) roleOf() keyRole {
	if len(d.path) > 16 {
		return roleAttr
	}
	d.lower = append(d.lower[:0], d.path...)
	for i, c := range d.lower {
		if c >= 'A' && c <= 'Z' {
			d.lower[i] = c + 'a' - 'A'
		}
	}
	return keyRoles[string(d.lower)]
}

// lineState is what the members of one NDJSON line said.
type lineState struct {
	f                 recFlags
	body, level       string
	hasBody, hasLevel bool
	hasTime, timeOK   bool
	ts                pcommon.Timestamp
	hasTrace, hasSpan bool
	traceID           pcommon.TraceID
	spanID            pcommon.SpanID
	// spanKey and spanText are the span id member as written, kept as an
	// attribute when the line has no trace id to go with it.
	spanKey, spanText string
}

// jsonLine decodes one NDJSON line (or whole body) holding a JSON object
// into a record; false (nothing stored) when it is not one.
//
// Members: the first of time, timestamp, ts, @timestamp (RFC 3339 or a
// Unix time in s, ms, µs or ns, told by magnitude) is the timestamp; the
// first of level, severity, lvl, loglevel, log.level (a name, or a pino
// number 10…60) the severity; the first string of message, msg, log, body
// the body; traceId/trace_id/traceID/trace.id and spanId/span_id/spanID/
// span.id, when valid hex of the right length, the record's ids. Every
// other member is an attribute: nested objects flattened with dots, strings
// as they are, numbers as written, booleans as true/false, arrays as their
// JSON text; null members are left out. A line without a message member
// keeps its whole text as the body. Keys are matched ignoring case.
func (d *decoder) jsonLine(line []byte, lrs plog.LogRecordSlice) bool {
	r := &d.json
	r.reset(line)
	if r.peek() != '{' {
		return false
	}
	d.attrs = d.attrs[:0]
	d.path = d.path[:0]
	var st lineState
	if err := d.flatten(&st, 0); err != nil || !r.atEnd() {
		return false
	}

	lr := d.newRecord(lrs)
	f := st.f
	if st.hasBody {
		lr.Body().SetStr(st.body)
	} else {
		lr.Body().SetStr(d.text(line, &f))
	}
	if st.timeOK {
		lr.SetTimestamp(st.ts)
	}
	if st.hasLevel {
		setSeverity(lr, st.level)
	}
	if st.hasTrace {
		lr.SetTraceID(st.traceID)
		if st.hasSpan {
			lr.SetSpanID(st.spanID)
		}
	} else if st.hasSpan {
		// A span id means nothing without its trace: keep it as written.
		d.attrs = append(d.attrs, labelPair{name: st.spanKey, value: st.spanText})
	}
	if len(d.attrs) > 0 {
		attrs := lr.Attributes()
		attrs.EnsureCapacity(len(d.attrs))
		for _, a := range d.attrs {
			attrs.PutStr(a.name, a.value)
		}
	}
	d.stats.add(f)
	return true
}

// flatten reads the object at the reader's position, its members'
// keys prefixed with d.path.
func (d *decoder) flatten(st *lineState, depth int) error {
	r := &d.json
	if depth >= maxJSONDepth {
		return r.fail("nested too deeply")
	}
	r.pos++ // '{'
	base := len(d.path)
	defer func() { d.path = d.path[:base] }()
	return r.members(func(k []byte) error {
		var err error
		d.path = d.path[:base]
		if base > 0 {
			d.path = append(d.path, '.')
		}
		d.path = append(d.path, k...)
		switch c := r.peek(); {
		case c == '{':
			err = d.flatten(st, depth+1)
		case c == '"':
			var v []byte
			if v, err = r.strValue(); err == nil {
				d.stringMember(st, v)
			}
		case c == 'n':
			err = r.literal("null")
		case c == 't':
			if err = r.literal("true"); err == nil {
				d.attr(st, trueText)
			}
		case c == 'f':
			if err = r.literal("false"); err == nil {
				d.attr(st, falseText)
			}
		case c == '[':
			var raw []byte
			if raw, err = r.raw(depth + 1); err == nil {
				d.attr(st, raw)
			}
		default:
			var num []byte
			if num, err = r.number(); err == nil {
				d.numberMember(st, num)
			}
		}
		return err
	})
}

var trueText, falseText = []byte("true"), []byte("false")

// attr keeps the member at d.path as an attribute. The key is text too:
// the reader leaves invalid UTF-8 in it, as in values.
func (d *decoder) attr(st *lineState, v []byte) {
	d.attrs = append(d.attrs, labelPair{name: d.textString(d.internKey(d.path), &st.f), value: d.text(v, &st.f)})
}

func (d *decoder) stringMember(st *lineState, v []byte) {
	switch d.roleOf() {
	case roleMessage:
		if !st.hasBody {
			st.body, st.hasBody = d.text(trimNewline(v), &st.f), true
			return
		}
	case roleLevel:
		if !st.hasLevel {
			st.level, st.hasLevel = d.text(v, &st.f), true
			return
		}
	case roleTime:
		if !st.hasTime {
			st.hasTime = true
			if st.ts, st.timeOK = parseTimeString(string(v)); st.timeOK {
				return
			}
			d.badTime(st, v)
		}
	case roleTraceID:
		if !st.hasTrace {
			if id, ok := traceid.ParseTraceID(string(bytes.TrimSpace(v))); ok {
				st.traceID, st.hasTrace = id, true
				return
			}
		}
	case roleSpanID:
		if !st.hasSpan {
			if id, ok := traceid.ParseSpanID(string(bytes.TrimSpace(v))); ok {
				st.spanID, st.hasSpan = id, true
				st.spanKey, st.spanText = d.internKey(d.path), string(v)
				return
			}
		}
	}
	d.attr(st, v)
}

func (d *decoder) numberMember(st *lineState, num []byte) {
	switch d.roleOf() {
	case roleTime:
		if !st.hasTime {
			st.hasTime = true
			if st.ts, st.timeOK = parseTimeNumber(string(num)); st.timeOK {
				return
			}
			d.badTime(st, num)
		}
	case roleLevel:
		if name, ok := pinoLevels[string(num)]; ok && !st.hasLevel {
			st.level, st.hasLevel = name, true
			return
		}
	}
	d.attr(st, num)
}

// badTime notes an unreadable time member; the record keeps the receive
// time, and the member stays as an attribute (the caller adds it).
func (d *decoder) badTime(st *lineState, v []byte) {
	st.f |= flagOf(reasonBadTimestamp)
	d.noteBytes(int(reasonBadTimestamp), v)
}

// trimNewline drops the line end a message may carry (Docker's json-file
// "log" member has one).
func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

// Package logsprocessor is the `tracesift_logs` processor: it links each log
// record to its trace (from the record's own context, MDC-style attributes or
// ids in the text) and reads Logback/Log4j/Spring Boot layouts.
package logsprocessor

//go:generate mdatagen metadata.yaml

import (
	"strings"

	"github.com/tracesift/tracesift/internal/traceid"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Where a log record's trace link came from. The values are also the `source`
// attribute of the otelcol_tracesift_logs_linked metric, so they must stay stable.
const (
	SourceRecord     = "record"
	SourceAttributes = "attributes"
	SourceBody       = "body"
)

// LinkResult tells what LinkLogRecord did to one record.
type LinkResult struct {
	// Source is SourceRecord, SourceAttributes, SourceBody, or "" when the
	// record could not be linked.
	Source string
	// InvalidID is true when an id-looking key carried a value that is not a
	// usable id (wrong length, not hex, all zeros). Such a value never links;
	// the next source is tried instead. Empty values and the placeholders "-"
	// and "null" count as absent, not invalid: Logback and Log4j print them for
	// every line logged outside a traced request.
	InvalidID bool
	// InvalidKey and InvalidValue describe the first invalid id seen, so that an
	// operator can find the logging configuration that produced it. They alias
	// the record's own strings: copy them before keeping them past the record.
	InvalidKey, InvalidValue string
}

// Linker links log records to traces. The zero value tries every source; the
// fields switch sources off (the record's own ids are always trusted).
type Linker struct {
	// NoAttributes skips MDC-style attributes such as traceId or trace_id.
	NoAttributes bool
	// NoBody skips the body: "traceId=…" text in a string body, or id keys at
	// the top level of a map body.
	NoBody bool
}

// LinkLogRecord links lr to its trace and span using every source, in order:
// the record's own ids, then its attributes, then its body. See Linker.Link.
func LinkLogRecord(lr plog.LogRecord) LinkResult {
	return Linker{}.Link(lr)
}

// Link links lr to its trace and span. When the ids come from the attributes
// or the body it writes them into lr, so that later stages only ever read
// lr.TraceID and lr.SpanID. A span id is only taken from the source that gave
// the trace id: mixing sources could pair a span with someone else's trace.
func (l Linker) Link(lr plog.LogRecord) LinkResult {
	if !lr.TraceID().IsEmpty() {
		return LinkResult{Source: SourceRecord}
	}
	var res LinkResult
	if !l.NoAttributes {
		m := findIDsInMap(lr.Attributes())
		res.noteInvalid(m)
		if m.apply(lr) {
			res.Source = SourceAttributes
			return res
		}
	}
	if !l.NoBody {
		var m idMatch
		switch body := lr.Body(); body.Type() {
		case pcommon.ValueTypeStr:
			m = scanText(body.Str())
		case pcommon.ValueTypeMap:
			// Structured log lines (parsed JSON) land here rather than as text.
			m = findIDsInMap(body.Map())
		}
		res.noteInvalid(m)
		if m.apply(lr) {
			res.Source = SourceBody
		}
	}
	return res
}

func (r *LinkResult) noteInvalid(m idMatch) {
	if m.badKey != "" && !r.InvalidID {
		r.InvalidID = true
		r.InvalidKey, r.InvalidValue = m.badKey, m.badValue
	}
}

// idMatch holds ids as found in a source, still as text, so that scanning
// allocates nothing and the fuzz test can check exactly what was accepted.
type idMatch struct {
	trace, span      string // valid hex (any case); "" when none
	traceID          pcommon.TraceID
	spanID           pcommon.SpanID
	badKey, badValue string // the first malformed id
}

func (m *idMatch) apply(lr plog.LogRecord) bool {
	if m.trace == "" {
		return false
	}
	lr.SetTraceID(m.traceID)
	lr.SetSpanID(m.spanID) // empty when no span id: clears a stray record span id
	return true
}

// consider records value found under a key of the given kind; it reports
// whether both ids are known, so the caller may stop looking.
func (m *idMatch) consider(kind keyKind, key, value string) bool {
	switch kind {
	case keyTrace:
		if m.trace != "" {
			break
		}
		if id, ok := traceid.ParseTraceID(value); ok {
			m.trace, m.traceID = value, id
		} else if !isAbsent(value) && m.badKey == "" {
			m.badKey, m.badValue = key, value
		}
	case keySpan:
		if m.span != "" {
			break
		}
		if id, ok := traceid.ParseSpanID(value); ok {
			m.span, m.spanID = value, id
		} else if !isAbsent(value) && m.badKey == "" {
			m.badKey, m.badValue = key, value
		}
	}
	return m.trace != "" && m.span != ""
}

func findIDsInMap(attrs pcommon.Map) idMatch {
	var m idMatch
	for k, v := range attrs.All() {
		kind := classifyKey(k)
		if kind == keyNone || v.Type() != pcommon.ValueTypeStr {
			continue
		}
		if m.consider(kind, k, strings.TrimSpace(v.Str())) {
			break
		}
	}
	return m
}

func isAbsent(v string) bool {
	return v == "" || v == "-" || strings.EqualFold(v, "null")
}

type keyKind uint8

const (
	keyNone keyKind = iota
	keyTrace
	keySpan
)

// classifyKey says whether an attribute key names a trace id or a span id.
// The rule is: lowercase, drop non-alphanumerics, then the key equals or ends
// with "traceid" (or "spanid", but not "parentspanid": the parent's id would
// link the log to the wrong span). That covers traceId, trace_id, trace.id,
// mdc.traceId, otel.trace_id, X-B3-TraceId and friends without a list to keep
// up to date. It walks the key backwards so it allocates nothing.
func classifyKey(k string) keyKind {
	i, ok := foldSuffix(k, len(k), "id")
	if !ok {
		return keyNone
	}
	if _, ok := foldSuffix(k, i, "trace"); ok {
		return keyTrace
	}
	j, ok := foldSuffix(k, i, "span")
	if !ok {
		return keyNone
	}
	if _, parent := foldSuffix(k, j, "parent"); parent {
		return keyNone
	}
	return keySpan
}

// foldSuffix matches lower-case word against the alphanumeric characters of
// k[:end], read backwards and case-folded; it returns where the match starts.
func foldSuffix(k string, end int, word string) (int, bool) {
	i := end
	for j := len(word) - 1; j >= 0; j-- {
		for i > 0 && !isAlnum(k[i-1]) {
			i--
		}
		if i == 0 || lower(k[i-1]) != word[j] {
			return i, false
		}
		i--
	}
	return i, true
}

func isAlnum(c byte) bool {
	return c-'0' < 10 || (c|0x20)-'a' < 26
}

func lower(c byte) byte {
	if c-'A' < 26 {
		return c | 0x20
	}
	return c
}

// scanText finds ids in a log line printed by an MDC-aware layout: Logback
// and Log4j2 patterns (traceId=…, [trace_id=…, span_id=…], %X → {spanId=…,
// traceId=…}), ECS (trace.id: …) and JSON, also JSON escaped inside a string
// ("\"traceId\":\"…\""). The key is matched case-insensitively.
//
// It is a hand scanner rather than a regexp: it jumps between '=' and ':'
// with IndexByte (vectorised) and checks the few bytes around each one, so a
// line without ids costs little more than two memchr calls; see
// BenchmarkScanText for the comparison with the equivalent regexp.
func scanText(s string) idMatch {
	var m idMatch
	eq := strings.IndexByte(s, '=')
	co := strings.IndexByte(s, ':')
	for eq >= 0 || co >= 0 {
		var p int
		if co < 0 || (eq >= 0 && eq < co) {
			p = eq
			eq = indexByteFrom(s, p+1, '=')
		} else {
			p = co
			co = indexByteFrom(s, p+1, ':')
		}
		kind, key := keyBefore(s, p)
		if kind == keyNone {
			continue
		}
		if m.consider(kind, key, valueAfter(s, p)) {
			break
		}
	}
	return m
}

func indexByteFrom(s string, from int, c byte) int {
	if from >= len(s) {
		return -1
	}
	if i := strings.IndexByte(s[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// keyBefore reads the key that ends just before the separator at p: optional
// blanks and closing quote (maybe backslash-escaped), then [trace|span]
// [_.-]? id, case-insensitive, not preceded by "parent" for span ids. It
// returns the key's kind and text.
func keyBefore(s string, p int) (keyKind, string) {
	i := p
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	if i > 0 && (s[i-1] == '"' || s[i-1] == '\'') {
		i--
		if i > 0 && s[i-1] == '\\' {
			i--
		}
	}
	// Cheapest rejection first: most separators in a log line follow a
	// timestamp digit or an ordinary word.
	if i < 2 || lower(s[i-1]) != 'd' || lower(s[i-2]) != 'i' {
		return keyNone, ""
	}
	end := i
	i -= 2
	if i > 0 && isKeySep(s[i-1]) {
		i--
	}
	if i >= 5 && foldEq(s[i-5:i], "trace") {
		return keyTrace, s[keyStart(s, i-5):end]
	}
	if i >= 4 && foldEq(s[i-4:i], "span") {
		j := i - 4
		if j > 0 && isKeySep(s[j-1]) {
			j--
		}
		if j >= 6 && foldEq(s[j-6:j], "parent") {
			return keyNone, ""
		}
		return keySpan, s[keyStart(s, i-4):end]
	}
	return keyNone, ""
}

// keyStart extends a key start backwards over a dotted prefix such as
// "mdc." or "otel.", so that the key reported for an invalid id is the one an
// operator would grep for.
func keyStart(s string, i int) int {
	for i > 0 && (isAlnum(s[i-1]) || isKeySep(s[i-1])) {
		i--
	}
	return i
}

func isKeySep(c byte) bool { return c == '_' || c == '.' || c == '-' }

// foldEq compares s to the lower-case ASCII word w, ignoring the case of s.
func foldEq(s, w string) bool {
	for i := 0; i < len(w); i++ {
		if lower(s[i]) != w[i] {
			return false
		}
	}
	return true
}

// valueAfter returns the token after the separator at p: blanks (after ':'
// only) and an opening quote (maybe backslash-escaped) are skipped, then the
// token runs over letters, digits, '-' and '_'. Taking the whole token, not
// just its hex prefix, is what makes "traceId=4bf9…36-extra" or a 40-digit
// value invalid instead of silently truncated.
func valueAfter(s string, p int) string {
	i := p + 1
	// "trace.id: x" and JSON put blanks after ':'; after '=' a blank means the
	// value is empty, as in Logback's "traceId= spanId=" outside a request.
	if s[p] == ':' {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	if i+1 < len(s) && s[i] == '\\' && s[i+1] == '"' {
		i += 2
	} else if i < len(s) && (s[i] == '"' || s[i] == '\'') {
		i++
	}
	start := i
	for i < len(s) && (isAlnum(s[i]) || s[i] == '-' || s[i] == '_') {
		i++
	}
	if n := i - start; n != 16 && n != 32 {
		// A token that is the next key ("traceId= spanId=x", "trace.id:
		// span.id: x") means this value is empty. The length test keeps
		// "traceId=<id>: message" working.
		j := i
		for j < len(s) && (isAlnum(s[j]) || isKeySep(s[j])) {
			j++
		}
		if j < len(s) && (s[j] == '=' || s[j] == ':') {
			return ""
		}
	}
	return s[start:i]
}

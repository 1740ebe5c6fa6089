package loki

import (
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// Resource attributes the receiver sets.
const (
	attrServiceName = "service.name"
	attrHostName    = "host.name"
	// attrLokiLabels keeps the text of a label set that could not be parsed.
	attrLokiLabels = "loki.labels"

	unknownService = "unknown_service"
)

// recFlags says what happened to one record on its way in; each flag is
// counted once per record.
type recFlags uint8

// flagTruncated: a text value was cut to max_line_bytes. The reasons of
// otelcol_tracesift_loki_records_invalid have the bits above it (flagOf).
const flagTruncated recFlags = 1

// flagOf is the flag of an invalid-record reason.
func flagOf(r reason) recFlags { return flagTruncated << (1 + r) }

// maxExample bounds the excerpts of bad input quoted in warnings.
const maxExample = 120

// batchStats gathers what the decoding of one request found, for the
// metrics and the one-off warnings.
type batchStats struct {
	truncated      int64
	invalid        [numReasons]int64
	invalidRecords int64 // records with at least one invalid reason
	// examples hold an excerpt of the first bad input of each kind, index
	// numReasons for truncation.
	examples [numReasons + 1]string
}

func (s *batchStats) reset() { *s = batchStats{} }

// add tallies the flags of one record.
func (s *batchStats) add(f recFlags) {
	if f == 0 {
		return
	}
	if f&flagTruncated != 0 {
		s.truncated++
	}
	if f&^flagTruncated != 0 {
		s.invalidRecords++
		for r := range numReasons {
			if f&flagOf(r) != 0 {
				s.invalid[r]++
			}
		}
	}
}

// note keeps the first example of a kind of bad input (index numReasons:
// truncation).
func (s *batchStats) note(i int, example string) {
	if s.examples[i] == "" {
		s.examples[i] = excerpt(example)
	}
}

// excerpt cuts s to maxExample bytes at a character boundary, valid UTF-8.
func excerpt(s string) string {
	if len(s) > maxExample {
		n := maxExample
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	if s == "" {
		return `""`
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// truncMarker is appended to a cut value.
func truncMarker(cut int) string {
	return "…[truncated " + strconv.Itoa(cut) + " bytes]"
}

// text turns b into a string fit to store: cut to max bytes at a character
// boundary with truncMarker appended, invalid UTF-8 replaced with U+FFFD.
// It sets the record flags for what it did. Only the kept bytes are copied.
func (d *decoder) text(b []byte, f *recFlags) string {
	cut := 0
	if len(b) > d.maxLine {
		n := d.maxLine
		// Back off to a character start; at most 3 bytes for valid UTF-8.
		for k := 0; k < utf8.UTFMax && n > 0 && !utf8.RuneStart(b[n]); k++ {
			n--
		}
		cut = len(b) - n
		b = b[:n]
	}
	var s string
	if utf8.Valid(b) {
		s = string(b)
	} else {
		s = strings.ToValidUTF8(string(b), "\uFFFD")
		*f |= flagOf(reasonInvalidUTF8)
		d.stats.note(int(reasonInvalidUTF8), s)
	}
	if cut > 0 {
		d.stats.note(int(numReasons), strconv.Itoa(len(b)+cut)+" bytes: "+s)
		s += truncMarker(cut)
		*f |= flagTruncated
	}
	return s
}

// textString is text for a value that is already a string.
func (d *decoder) textString(s string, f *recFlags) string {
	if len(s) <= d.maxLine && utf8.ValidString(s) {
		return s
	}
	return d.text([]byte(s), f)
}

// severityOf maps a level name to its OTel severity number; ok is false for
// a name it does not know. Case is ignored.
func severityOf(level string) (plog.SeverityNumber, bool) {
	if len(level) > 16 {
		return 0, false
	}
	var buf [16]byte
	l := buf[:len(level)]
	for i := range len(level) {
		c := level[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		l[i] = c
	}
	switch string(l) {
	case "trace", "trc":
		return plog.SeverityNumberTrace, true
	case "debug", "dbg":
		return plog.SeverityNumberDebug, true
	case "info", "inf", "information", "informational", "notice":
		return plog.SeverityNumberInfo, true
	case "warn", "warning", "wrn":
		return plog.SeverityNumberWarn, true
	case "error", "err", "eror":
		return plog.SeverityNumberError, true
	case "fatal", "critical", "crit", "panic", "emerg", "emergency", "alert":
		return plog.SeverityNumberFatal, true
	}
	return 0, false
}

// setSeverity sets the record's severity from a level name: the text as
// given, and the number when the name is known. Empty names and Loki's
// "unknown" (detected_level when it found none) leave it unset.
func setSeverity(lr plog.LogRecord, level string) {
	level = strings.TrimSpace(level)
	if level == "" || strings.EqualFold(level, "unknown") {
		return
	}
	// Label and metadata values come here as sent (their attributes are
	// repaired and counted apart), so the text may not be valid UTF-8.
	lr.SetSeverityText(strings.ToValidUTF8(level, "\uFFFD"))
	if n, ok := severityOf(level); ok {
		lr.SetSeverityNumber(n)
	}
}

// pinoLevels are the numeric levels of pino and bunyan (Node.js).
var pinoLevels = map[string]string{"10": "trace", "20": "debug", "30": "info", "40": "warn", "50": "error", "60": "fatal"}

// levelPriority ranks the label and metadata keys that carry a level:
// lower is preferred, 0 is not a level key.
func levelPriority(name string) int {
	switch name {
	case "level":
		return 1
	case "severity":
		return 2
	case "detected_level":
		return 3
	}
	return 0
}

// parseUnixNanos parses a push entry timestamp: decimal Unix nanoseconds,
// positive, as Loki does.
func parseUnixNanos(b []byte) (pcommon.Timestamp, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v == 0 || v > 1<<63-1 {
		return 0, false
	}
	return pcommon.Timestamp(v), true
}

// Magnitudes that tell the unit of a Unix time number: below 1e11 it is
// seconds (until the year 5138), below 1e14 milliseconds, below 1e17
// microseconds, else nanoseconds.
const (
	maxUnixSeconds = 1e11
	maxUnixMillis  = 1e14
	maxUnixMicros  = 1e17
)

// parseTimeNumber reads a Unix time written as a JSON number (or a string
// holding one), guessing the unit by its magnitude; fractions are kept to
// the nanosecond. Zero and negative times are refused.
func parseTimeNumber(s string) (pcommon.Timestamp, bool) {
	if s == "" || s[0] == '-' {
		return 0, false
	}
	if strings.ContainsAny(s, "eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 || f >= 1e19 {
			return 0, false
		}
		var ns float64
		switch {
		case f < maxUnixSeconds:
			ns = f * 1e9
		case f < maxUnixMillis:
			ns = f * 1e6
		case f < maxUnixMicros:
			ns = f * 1e3
		default:
			ns = f
		}
		if ns >= 1<<63 {
			return 0, false
		}
		return pcommon.Timestamp(ns), ns >= 1
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" || len(intPart) > 19 {
		return 0, false
	}
	v, err := strconv.ParseUint(intPart, 10, 64)
	if err != nil {
		return 0, false
	}
	var unit uint64
	switch {
	case v < maxUnixSeconds:
		unit = 1e9
	case v < maxUnixMillis:
		unit = 1e6
	case v < maxUnixMicros:
		unit = 1e3
	default:
		unit = 1
	}
	ns := v * unit
	if ns/unit != v || ns > 1<<63-1 {
		return 0, false
	}
	// The fraction, to the nanosecond: unit has this many digits.
	scale := unit / 10
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		ns += uint64(c-'0') * scale
		scale /= 10
	}
	if ns == 0 || ns > 1<<63-1 {
		return 0, false
	}
	return pcommon.Timestamp(ns), true
}

// parseTimeString reads a time written as a JSON string: RFC 3339 (also
// with a space instead of 'T'), or a Unix time number in a string.
func parseTimeString(s string) (pcommon.Timestamp, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if c := s[0]; c >= '0' && c <= '9' && len(s) > 10 && (s[10] == 'T' || s[10] == 't' || s[10] == ' ') {
		layout := time.RFC3339Nano
		if s[10] == ' ' {
			layout = "2006-01-02 15:04:05.999999999Z07:00"
		}
		t, err := time.Parse(layout, s)
		if err != nil || t.UnixNano() <= 0 {
			return 0, false
		}
		return pcommon.NewTimestampFromTime(t), true
	}
	return parseTimeNumber(s)
}

// hostOf turns a host, hostname or instance label into a host name: an
// instance label ("10.0.0.7:9100") loses its port.
func hostOf(v string) string {
	if h, _, err := net.SplitHostPort(v); err == nil && h != "" {
		return h
	}
	return v
}

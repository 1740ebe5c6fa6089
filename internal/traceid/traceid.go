// Package traceid parses trace and span ids as logs and log shippers write
// them.
package traceid

import "go.opentelemetry.io/collector/pdata/pcommon"

// ParseTraceID parses a trace id written as 32 hex digits, either case. A
// 16-digit id (64-bit B3/Zipkin, older Jaeger clients) is accepted and
// left-padded with zeros, which is how OpenTelemetry's B3 propagator maps it.
// The all-zero id is invalid per W3C Trace Context.
func ParseTraceID(s string) (pcommon.TraceID, bool) {
	var id pcommon.TraceID
	switch len(s) {
	case 32:
		if !decodeHex(id[:], s) {
			return pcommon.TraceID{}, false
		}
	case 16:
		if !decodeHex(id[8:], s) {
			return pcommon.TraceID{}, false
		}
	default:
		return id, false
	}
	return id, !id.IsEmpty()
}

// ParseSpanID parses a span id written as 16 hex digits, either case. The
// all-zero id is invalid.
func ParseSpanID(s string) (pcommon.SpanID, bool) {
	var id pcommon.SpanID
	if len(s) != 16 || !decodeHex(id[:], s) {
		return pcommon.SpanID{}, false
	}
	return id, !id.IsEmpty()
}

// decodeHex fills dst from exactly 2*len(dst) hex digits in s; unlike
// encoding/hex it takes a string, so nothing is copied or allocated.
func decodeHex(dst []byte, s string) bool {
	for i := range dst {
		hi, lo := hexVal[s[2*i]], hexVal[s[2*i+1]]
		if hi|lo == 0xff {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

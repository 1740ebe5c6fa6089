package model

// What names a timeout: the one rule that the sampler's keep rule (on the
// request's bytes, see otlpwire.MarkRule), the analyzers' timeout findings
// and every count of timeouts share. A span timed out when
//
//   - its HTTP status (TimeoutStatuses) is 504 Gateway Timeout or 408
//     Request Timeout, or its gRPC status is 4 DEADLINE_EXCEEDED;
//   - one of its TimeoutTextKeys (error.type, exception.type) names a
//     timeout;
//   - an "exception" event's TimeoutEventTextKeys (exception.type,
//     exception.message, error.type) name a timeout;
//   - its status message names a timeout.
//
// Text names a timeout when it contains one of TimeoutWords, ASCII case
// insensitively: "SocketTimeoutException", "ETIMEDOUT", "timed out",
// "context.DeadlineExceeded". Values are compared as the attribute renders
// as a string (an int 504, a string "504" and a double 504.0 alike), ASCII
// case-insensitively. On the wire (otlpwire.MarkRule) text is read from
// string values only: an array, map or bytes value under error.type or
// exception.type, which instrumentations do not send, counts only here.

// KeyValues is an attribute key and the values that mark a timeout.
type KeyValues struct {
	Key    string
	Values []string
}

// Timeout rule tables; see above. Not to be modified.
var (
	TimeoutStatuses = []KeyValues{
		{Key: "http.response.status_code", Values: []string{"504", "408"}},
		{Key: "http.status_code", Values: []string{"504", "408"}},
		{Key: "rpc.grpc.status_code", Values: []string{"4", "DEADLINE_EXCEEDED"}},
	}
	TimeoutTextKeys      = []string{"error.type", "exception.type"}
	TimeoutEventTextKeys = []string{"exception.type", "exception.message", "error.type"}
	TimeoutWords         = []string{"timeout", "timedout", "timed out", "timed_out", "deadline"}
)

// ExceptionEvent is the name of the span events that record exceptions.
const ExceptionEvent = "exception"

// TimeoutCause says why a span counts as timed out.
type TimeoutCause uint8

// Timeout causes, in the order TimedOut checks them.
const (
	NotTimedOut      TimeoutCause = iota
	TimeoutStatus                 // an HTTP or gRPC status (the key is in TimeoutKey)
	TimeoutText                   // one of TimeoutTextKeys
	TimeoutException              // an exception event (TimeoutEvent finds it)
	TimeoutMessage                // the status message
)

// TimedOut says whether, and why, s timed out, and for an attribute cause
// which attribute.
func (s *Span) TimedOut() (cause TimeoutCause, key string) {
	if len(s.Attributes) != 0 {
		for _, kv := range TimeoutStatuses {
			if v, ok := s.Attributes[kv.Key]; ok && oneOfFold(v, kv.Values) {
				return TimeoutStatus, kv.Key
			}
		}
		for _, k := range TimeoutTextKeys {
			if NamesTimeout(s.Attributes[k]) {
				return TimeoutText, k
			}
		}
	}
	if s.TimeoutEvent() >= 0 {
		return TimeoutException, ""
	}
	if NamesTimeout(s.StatusMessage) {
		return TimeoutMessage, ""
	}
	return NotTimedOut, ""
}

// TimeoutEvent is the index of s's first exception event that names a
// timeout, -1 when none does.
func (s *Span) TimeoutEvent() int {
	for i := range s.Events {
		e := &s.Events[i]
		if e.Name != ExceptionEvent {
			continue
		}
		for _, k := range TimeoutEventTextKeys {
			if NamesTimeout(e.Attributes[k]) {
				return i
			}
		}
	}
	return -1
}

// NamesTimeout reports whether s contains one of TimeoutWords, ASCII case
// insensitively.
func NamesTimeout(s string) bool {
	if len(s) < len("timeout") { // the shortest word; most values are short
		return false
	}
	for _, w := range TimeoutWords {
		if containsFoldASCII(s, w) {
			return true
		}
	}
	return false
}

func oneOfFold(v string, values []string) bool {
	for _, x := range values {
		if equalFoldASCII(v, x) {
			return true
		}
	}
	return false
}

// containsFoldASCII reports whether s contains the lowercase ASCII needle,
// ASCII case-insensitively, without allocating.
func containsFoldASCII(s, needle string) bool {
	n := len(needle)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for j < n && lowerASCII(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

package analyze

import "strconv"

// Attribute keys read by the analyzers (OpenTelemetry semantic conventions,
// old and new names).
const (
	attrHTTPStatus    = "http.response.status_code"
	attrHTTPStatusOld = "http.status_code"
	attrGRPCStatus    = "rpc.grpc.status_code"
	attrErrorType     = "error.type"
	attrExcType       = "exception.type"
	attrExcMessage    = "exception.message"
	eventException    = "exception"
	grpcDeadline      = "4" // DEADLINE_EXCEEDED
)

// timeoutCause says why a span counts as timed out.
type timeoutCause uint8

const (
	notTimedOut timeoutCause = iota
	toHTTP                   // HTTP 504 or 408
	toGRPC                   // gRPC DEADLINE_EXCEEDED
	toErrorType              // error.type names a timeout
	toException              // an exception event names a timeout
	toStatus                 // the status message names a timeout
)

// namesTimeout reports whether s names a timeout or a deadline.
func namesTimeout(s string) bool {
	return containsFold(s, "timeout") || containsFold(s, "timed out") ||
		containsFold(s, "timed_out") || containsFold(s, "timedout") ||
		containsFold(s, "deadline")
}

// httpStatus is the span's HTTP response status code, 0 when none.
func httpStatus(s *Span) int {
	if len(s.Attributes) == 0 {
		return 0
	}
	v, ok := s.Attributes[attrHTTPStatus]
	if !ok {
		v = s.Attributes[attrHTTPStatusOld]
	}
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// timedOut says whether, and why, a span timed out.
func timedOut(s *Span) timeoutCause {
	if len(s.Attributes) != 0 {
		if c := httpStatus(s); c == 504 || c == 408 {
			return toHTTP
		}
		if s.Attributes[attrGRPCStatus] == grpcDeadline {
			return toGRPC
		}
		if v := s.Attributes[attrErrorType]; v != "" && namesTimeout(v) {
			return toErrorType
		}
	}
	if exceptionTimeout(s) >= 0 {
		return toException
	}
	if s.StatusMessage != "" && namesTimeout(s.StatusMessage) {
		return toStatus
	}
	return notTimedOut
}

// exceptionTimeout is the index of the first exception event naming a
// timeout, -1 when none.
func exceptionTimeout(s *Span) int {
	for k := range s.Events {
		e := &s.Events[k]
		if e.Name != eventException {
			continue
		}
		if namesTimeout(e.Attributes[attrExcType]) || namesTimeout(e.Attributes[attrExcMessage]) {
			return k
		}
	}
	return -1
}

// timeoutReason renders why a span timed out: "HTTP 504",
// "gRPC DEADLINE_EXCEEDED", "error.type context.DeadlineExceeded", ...
func timeoutReason(s *Span, c timeoutCause) string {
	switch c {
	case toHTTP:
		return "HTTP " + strconv.Itoa(httpStatus(s))
	case toGRPC:
		return "gRPC DEADLINE_EXCEEDED"
	case toErrorType:
		return "error.type " + clip(s.Attributes[attrErrorType], 120)
	case toException:
		if k := exceptionTimeout(s); k >= 0 {
			return "exception " + exceptionText(&s.Events[k])
		}
	case toStatus:
		return "status \"" + clip(s.StatusMessage, 160) + "\""
	}
	return "timeout"
}

// exceptionText is "Type: message" of an exception event (either part may be
// missing).
func exceptionText(e *Event) string {
	typ, msg := clip(e.Attributes[attrExcType], 80), clip(e.Attributes[attrExcMessage], 160)
	switch {
	case typ == "":
		return msg
	case msg == "":
		return typ
	}
	return typ + ": " + msg
}

// errorText describes why a span failed, for a summary: its status message,
// else its first exception, else error.type, else its HTTP or gRPC status;
// "" when nothing says.
func errorText(s *Span) string {
	if s.StatusMessage != "" {
		txt := "\"" + clip(s.StatusMessage, 160) + "\""
		for k := range s.Events {
			if e := &s.Events[k]; e.Name == eventException && e.Attributes[attrExcType] != "" {
				txt += " (" + clip(e.Attributes[attrExcType], 80) + ")"
				break
			}
		}
		return txt
	}
	for k := range s.Events {
		if e := &s.Events[k]; e.Name == eventException {
			if txt := exceptionText(e); txt != "" {
				return txt
			}
		}
	}
	if v := s.Attributes[attrErrorType]; v != "" {
		return "error.type " + clip(v, 120)
	}
	if c := httpStatus(s); c != 0 {
		return "HTTP " + strconv.Itoa(c)
	}
	if v := s.Attributes[attrGRPCStatus]; v != "" && v != "0" {
		return "gRPC status " + clip(v, 20)
	}
	return ""
}

// failed reports whether a call attempt failed: status ERROR, error.type
// set, an HTTP 5xx or 429 or 408, a retryable gRPC status (UNKNOWN,
// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL, UNAVAILABLE), or
// a timeout named by an exception or the status message.
func failed(s *Span) bool {
	if s.StatusCode == StatusError {
		return true
	}
	if len(s.Attributes) != 0 {
		if c := httpStatus(s); c >= 500 || c == 429 || c == 408 {
			return true
		}
		switch s.Attributes[attrGRPCStatus] {
		case "2", "4", "8", "10", "13", "14":
			return true
		}
		if s.Attributes[attrErrorType] != "" {
			return true
		}
	}
	return exceptionTimeout(s) >= 0 || s.StatusMessage != "" && namesTimeout(s.StatusMessage)
}

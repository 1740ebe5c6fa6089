package analyze

import (
	"strconv"

	"github.com/tracesift/tracesift/internal/model"
)

// Attribute keys read by the analyzers (OpenTelemetry semantic conventions,
// old and new names).
const (
	attrHTTPStatus    = "http.response.status_code"
	attrHTTPStatusOld = "http.status_code"
	attrGRPCStatus    = "rpc.grpc.status_code"
	attrErrorType     = "error.type"
	attrExcType       = "exception.type"
	attrExcMessage    = "exception.message"
)

// httpStatus is the span's HTTP response status code, 0 when none.
func httpStatus(s *model.Span) int {
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

// timeoutReason renders why a span timed out: "HTTP 504",
// "gRPC DEADLINE_EXCEEDED", "error.type context.DeadlineExceeded", ...
func timeoutReason(s *model.Span) string {
	switch cause, key := s.TimedOut(); cause {
	case model.TimeoutStatus:
		if key == attrGRPCStatus {
			return "gRPC DEADLINE_EXCEEDED"
		}
		return "HTTP " + clip(s.Attributes[key], 20)
	case model.TimeoutText:
		return key + " " + clip(s.Attributes[key], 120)
	case model.TimeoutException:
		return "exception " + exceptionText(&s.Events[s.TimeoutEvent()])
	case model.TimeoutMessage:
		return "status \"" + clip(s.StatusMessage, 160) + "\""
	}
	return "timeout"
}

// exceptionText is "Type: message" of an exception event (either part may be
// missing; error.type stands in for the type).
func exceptionText(e *model.Event) string {
	typ, msg := e.Attributes[attrExcType], clip(e.Attributes[attrExcMessage], 160)
	if typ == "" {
		typ = e.Attributes[attrErrorType]
	}
	typ = clip(typ, 80)
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
func errorText(s *model.Span) string {
	if s.StatusMessage != "" {
		txt := "\"" + clip(s.StatusMessage, 160) + "\""
		for k := range s.Events {
			if e := &s.Events[k]; e.Name == model.ExceptionEvent && e.Attributes[attrExcType] != "" {
				txt += " (" + clip(e.Attributes[attrExcType], 80) + ")"
				break
			}
		}
		return txt
	}
	for k := range s.Events {
		if e := &s.Events[k]; e.Name == model.ExceptionEvent {
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
func failed(s *model.Span) bool {
	if s.StatusCode == model.StatusError {
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
	return s.TimeoutEvent() >= 0 || model.NamesTimeout(s.StatusMessage)
}

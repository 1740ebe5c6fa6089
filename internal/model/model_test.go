package model

import "testing"

func TestKindAndStatusNames(t *testing.T) {
	for k := KindUnspecified; k <= KindConsumer; k++ {
		if got := ParseKind(k.String()); got != k {
			t.Errorf("ParseKind(%q) = %d, want %d", k.String(), got, k)
		}
	}
	if Kind(9).String() != "unspecified" || ParseKind("SERVER") != KindUnspecified {
		t.Error("unknown kinds are unspecified")
	}
	for c := StatusUnset; c <= StatusError; c++ {
		if got := ParseStatusCode(c.String()); got != c {
			t.Errorf("ParseStatusCode(%q) = %d, want %d", c.String(), got, c)
		}
	}
	if StatusCode(3).String() != "" || ParseStatusCode("") != StatusUnset {
		t.Error("an unknown status code has no name and reads back as unset")
	}
}

func TestTimedOut(t *testing.T) {
	exc := func(attrs map[string]string) []Event { return []Event{{Name: ExceptionEvent, Attributes: attrs}} }
	tests := []struct {
		name  string
		span  Span
		cause TimeoutCause
		key   string
	}{
		{"nothing", Span{}, NotTimedOut, ""},
		{"HTTP 504", Span{Attributes: map[string]string{"http.response.status_code": "504"}}, TimeoutStatus, "http.response.status_code"},
		{"HTTP 408, old key", Span{Attributes: map[string]string{"http.status_code": "408"}}, TimeoutStatus, "http.status_code"},
		{"HTTP 500", Span{Attributes: map[string]string{"http.response.status_code": "500"}}, NotTimedOut, ""},
		{"gRPC 4", Span{Attributes: map[string]string{"rpc.grpc.status_code": "4"}}, TimeoutStatus, "rpc.grpc.status_code"},
		{"gRPC name", Span{Attributes: map[string]string{"rpc.grpc.status_code": "deadline_exceeded"}}, TimeoutStatus, "rpc.grpc.status_code"},
		{"gRPC 14", Span{Attributes: map[string]string{"rpc.grpc.status_code": "14"}}, NotTimedOut, ""},
		{"error.type", Span{Attributes: map[string]string{"error.type": "java.net.SocketTimeoutException"}}, TimeoutText, "error.type"},
		{"exception.type on the span", Span{Attributes: map[string]string{"exception.type": "System.TimeoutException"}}, TimeoutText, "exception.type"},
		{"exception message", Span{Events: exc(map[string]string{"exception.message": "Read timed out"})}, TimeoutException, ""},
		{"exception error.type", Span{Events: exc(map[string]string{"error.type": "ETIMEDOUT"})}, TimeoutException, ""},
		{"not an exception event", Span{Events: []Event{{Name: "log", Attributes: map[string]string{"exception.type": "Timeout"}}}}, NotTimedOut, ""},
		{"status message", Span{StatusMessage: "context deadline exceeded"}, TimeoutMessage, ""},
		{"timed_out", Span{StatusMessage: "upstream TIMED_OUT"}, TimeoutMessage, ""},
		{"dead line is not a deadline", Span{StatusMessage: "dead line"}, NotTimedOut, ""},
	}
	for _, tt := range tests {
		if cause, key := tt.span.TimedOut(); cause != tt.cause || key != tt.key {
			t.Errorf("%s: TimedOut() = %d %q, want %d %q", tt.name, cause, key, tt.cause, tt.key)
		}
	}
}

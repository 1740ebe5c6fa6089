package otlpwire

import (
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrMalformed is wrapped by every error Scan returns: the request is not
// valid OTLP protobuf, and an OTLP receiver answers 400 / InvalidArgument
// (retrying the same bytes cannot succeed).
var ErrMalformed = errors.New("malformed OTLP trace request")

// Error says what is malformed in a request and where, so that an operator
// can find the offending client and byte from a log line alone.
type Error struct {
	// Offset is the byte offset in the request of the tag of the field that
	// could not be read.
	Offset int
	// Path names the message holding that field, from the request down, as
	// "resource_spans[0].scope_spans[2].spans[7].status"; empty for the
	// request itself.
	Path string
	// Field is the field's name in the .proto ("span_id"), or "tag" when the
	// tag itself could not be read.
	Field string
	// Reason is what is wrong with it.
	Reason string

	cause error // io.ErrUnexpectedEOF for truncated input
}

func (e *Error) Error() string {
	path := e.Path
	if path == "" {
		path = "request"
	}
	return fmt.Sprintf("%s: %s: %s %s (byte %d)", ErrMalformed, path, e.Field, e.Reason, e.Offset)
}

// Unwrap lets errors.Is match ErrMalformed and, for truncated input,
// io.ErrUnexpectedEOF.
func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrMalformed, e.cause}
	}
	return []error{ErrMalformed}
}

// in prefixes the path with the field that holds the failing message, as the
// error unwinds: paths are only built for requests that fail.
func (e *Error) in(field string, index int) *Error {
	seg := field
	if index >= 0 {
		seg = field + "[" + strconv.Itoa(index) + "]"
	}
	if e.Path == "" {
		e.Path = seg
	} else {
		e.Path = seg + "." + e.Path
	}
	return e
}

// The constructors are kept out of line so that the parsers' happy paths stay
// small.

//go:noinline
func faultErr(off int, field string, f fault) *Error {
	e := &Error{Offset: off, Field: field, Reason: f.String()}
	if f == faultEOF {
		e.cause = io.ErrUnexpectedEOF
	}
	return e
}

//go:noinline
func wireTypeErr(off int, field string, got, want int8) *Error {
	return &Error{Offset: off, Field: field, Reason: fmt.Sprintf("has wire type %d, want %d", got, want)}
}

//go:noinline
func idLenErr(off int, field string, got, want int) *Error {
	return &Error{Offset: off, Field: field, Reason: fmt.Sprintf("is %d bytes, want %d or none", got, want)}
}

package otlpraw

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tracesift/tracesift/internal/httpbody"
	"github.com/tracesift/tracesift/internal/otlpwire"
)

// traceStatus turns what TraceSampler.ConsumeRawTraces returned into the
// status the client gets (nil: success), per the TraceSampler contract.
func traceStatus(err error) *status.Status {
	if err == nil {
		return nil
	}
	// First: a malformed request must be reported as such even when the
	// sampler wrapped the error in something else (consumererror.Permanent).
	if errors.Is(err, otlpwire.ErrMalformed) {
		return status.New(codes.InvalidArgument, err.Error())
	}
	if st, ok := status.FromError(err); ok {
		return st
	}
	// OTLP says: retry unless told otherwise.
	return unavailable(err)
}

// logsStatus does the same for the logs consumer, as the Collector's otlp
// receiver does: a permanent error without a status is the server's fault
// and not retried (Internal / 500), anything else is retryable.
func logsStatus(err error) *status.Status {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok {
		return st
	}
	if consumererror.IsPermanent(err) {
		return status.New(codes.Internal, err.Error())
	}
	return unavailable(err)
}

// unavailableRetryDelay is when a client is told to come back after the
// pipeline could not take its request (the exporter's queue full while the
// store is down or slow): soon enough to lose no time once it recovers.
const unavailableRetryDelay = 5 * time.Second

// busyRetryDelay is when a client refused by max_bytes_in_flight is told to
// come back: other requests' bodies are answered within moments.
const busyRetryDelay = time.Second

// unavailable is Unavailable with a RetryInfo, which HTTP clients get as
// 503 with Retry-After.
func unavailable(err error) *status.Status {
	return retryStatus(codes.Unavailable, err.Error(), unavailableRetryDelay)
}

// busy is the answer to a request over max_bytes_in_flight: 429 with
// Retry-After, ResourceExhausted with RetryInfo.
func busy() *status.Status {
	return retryStatus(codes.ResourceExhausted, httpbody.ErrBusy.Error()+"; retry shortly", busyRetryDelay)
}

// retryStatus is a status telling the client to retry after delay.
func retryStatus(code codes.Code, msg string, delay time.Duration) *status.Status {
	st := status.New(code, msg)
	if withRetry, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)}); err == nil {
		return withRetry
	}
	return st
}

// outcomeOf classifies a final status for otelcol_tracesift_receiver_requests.
func outcomeOf(st *status.Status) outcome {
	switch st.Code() { // a nil *Status has code OK
	case codes.OK:
		return outcomeOK
	case codes.InvalidArgument:
		return outcomeMalformed
	case codes.ResourceExhausted:
		return outcomeRefused
	default:
		return outcomeError
	}
}

// httpStatusCode maps a gRPC code to the OTLP/HTTP status code, as the
// OTLP specification and the Collector's otlp receiver do: the retryable
// codes become 429 or 503, which OTLP/HTTP exporters retry.
func httpStatusCode(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
		return http.StatusServiceUnavailable
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.Unimplemented:
		return http.StatusNotFound
	default:
		return http.StatusInternalServerError
	}
}

// codeForHTTPStatus is the reverse, for the errors confighttp reports by
// HTTP status (unsupported Content-Encoding, failed authentication).
func codeForHTTPStatus(httpCode int) codes.Code {
	switch httpCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return codes.InvalidArgument
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return codes.Unimplemented
	case http.StatusTooManyRequests:
		return codes.ResourceExhausted
	case http.StatusServiceUnavailable:
		return codes.Unavailable
	default:
		return codes.Unknown
	}
}

// retryAfter renders the status' RetryInfo delay as a Retry-After value in
// whole seconds, rounded up: a client told to come back in 1.5 s must not
// come back after 1 s. ok is false when the status carries no RetryInfo.
func retryAfter(st *status.Status) (string, bool) {
	for _, d := range st.Details() {
		ri, isRI := d.(*errdetails.RetryInfo)
		if !isRI || ri.GetRetryDelay() == nil {
			continue
		}
		delay := ri.GetRetryDelay().AsDuration()
		secs := int64((delay + time.Second - 1) / time.Second)
		return strconv.FormatInt(max(secs, 0), 10), true
	}
	return "", false
}

package otlpraw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tracesift/tracesift/internal/httpbody"
	"github.com/tracesift/tracesift/internal/otlpwire"
)

func TestTraceStatus(t *testing.T) {
	malformed := fmt.Errorf("tracesift_sampler: %w", &otlpwire.Error{Field: "span_id", Reason: "is 3 bytes"})
	tests := []struct {
		name    string
		err     error
		want    codes.Code
		outcome outcome
	}{
		{"nil", nil, codes.OK, outcomeOK},
		{"malformed", malformed, codes.InvalidArgument, outcomeMalformed},
		{"malformed, permanent", consumererror.NewPermanent(malformed), codes.InvalidArgument, outcomeMalformed},
		{"status as is", status.Error(codes.ResourceExhausted, "full"), codes.ResourceExhausted, outcomeRefused},
		{"wrapped status", fmt.Errorf("ctx: %w", status.Error(codes.PermissionDenied, "no")), codes.PermissionDenied, outcomeError},
		{"anything else", errors.New("boom"), codes.Unavailable, outcomeError},
		{"context", context.Canceled, codes.Unavailable, outcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := traceStatus(tt.err)
			assert.Equal(t, tt.want, st.Code())
			assert.Equal(t, tt.outcome, outcomeOf(st))
			if tt.err != nil {
				assert.Contains(t, st.Message(), status.Convert(tt.err).Message())
			}
		})
	}
}

func TestLogsStatus(t *testing.T) {
	assert.Nil(t, logsStatus(nil))
	assert.Equal(t, codes.Unavailable, logsStatus(errors.New("later")).Code())
	ra, ok := retryAfter(logsStatus(errors.New("sending queue is full")))
	assert.True(t, ok, "a client told to retry is told when")
	assert.Equal(t, "5", ra)
	assert.Equal(t, codes.Internal, logsStatus(consumererror.NewPermanent(errors.New("never"))).Code())
	assert.Equal(t, codes.ResourceExhausted, logsStatus(status.Error(codes.ResourceExhausted, "full")).Code())
}

func TestHTTPStatusCode(t *testing.T) {
	for c, want := range map[codes.Code]int{
		codes.OK:                http.StatusOK,
		codes.InvalidArgument:   http.StatusBadRequest,
		codes.ResourceExhausted: http.StatusTooManyRequests,
		codes.Unavailable:       http.StatusServiceUnavailable,
		codes.DeadlineExceeded:  http.StatusServiceUnavailable,
		codes.Unauthenticated:   http.StatusUnauthorized,
		codes.PermissionDenied:  http.StatusForbidden,
		codes.Unimplemented:     http.StatusNotFound,
		codes.Internal:          http.StatusInternalServerError,
		codes.Unknown:           http.StatusInternalServerError,
	} {
		assert.Equal(t, want, httpStatusCode(c), "%v", c)
	}
}

func TestRetryAfter(t *testing.T) {
	with := func(d time.Duration) *status.Status {
		st, err := status.New(codes.ResourceExhausted, "full").
			WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
		require.NoError(t, err)
		return st
	}
	for d, want := range map[time.Duration]string{
		time.Second: "1", 1500 * time.Millisecond: "2", 100 * time.Millisecond: "1", 0: "0", 30 * time.Second: "30",
	} {
		got, ok := retryAfter(with(d))
		assert.True(t, ok)
		assert.Equal(t, want, got, "%s", d)
	}
	_, ok := retryAfter(status.New(codes.ResourceExhausted, "no retry info"))
	assert.False(t, ok)
}

func TestHumanBytes(t *testing.T) {
	assert.Equal(t, "16 MiB", httpbody.FormatBytes(16<<20))
	assert.Equal(t, "4 KiB", httpbody.FormatBytes(4096))
	assert.Equal(t, "1536 KiB", httpbody.FormatBytes(3<<19))
	assert.Equal(t, "1.5 MiB", httpbody.FormatBytes(3<<19+1))
	assert.Equal(t, "1000 B", httpbody.FormatBytes(1000))
}

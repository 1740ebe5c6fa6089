package otlpraw

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// scopeName is the instrumentation scope of the receiver's self-metrics.
const scopeName = "github.com/tracesift/tracesift/internal/receiver/otlpraw"

type signal int

const (
	signalTraces signal = iota
	signalLogs
	numSignals
)

var signalNames = [numSignals]string{"traces", "logs"}

type transport int

const (
	transportGRPC transport = iota
	transportHTTP
	numTransports
)

var transportNames = [numTransports]string{"grpc", "http"}

// outcome is the `outcome` attribute of tracesift_receiver_requests.
type outcome int

const (
	// outcomeOK: accepted (handed to the sampler or the logs consumer).
	outcomeOK outcome = iota
	// outcomeMalformed: the request can never be accepted as sent: not
	// valid OTLP (400 / InvalidArgument), too large (413), wrong method
	// (405) or media type (415). Retrying it is pointless.
	outcomeMalformed
	// outcomeRefused: back-pressure, ResourceExhausted / 429; the client
	// retries after the delay it was given.
	outcomeRefused
	// outcomeError: any other failure (503 Unavailable and the like).
	outcomeError
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "malformed", "refused", "error"}

// telemetry holds the instruments and their attribute sets, built once:
// every request records on them. The options are kept as slices, passed
// with "...", so that recording allocates no variadic slice.
type telemetry struct {
	requests metric.Int64Counter
	bytes    metric.Int64Counter

	requestAttrs [numSignals][numTransports][numOutcomes][]metric.AddOption
	bytesAttrs   [numSignals][]metric.AddOption
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	m := mp.Meter(scopeName)
	var errs []error
	requests, err := m.Int64Counter("tracesift_receiver_requests",
		metric.WithDescription("OTLP export requests received, by signal (traces|logs), transport (grpc|http) and "+
			"outcome: ok; malformed (not valid OTLP, too large, wrong method or media type: never retried); "+
			"refused (ResourceExhausted / 429: the client retries later); error (any other failure, e.g. 503)."),
		metric.WithUnit("{request}"))
	if err != nil {
		errs = append(errs, fmt.Errorf("metric tracesift_receiver_requests: %w", err))
	}
	bytes, err := m.Int64Counter("tracesift_receiver_bytes",
		metric.WithDescription("Bytes of OTLP request bodies received in full (after decompression), by signal "+
			"(traces|logs), whatever the outcome."),
		metric.WithUnit("By"))
	if err != nil {
		errs = append(errs, fmt.Errorf("metric tracesift_receiver_bytes: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t := &telemetry{requests: requests, bytes: bytes}
	for s := range numSignals {
		t.bytesAttrs[s] = []metric.AddOption{
			metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", signalNames[s]))),
		}
		for tr := range numTransports {
			for o := range numOutcomes {
				t.requestAttrs[s][tr][o] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
					attribute.String("signal", signalNames[s]),
					attribute.String("transport", transportNames[tr]),
					attribute.String("outcome", outcomeNames[o])))}
			}
		}
	}
	return t, nil
}

package otlpraw

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tracesift/tracesift/internal/receiver/otlpraw/internal/metadata"
)

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

// outcome is the `outcome` attribute of otelcol_tracesift_receiver_requests.
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

// telemetry holds the instruments (declared in metadata.yaml, generated into
// internal/metadata) and their attribute sets, built once: every request
// records on them. The options are kept as slices, passed with "...", so
// that recording allocates no variadic slice.
type telemetry struct {
	*metadata.TelemetryBuilder

	requestAttrs [numSignals][numTransports][numOutcomes][]metric.AddOption
	bytesAttrs   [numSignals][]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{TelemetryBuilder: tb}
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

package loki

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/tracesift/tracesift/internal/receiver/loki/internal/metadata"
)

// endpoint is the `endpoint` attribute of the metrics.
type endpoint int

const (
	endpointPush  endpoint = iota // /loki/api/v1/push (and /api/prom/push)
	endpointLines                 // /api/v1/logs/lines
	numEndpoints
)

var endpointNames = [numEndpoints]string{"push", "lines"}

// outcome is the `outcome` attribute of otelcol_tracesift_loki_requests.
type outcome int

const (
	// outcomeOK: decoded and accepted by the pipeline (204 / 200).
	outcomeOK outcome = iota
	// outcomeMalformed: the request can never be accepted as sent (400
	// unreadable body or bad query parameter, 405, 413, 415).
	outcomeMalformed
	// outcomeUnauthorized: refused by the configured authenticator.
	outcomeUnauthorized
	// outcomeUnavailable: the pipeline refused the records with a
	// retryable error (503); the client sends them again.
	outcomeUnavailable
	// outcomeDropped: the pipeline refused the records with a permanent
	// error (400); they are lost (otelcol_tracesift_loki_records_dropped).
	outcomeDropped
	// outcomeLimited: over max_lines_per_second (429: the client retries).
	outcomeLimited
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "malformed", "unauthorized", "unavailable", "dropped", "limited"}

// reason is the `reason` attribute of
// otelcol_tracesift_loki_records_invalid: why a record was stored otherwise
// than it was sent. A record counts at most once per reason.
type reason int

const (
	// reasonInvalidUTF8: a text value was not valid UTF-8; the bad bytes
	// were replaced with U+FFFD.
	reasonInvalidUTF8 reason = iota
	// reasonBadTimestamp: the timestamp was missing or unreadable; the
	// record has the receive time.
	reasonBadTimestamp
	// reasonNotJSON: an NDJSON line that is not a JSON object, stored raw
	// as the body.
	reasonNotJSON
	// reasonBadEntry: a push entry of the wrong shape (not an array, a
	// line that is not a string, metadata that is not an object), stored
	// with the JSON text of what it had.
	reasonBadEntry
	// reasonBadLabels: a stream's label set could not be parsed; its text
	// is kept in the resource attribute loki.labels.
	reasonBadLabels
	numReasons
)

var reasonNames = [numReasons]string{"invalid_utf8", "bad_timestamp", "not_json", "bad_entry", "bad_labels"}

// telemetry holds the instruments (declared in metadata.yaml, generated into
// internal/metadata) and their attribute sets, built once. The options are
// kept as slices, passed with "...", so that recording allocates no
// variadic slice.
type telemetry struct {
	*metadata.TelemetryBuilder

	requestAttrs  [numEndpoints][numOutcomes][]metric.AddOption
	endpointAttrs [numEndpoints][]metric.AddOption
	reasonAttrs   [numReasons][]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{TelemetryBuilder: tb}
	for e := range numEndpoints {
		t.endpointAttrs[e] = []metric.AddOption{
			metric.WithAttributeSet(attribute.NewSet(attribute.String("endpoint", endpointNames[e]))),
		}
		for o := range numOutcomes {
			t.requestAttrs[e][o] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				attribute.String("endpoint", endpointNames[e]),
				attribute.String("outcome", outcomeNames[o])))}
		}
	}
	for r := range numReasons {
		t.reasonAttrs[r] = []metric.AddOption{
			metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reasonNames[r]))),
		}
	}
	return t, nil
}

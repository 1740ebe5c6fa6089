package loki

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// scopeName is the instrumentation scope of the receiver's self-metrics.
const scopeName = "github.com/tracesift/tracesift/internal/receiver/loki"

// endpoint is the `endpoint` attribute of the metrics.
type endpoint int

const (
	endpointPush  endpoint = iota // /loki/api/v1/push (and /api/prom/push)
	endpointLines                 // /api/v1/logs/lines
	numEndpoints
)

var endpointNames = [numEndpoints]string{"push", "lines"}

// outcome is the `outcome` attribute of tracesift_loki_requests.
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
	// error (400); they are lost (tracesift_loki_records_dropped).
	outcomeDropped
	// outcomeLimited: over max_lines_per_second (429: the client retries).
	outcomeLimited
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "malformed", "unauthorized", "unavailable", "dropped", "limited"}

// reason is the `reason` attribute of tracesift_loki_records_invalid: why a
// record was stored otherwise than it was sent. A record counts at most once
// per reason.
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

// telemetry holds the instruments and their attribute sets, built once. The
// options are kept as slices, passed with "...", so that recording
// allocates no variadic slice.
type telemetry struct {
	requests  metric.Int64Counter
	records   metric.Int64Counter
	dropped   metric.Int64Counter
	truncated metric.Int64Counter
	invalid   metric.Int64Counter
	bytes     metric.Int64Counter

	requestAttrs  [numEndpoints][numOutcomes][]metric.AddOption
	endpointAttrs [numEndpoints][]metric.AddOption
	reasonAttrs   [numReasons][]metric.AddOption
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	m := mp.Meter(scopeName)
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		if err != nil {
			errs = append(errs, fmt.Errorf("metric %s: %w", name, err))
		}
		return c
	}
	t := &telemetry{
		requests: counter("tracesift_loki_requests", "{request}",
			"Requests received, by endpoint (push|lines) and outcome: ok; malformed (unreadable body, bad "+
				"query parameter, too large, wrong method or media type: never retried); unauthorized; "+
				"unavailable (the pipeline refused with a retryable error, 503: the client retries); dropped "+
				"(the pipeline refused with a permanent error, 400: the records are lost); limited (over "+
				"max_lines_per_second, 429: the client retries)."),
		records: counter("tracesift_loki_records", "{record}",
			"Log records accepted by the pipeline, by endpoint (push|lines)."),
		dropped: counter("tracesift_loki_records_dropped", "{record}",
			"Log records decoded but lost because the pipeline refused them with a permanent error, by "+
				"endpoint (push|lines)."),
		truncated: counter("tracesift_loki_records_truncated", "{record}",
			"Log records with a line or attribute value longer than max_line_bytes, cut to it."),
		invalid: counter("tracesift_loki_records_invalid", "{record}",
			"Log records stored otherwise than sent, by reason: invalid_utf8 (bytes replaced with U+FFFD), "+
				"bad_timestamp (stored with the receive time), not_json (NDJSON line stored raw), bad_entry "+
				"(push entry of the wrong shape, stored as its JSON text), bad_labels (unparsable label set, "+
				"kept in loki.labels)."),
		bytes: counter("tracesift_loki_bytes", "By",
			"Bytes of request bodies read in full (after HTTP Content-Encoding decompression, before "+
				"snappy decoding), by endpoint (push|lines), whatever the outcome."),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
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

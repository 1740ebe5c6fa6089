package tailsampler

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// scopeName is the instrumentation scope of the sampler's self-metrics.
const scopeName = "github.com/tracesift/tracesift/internal/tailsampler"

const (
	decisionKept    = "kept"
	decisionDropped = "dropped"
)

// telemetry holds the instruments and the attribute sets they are recorded
// with; the sets are built once because shards record on every decision.
type telemetry struct {
	spansReceived  metric.Int64Counter
	spansInvalid   metric.Int64Counter
	tracesDecided  metric.Int64Counter
	spansDropped   metric.Int64Counter
	spansLate      metric.Int64Counter
	exportErrors   metric.Int64Counter
	tracesBuffered metric.Int64UpDownCounter

	// decidedAttrs is indexed by Reason.rank(); rank 0 (none) is the dropped set.
	decidedAttrs [5]metric.AddOption
	lateKept     metric.AddOption
	lateDropped  metric.AddOption
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	m := mp.Meter(scopeName)
	t := &telemetry{}
	var errs []error
	counter := func(name, desc, unit string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		if err != nil {
			errs = append(errs, fmt.Errorf("metric %s: %w", name, err))
		}
		return c
	}
	t.spansReceived = counter("tracesift_sampler_spans_received",
		"Spans received by the sampler, valid or not.", "{span}")
	t.spansInvalid = counter("tracesift_sampler_spans_invalid",
		"Spans skipped because their trace id or span id is empty.", "{span}")
	t.tracesDecided = counter("tracesift_sampler_traces_decided",
		"Traces decided, by decision (kept|dropped) and keep reason.", "{trace}")
	t.spansDropped = counter("tracesift_sampler_spans_dropped",
		"Spans of dropped traces, including late spans of traces already dropped.", "{span}")
	t.spansLate = counter("tracesift_sampler_spans_late",
		"Spans that arrived after their trace was decided; they follow the decision.", "{span}")
	t.exportErrors = counter("tracesift_sampler_export_errors",
		"Calls to the next consumer that failed; their spans are lost.", "{error}")
	var err error
	t.tracesBuffered, err = m.Int64UpDownCounter("tracesift_sampler_traces_buffered",
		metric.WithDescription("Traces buffered in the shards, waiting for a decision."), metric.WithUnit("{trace}"))
	if err != nil {
		errs = append(errs, fmt.Errorf("metric tracesift_sampler_traces_buffered: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	for _, r := range []Reason{ReasonNone, ReasonBaseline, ReasonSlow, ReasonTimeout, ReasonError} {
		decision := decisionKept
		if r == ReasonNone {
			decision = decisionDropped
		}
		t.decidedAttrs[r.rank()] = metric.WithAttributeSet(attribute.NewSet(
			attribute.String("decision", decision),
			attribute.String("reason", r.metricValue()),
		))
	}
	t.lateKept = metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", decisionKept)))
	t.lateDropped = metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", decisionDropped)))
	return t, nil
}

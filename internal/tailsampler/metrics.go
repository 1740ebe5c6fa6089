package tailsampler

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"go.opentelemetry.io/otel/metric"

	"github.com/tracesift/tracesift/internal/analyze"
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
	spansReceived     metric.Int64Counter
	spansInvalid      metric.Int64Counter
	tracesDecided     metric.Int64Counter
	spansDropped      metric.Int64Counter
	spansLate         metric.Int64Counter
	exportErrors      metric.Int64Counter
	tracesBuffered    metric.Int64UpDownCounter
	bufferedBytes     metric.Int64UpDownCounter
	earlyDecisions    metric.Int64Counter
	spansKept         metric.Int64Counter
	lateness          metric.Float64Histogram
	decisionLatency   metric.Float64Histogram
	baselineCapped    metric.Int64Counter
	pushbacks         metric.Int64Counter
	frameBytes        metric.Int64Counter
	findingsCount     metric.Int64Counter
	findingsDropped   metric.Int64Counter
	compressionPauses metric.Int64Counter

	// decidedAttrs is indexed by Reason.rank(); rank 0 (none) is the dropped set.
	decidedAttrs [numReasons]metric.AddOption
	whyAttrs     [numWhy]metric.AddOption
	lateKept     metric.AddOption
	lateDropped  metric.AddOption
	formPlain    metric.AddOption
	formStored   metric.AddOption
	kindAttrs    map[string]metric.AddOption
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	m := mp.Meter(scopeName)
	t := &telemetry{}
	var errs []error
	counter := func(name, desc, unit string) metric.Int64Counter {
		return instrument[metric.Int64Counter, metric.Int64CounterOption](&errs, m.Int64Counter, name,
			metric.WithDescription(desc), metric.WithUnit(unit))
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
	t.earlyDecisions = counter("tracesift_sampler_early_decisions",
		"Traces decided before they were complete and quiet, by why (memory|trace_limit|max_wait).", "{trace}")
	t.baselineCapped = counter("tracesift_sampler_baseline_capped",
		"Traces the baseline would have kept, dropped by baseline_max_per_second.", "{trace}")
	t.spansKept = counter("tracesift_sampler_spans_kept",
		"Spans of kept traces when their trace was decided, by keep reason (late spans are in spans_late).", "{span}")
	// Buckets from 10 ms to 10 min: decisions take decision_wait (10 s by
	// default) to max_wait; late spans come from slow or retrying exporters.
	buckets := metric.Float64HistogramOption(metric.WithExplicitBucketBoundaries(0.01, 0.1, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600))
	t.lateness = instrument(&errs, m.Float64Histogram, "tracesift_sampler_span_lateness_seconds",
		metric.Float64HistogramOption(metric.WithDescription("How long after its trace's decision a late span arrived.")),
		metric.Float64HistogramOption(metric.WithUnit("s")), buckets)
	t.decisionLatency = instrument(&errs, m.Float64Histogram, "tracesift_sampler_decision_latency_seconds",
		metric.Float64HistogramOption(metric.WithDescription("Time from a trace's first span to its decision.")),
		metric.Float64HistogramOption(metric.WithUnit("s")), buckets)
	t.pushbacks = counter("tracesift_sampler_pushbacks",
		"Requests refused with ResourceExhausted (HTTP 429) because the buffer was full.", "{request}")
	t.frameBytes = counter("tracesift_sampler_frame_bytes",
		"Bytes of the span frames the sampler buffered, by form: plain (encoded OTLP) and stored (after "+
			"buffer_compression); their ratio is the compression ratio.", "By")
	t.findingsCount = counter("tracesift_sampler_findings",
		"Findings the analyzers raised on kept traces, by kind.", "{finding}")
	t.findingsDropped = counter("tracesift_sampler_findings_dropped",
		"Findings lost with the kept traces the next consumer rejected.", "{finding}")
	t.compressionPauses = counter("tracesift_sampler_compression_pauses",
		"Times buffer compression was paused because the sampler was overloaded (see buffer_compression).", "{pause}")
	t.tracesBuffered = instrument(&errs, m.Int64UpDownCounter, "tracesift_sampler_traces_buffered",
		metric.Int64UpDownCounterOption(metric.WithDescription("Traces buffered in the shards, waiting for a decision.")),
		metric.Int64UpDownCounterOption(metric.WithUnit("{trace}")))
	t.bufferedBytes = instrument(&errs, m.Int64UpDownCounter, "tracesift_sampler_buffered_bytes",
		metric.Int64UpDownCounterOption(metric.WithDescription(
			"Accounted memory of the spans queued for and buffered in the shards (bounded by max_buffered_bytes).")),
		metric.Int64UpDownCounterOption(metric.WithUnit("By")))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	for _, r := range []Reason{ReasonNone, ReasonBaseline, ReasonClockSkew, ReasonRetries, ReasonSlowRoute, ReasonSlow,
		ReasonTimeout, ReasonError} {
		decision := decisionKept
		if r == ReasonNone {
			decision = decisionDropped
		}
		t.decidedAttrs[r.rank()] = metric.WithAttributeSet(attribute.NewSet(
			attribute.String("decision", decision),
			attribute.String("reason", r.metricValue()),
		))
	}
	for why := 1; why < numWhy; why++ {
		t.whyAttrs[why] = metric.WithAttributeSet(attribute.NewSet(attribute.String("why", whyNames[why])))
	}
	t.lateKept = metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", decisionKept)))
	t.lateDropped = metric.WithAttributeSet(attribute.NewSet(attribute.String("decision", decisionDropped)))
	t.formPlain = metric.WithAttributeSet(attribute.NewSet(attribute.String("form", "plain")))
	t.formStored = metric.WithAttributeSet(attribute.NewSet(attribute.String("form", "stored")))
	t.kindAttrs = map[string]metric.AddOption{}
	for _, k := range []string{analyze.KindSlowestHop, analyze.KindCriticalPath, analyze.KindRetryFanout,
		analyze.KindTimeout, analyze.KindClockSkew, analyze.KindErrorOrigin, analyze.KindBrokenPropagation,
		analyze.KindFanout} {
		t.kindAttrs[k] = metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", k)))
	}
	return t, nil
}

// findingKind is the attribute set of a finding kind; the map is read-only
// once built, and a kind it does not know (none today) gets a fresh set.
func (t *telemetry) findingKind(kind string) metric.AddOption {
	if o, ok := t.kindAttrs[kind]; ok {
		return o
	}
	return metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", kind)))
}

// instrument creates one instrument, collecting the error with its name.
func instrument[T, O any](errs *[]error, create func(string, ...O) (T, error), name string, opts ...O) T {
	inst, err := create(name, opts...)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("metric %s: %w", name, err))
	}
	return inst
}

// observeFrameMemory reports the frame memory's mapped and in-use bytes.
func (t *telemetry) observeFrameMemory(mp metric.MeterProvider, mem *frameMemory) (metric.Registration, error) {
	m := mp.Meter(scopeName)
	g, err := m.Int64ObservableGauge("tracesift_sampler_frame_memory_bytes",
		metric.WithDescription("Memory outside the Go heap holding buffered spans, by state: mapped (resident once "+
			"touched, never returned while running) and in_use (blocks holding frames)."),
		metric.WithUnit("By"))
	if err != nil {
		return nil, fmt.Errorf("metric tracesift_sampler_frame_memory_bytes: %w", err)
	}
	mapped := metric.WithAttributeSet(attribute.NewSet(attribute.String("state", "mapped")))
	inUse := metric.WithAttributeSet(attribute.NewSet(attribute.String("state", "in_use")))
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(g, mem.mapped.Load(), mapped)
		o.ObserveInt64(g, mem.inUse.Load(), inUse)
		return nil
	}, g)
}

package tailsampler

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"

	"go.opentelemetry.io/otel/metric"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/tailsampler/internal/metadata"
)

const (
	decisionKept    = "kept"
	decisionDropped = "dropped"
)

// telemetry holds the instruments (declared in metadata.yaml, generated into
// internal/metadata) and the attribute sets they are recorded with; the sets
// are built once because shards record on every decision.
type telemetry struct {
	*metadata.TelemetryBuilder

	// decidedAttrs is indexed by Reason.rank(); rank 0 (none) is the dropped set.
	decidedAttrs [numReasons]metric.AddOption
	whyAttrs     [numWhy]metric.AddOption
	lateKept     metric.AddOption
	lateDropped  metric.AddOption
	formPlain    metric.AddOption
	formStored   metric.AddOption
	kindAttrs    map[string]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	tb, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	t := &telemetry{TelemetryBuilder: tb}
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
		analyze.KindFanout, red.KindInstanceOutlier, red.KindRetryBudget} {
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

// observeFrameMemory reports the frame memory's mapped and in-use bytes
// until Shutdown.
func (t *telemetry) observeFrameMemory(mem *frameMemory) error {
	mapped := metric.WithAttributeSet(attribute.NewSet(attribute.String("state", "mapped")))
	inUse := metric.WithAttributeSet(attribute.NewSet(attribute.String("state", "in_use")))
	return t.RegisterTracesiftSamplerFrameMemoryBytesCallback(func(_ context.Context, o metric.Int64Observer) error {
		o.Observe(mem.mapped.Load(), mapped)
		o.Observe(mem.inUse.Load(), inUse)
		return nil
	})
}

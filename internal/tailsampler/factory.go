// Package tailsampler is tracesift's tail sampler: it buffers each trace, as
// OTLP wire bytes, in the shard that owns its trace id until its root has
// arrived and it has been quiet for decision_wait (or max_wait has passed),
// then keeps it if it has an error or a timeout, is slow (for everyone or for
// its route), or falls in the deterministic baseline, and forwards kept traces
// whole, decoded. Memory is bounded in bytes. It runs as the processor
// tracesift_sampler, or inside the tracesift_otlp receiver (NewRaw), which
// hands it request bytes.
package tailsampler

//go:generate mdatagen metadata.yaml

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/tracesift/tracesift/internal/tailsampler/internal/metadata"
)

// NewFactory returns the factory of the tracesift_sampler processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithTraces(createTraces, metadata.TracesStability),
	)
}

func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected config type %T", metadata.Type, cfg)
	}
	p, err := newSampler(set, c, next)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// RawSampler is the sampler for a receiver that hands it the bytes of OTLP
// requests (internal/receiver/otlpraw), so that spans are never decoded unless
// kept.
type RawSampler interface {
	component.Component
	// ConsumeRawTraces samples an OTLP ExportTraceServiceRequest; see
	// sampler.ConsumeRawTraces.
	ConsumeRawTraces(ctx context.Context, req []byte) error
}

// NewRaw builds a sampler that forwards kept traces to next.
func NewRaw(set processor.Settings, cfg *Config, next consumer.Traces) (RawSampler, error) {
	return newSampler(set, cfg, next)
}

// NewReceipted builds a sampler that forwards kept traces to next and
// settles receipts (a Kafka consumer's), recording the decisions of the
// traces that came with them in log (nil: not recorded). Findings, clock
// offsets and RED go down the pipeline with the kept spans, for a store
// further on (analyze::store names none here).
func NewReceipted(set processor.Settings, cfg *Config, next consumer.Traces, log DecisionLog) (ReceiptSampler, error) {
	p, err := newSampler(set, cfg, next)
	if err != nil {
		return nil, err
	}
	p.decisions = log
	p.forwardAnalysis = true
	if cfg.RED.Enabled && p.red == nil {
		p.red = newREDCounter(cfg.RED, next, p.tel, p.logger)
	}
	return p, nil
}

package otlpraw

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"

	"github.com/tracesift/tracesift/internal/kafka"
	"github.com/tracesift/tracesift/internal/receiver/otlpraw/internal/metadata"
	"github.com/tracesift/tracesift/internal/tailsampler"
)

// TraceSampler takes raw OTLP ExportTraceServiceRequest bytes.
type TraceSampler interface {
	component.Component
	// ConsumeRawTraces must not retain req after it returns (copy what it keeps).
	// Errors: wrapping otlpwire.ErrMalformed → the request is malformed (gRPC InvalidArgument / HTTP 400);
	// a gRPC status error (e.g. ResourceExhausted with RetryInfo) → passed to the client as is (HTTP: the
	// matching code, 429 with Retry-After for ResourceExhausted); anything else → Unavailable / 503.
	ConsumeRawTraces(ctx context.Context, req []byte) error
}

// SamplerFactory creates the sampler of a receiver's traces pipeline, with
// the receiver's `sampler` config section and the pipeline's next consumer,
// to which the sampler forwards the traces it keeps.
type SamplerFactory func(ctx context.Context, set receiver.Settings, cfg *tailsampler.Config, next consumer.Traces) (TraceSampler, error)

// NewFactory returns the factory of the tracesift_otlp receiver, whose
// traces pipelines sample with the tail sampler (tailsampler.NewRaw), which
// takes the request bytes as they came off the wire.
func NewFactory() receiver.Factory { return newFactory(newTailSampler) }

// newFactory is NewFactory with the samplers made by newSampler (the tests'
// fakes); a nil one makes creating a traces receiver fail.
func newFactory(newSampler SamplerFactory) receiver.Factory {
	f := &factory{newSampler: newSampler, receivers: map[receiverKey]*otlpRaw{}}
	return receiver.NewFactory(metadata.Type, createDefaultConfig,
		receiver.WithTraces(f.createTraces, metadata.TracesStability),
		receiver.WithLogs(f.createLogs, metadata.LogsStability))
}

// newTailSampler is NewFactory's SamplerFactory.
func newTailSampler(_ context.Context, set receiver.Settings, cfg *tailsampler.Config, next consumer.Traces) (TraceSampler, error) {
	return tailsampler.NewRaw(processor.Settings{ID: set.ID, TelemetrySettings: set.TelemetrySettings, BuildInfo: set.BuildInfo}, cfg, next)
}

// receiverKey identifies one receiver: the Collector asks the factory for
// its traces and its logs side separately, with the same id and the same
// config value, and both must get the same servers. The config pointer is
// part of the key so that an entry left behind by a build that failed
// before Start (and so was never shut down) cannot capture a later build's
// receiver of the same id with another config.
type receiverKey struct {
	id  component.ID
	cfg *Config
}

type factory struct {
	newSampler SamplerFactory

	mu        sync.Mutex
	receivers map[receiverKey]*otlpRaw
}

// loadOrStore returns the receiver of key, creating it if needed; created
// reports a new one, which the caller removes again if it fails to set it up.
func (f *factory) loadOrStore(set receiver.Settings, cfg component.Config) (r *otlpRaw, created bool, err error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, false, fmt.Errorf("%s: unexpected config type %T", metadata.Type, cfg)
	}
	key := receiverKey{id: set.ID, cfg: c}
	if r := f.receivers[key]; r != nil {
		return r, false, nil
	}
	r, err = newOTLPRaw(c, set)
	if err != nil {
		return nil, false, err
	}
	r.remove = func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.receivers[key] == r {
			delete(f.receivers, key)
		}
	}
	f.receivers[key] = r
	return r, true, nil
}

func (f *factory) createTraces(ctx context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	if f.newSampler == nil {
		return nil, fmt.Errorf("%s: the factory was built without a sampler factory", set.ID)
	}
	if next == nil {
		return nil, fmt.Errorf("%s: nil next consumer for traces", set.ID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, created, err := f.loadOrStore(set, cfg)
	if err != nil {
		return nil, err
	}
	if r.sampler != nil {
		return nil, fmt.Errorf("%s: traces receiver created twice for the same config", set.ID)
	}
	var s TraceSampler
	if r.cfg.Kafka.HasValue() {
		s = kafka.NewSpanProducer(*r.cfg.Kafka.Get(), set.Logger, func(ctx context.Context, n int) {
			r.tel.TracesiftReceiverSpansInvalid.Add(ctx, int64(n))
		})
	} else {
		s, err = f.newSampler(ctx, set, &r.cfg.Sampler, next)
	}
	if err == nil && s == nil {
		err = errors.New("the sampler factory returned no sampler")
	}
	if err != nil {
		if created {
			delete(f.receivers, receiverKey{id: set.ID, cfg: r.cfg})
		}
		return nil, fmt.Errorf("%s: creating the sampler: %w", set.ID, err)
	}
	r.sampler = s
	return r, nil
}

func (f *factory) createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	if next == nil {
		return nil, fmt.Errorf("%s: nil next consumer for logs", set.ID)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, _, err := f.loadOrStore(set, cfg)
	if err != nil {
		return nil, err
	}
	if r.nextLogs != nil {
		return nil, fmt.Errorf("%s: logs receiver created twice for the same config", set.ID)
	}
	r.nextLogs = next
	return r, nil
}

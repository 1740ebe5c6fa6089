package storeexporter

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// caller bounds a call into the exporter helper by caller_timeout. With a
// queue the deadline only bounds the wait for room (block_on_overflow): the
// helper's in-memory queue keeps a request's context without its deadline,
// and the persistent one keeps no context. Without a queue it bounds the
// insert and the helper's retries, which give up when the next try would
// come after it.
type caller struct {
	e       *storeExporter
	signal  string
	timeout time.Duration
}

func (c caller) call(ctx context.Context, consume func(context.Context) error) error {
	if c.timeout <= 0 {
		return consume(ctx)
	}
	bounded, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := consume(bounded)
	if err != nil && bounded.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("the store is down or not keeping up: the %s were not taken within caller_timeout (%s); "+
			"send them again later: %w", c.signal, c.timeout, err)
	}
	return err
}

// stop ends the status reports before the helper shuts down: it drains the
// queue then, after the Collector has reported the exporter stopping.
func (c caller) stop() { c.e.health.stop() }

type tracesExporter struct {
	exporter.Traces
	caller
}

func (x *tracesExporter) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	return x.call(ctx, func(ctx context.Context) error { return x.Traces.ConsumeTraces(ctx, td) })
}

func (x *tracesExporter) Shutdown(ctx context.Context) error {
	x.stop()
	return x.Traces.Shutdown(ctx)
}

// ExporterHelperBatchingEnabled passes on the helper's answer, which the
// Collector reads to warn of batching twice (with a batch processor).
func (x *tracesExporter) ExporterHelperBatchingEnabled() bool { return batching(x.Traces) }

type logsExporter struct {
	exporter.Logs
	caller
}

func (x *logsExporter) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	return x.call(ctx, func(ctx context.Context) error { return x.Logs.ConsumeLogs(ctx, ld) })
}

func (x *logsExporter) Shutdown(ctx context.Context) error {
	x.stop()
	return x.Logs.Shutdown(ctx)
}

func (x *logsExporter) ExporterHelperBatchingEnabled() bool { return batching(x.Logs) }

func batching(helper any) bool {
	b, ok := helper.(interface{ ExporterHelperBatchingEnabled() bool })
	return ok && b.ExporterHelperBatchingEnabled()
}

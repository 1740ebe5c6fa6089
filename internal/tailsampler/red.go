package tailsampler

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/otlpwire"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/store"
)

// redCounter counts the requests, errors and durations of every entry span
// the sampler receives, before it decides (internal/red), and sends the rows
// down the pipeline every interval, as the findings go (store.Analysis).
type redCounter struct {
	agg      *red.Aggregator
	interval time.Duration
	next     consumer.Traces
	tel      *telemetry
	logger   *zap.Logger
	// keys are the resource attributes the scan reads (ResourceKeys):
	// instance are the indexes of red.InstanceKeys among them, dims those of
	// the dimensions, in the aggregator's order.
	keys           []string
	instance, dims []int
	// spanKeys are the configured dimensions, read from the span first
	// (Request.SpanKeys); spanDims[j] is dimension j's index among them, -1
	// for a default dimension (resource only).
	spanKeys      []string
	spanDims      []int
	droppedLogged atomic.Bool

	// outliers judges each instance against its peers every outlierEvery,
	// on the rows flushed (flush is never called concurrently).
	outliers   red.Outliers
	lastJudged time.Time
}

// outlierEvery is how often instances are judged against their peers.
const outlierEvery = 30 * time.Second

func newREDCounter(cfg red.Config, next consumer.Traces, tel *telemetry, logger *zap.Logger) *redCounter {
	dims := cfg.AllDimensions()
	c := &redCounter{agg: red.NewAggregator(cfg.Interval, cfg.MaxSeries, dims), interval: cfg.Interval,
		next: next, tel: tel, logger: logger}
	index := func(k string) int {
		for i, have := range c.keys {
			if have == k {
				return i
			}
		}
		c.keys = append(c.keys, k)
		return len(c.keys) - 1
	}
	for _, k := range red.InstanceKeys {
		c.instance = append(c.instance, index(k))
	}
	for _, k := range dims {
		c.dims = append(c.dims, index(k))
		sk := -1
		if slices.Contains(cfg.Dimensions, k) && !slices.Contains(red.DefaultDimensions, k) {
			sk = len(c.spanKeys)
			c.spanKeys = append(c.spanKeys, k)
		}
		c.spanDims = append(c.spanDims, sk)
	}
	return c
}

// count counts the valid entry spans of the scanned request: server and
// consumer spans, and roots. services are the resources' service names.
func (c *redCounter) count(req *otlpwire.Request, services []string, dims [][]byte) {
	var s red.Span
	s.Dimensions = dims[:len(c.dims)]
	for i := range req.Spans {
		sp := &req.Spans[i]
		if !sp.Valid() || !(sp.Kind == kindServer || sp.Kind == kindConsumer || sp.ParentSpanID == [8]byte{}) {
			continue
		}
		res := &req.Resources[sp.Resource]
		s.Service = services[sp.Resource]
		if s.Service == "" {
			s.Service = "unknown_service" // as the store names it
		}
		s.Operation, s.Instance = sp.Name, nil
		for _, k := range c.instance {
			if v := res.Values[k]; len(v) > 0 {
				s.Instance = v
				break
			}
		}
		var spanVals [][]byte
		if len(c.spanKeys) > 0 {
			spanVals = req.SpanValues(i)
		}
		for j, k := range c.dims {
			s.Dimensions[j] = res.Values[k]
			if sk := c.spanDims[j]; sk >= 0 && spanVals[sk] != nil {
				s.Dimensions[j] = spanVals[sk] // the span's own value wins over its resource's
			}
		}
		s.Start, s.Duration = sp.Start, 0
		if sp.End > sp.Start {
			s.Duration = sp.End - sp.Start
		}
		s.Error = sp.StatusCode == otlpwire.StatusError || sp.Marked // marked: timed out (timeoutMarks)
		c.agg.Add(&s)
	}
}

// run flushes every interval until stopping is closed.
func (c *redCounter) run(ctx context.Context, stopping <-chan struct{}) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			c.flush(ctx, now)
		case <-stopping:
			return
		}
	}
}

// flush sends what was counted since the last flush down the pipeline, and
// every outlierEvery the instance_outlier findings of the last minutes.
func (c *redCounter) flush(ctx context.Context, now time.Time) {
	rows, overflowed := c.agg.Flush()
	if overflowed > 0 {
		c.tel.TracesiftSamplerRedOverflowSpans.Add(ctx, int64(overflowed))
	}
	c.outliers.Add(rows)
	var findings []model.Finding
	if now.Sub(c.lastJudged) >= outlierEvery {
		c.lastJudged = now
		findings = c.outliers.Judge(now)
		for range findings {
			c.tel.TracesiftSamplerFindings.Add(ctx, 1, c.tel.findingKind(red.KindInstanceOutlier))
		}
	}
	if len(rows)+len(findings) == 0 {
		return
	}
	td := ptrace.NewTraces()
	store.AppendAnalysis(td, store.Analysis{RED: rows, Findings: findings})
	if err := c.next.ConsumeTraces(ctx, td); err != nil {
		c.tel.TracesiftSamplerRedRowsDropped.Add(context.Background(), int64(len(rows)))
		c.tel.TracesiftSamplerFindingsDropped.Add(context.Background(), int64(len(findings)))
		if c.droppedLogged.CompareAndSwap(false, true) {
			c.logger.Warn("The next consumer rejected RED rows and instance_outlier findings; they are lost, counted in "+
				"otelcol_tracesift_sampler_red_rows_dropped and …_findings_dropped (logged once)",
				zap.Int("rows", len(rows)), zap.Int("findings", len(findings)), zap.Error(err))
		}
		return
	}
	c.tel.TracesiftSamplerRedRows.Add(ctx, int64(len(rows)))
}

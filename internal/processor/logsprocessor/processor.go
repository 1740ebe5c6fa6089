package logsprocessor

import (
	"context"
	"fmt"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/processor/logsprocessor/internal/metadata"
)

// Config is the configuration of the tracesift_logs processor. The
// record's own trace_id/span_id are always used when set; these switches only
// govern the fallbacks.
type Config struct {
	// FromAttributes links records without ids through MDC-style attributes
	// (traceId, trace_id, trace.id, mdc.traceId, otel.trace_id, …: any key
	// that, lowercased without punctuation, ends with "traceid"/"spanid").
	// Default true.
	FromAttributes bool `mapstructure:"from_attributes"`

	// FromBody links the remaining records through their body: "traceId=…"
	// style text printed by Logback/Log4j MDC layouts, JSON log lines, or id
	// keys of a map body. Default true. Turn it off when bodies are large and
	// never carry ids, to save the scan.
	FromBody bool `mapstructure:"from_body"`

	// ParseText reads the severity, time, thread and logger of text records
	// that have no severity yet (log files, plain text lines), from the first
	// of TextPatterns that matches their first line; the body is kept as it
	// came. Default true.
	ParseText bool `mapstructure:"parse_text"`

	// TextPatterns are the regular expressions (Go syntax) ParseText tries,
	// in order; named groups time, level, thread and logger are read (time
	// as 2006-01-02 15:04:05.000 with T or a space, a comma or a dot, and an
	// optional offset; UTC without one). Default: Logback's and Log4j2's
	// usual layouts and Spring Boot's (DefaultTextPatterns).
	TextPatterns []string `mapstructure:"text_patterns"`
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration: every pattern must compile and name a
// time or level group.
func (c *Config) Validate() error {
	if !c.ParseText {
		return nil
	}
	_, err := newTextParser(c.TextPatterns)
	return err
}

func createDefaultConfig() component.Config {
	return &Config{FromAttributes: true, FromBody: true, ParseText: true,
		TextPatterns: append([]string(nil), DefaultTextPatterns...)}
}

// NewFactory returns the factory of the tracesift_logs processor,
// which links every log record to its trace and span (see Linker).
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithLogs(createLogsProcessor, metadata.LogsStability),
	)
}

func createLogsProcessor(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("tracesift_logs: unexpected config type %T", cfg)
	}
	p, err := newLogsProcessor(set, c)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithShutdown(p.shutdown))
}

type logsProcessor struct {
	linker Linker
	text   *textParser // nil when parse_text is off
	logger *zap.Logger

	// tel holds the instruments declared in metadata.yaml (generated into
	// internal/metadata).
	tel *metadata.TelemetryBuilder
	// Built once: the processor records on every batch.
	bySource [3]metric.AddOption // record, attributes, body

	// warnedInvalid makes the explanation of invalid ids a one-off per
	// processor: the metric counts them, the log says what they look like.
	warnedInvalid atomic.Bool
}

func newLogsProcessor(set processor.Settings, cfg *Config) (*logsProcessor, error) {
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("tracesift_logs: creating self-metrics: %w", err)
	}
	p := &logsProcessor{
		linker: Linker{NoAttributes: !cfg.FromAttributes, NoBody: !cfg.FromBody},
		logger: set.Logger,
		tel:    tel,
	}
	for i, s := range []string{SourceRecord, SourceAttributes, SourceBody} {
		p.bySource[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("source", s)))
	}
	if cfg.ParseText {
		if p.text, err = newTextParser(cfg.TextPatterns); err != nil {
			return nil, fmt.Errorf("tracesift_logs: %w", err)
		}
	}
	return p, nil
}

func (p *logsProcessor) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	var received, invalid int64
	var bySource [3]int64
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				if p.text != nil && lr.SeverityNumber() == plog.SeverityNumberUnspecified {
					p.text.parse(lr)
				}
				res := p.linker.Link(lr)
				received++
				switch res.Source {
				case SourceRecord:
					bySource[0]++
				case SourceAttributes:
					bySource[1]++
				case SourceBody:
					bySource[2]++
				}
				if res.InvalidID {
					invalid++
					p.explainInvalid(res)
				}
			}
		}
	}
	// One Add per instrument per batch, not per record: batches hold
	// thousands of records and each Add takes a lock in the SDK.
	p.tel.TracesiftLogsReceived.Add(ctx, received)
	for i, n := range bySource {
		if n > 0 {
			p.tel.TracesiftLogsLinked.Add(ctx, n, p.bySource[i])
		}
	}
	if invalid > 0 {
		p.tel.TracesiftLogsInvalidIds.Add(ctx, invalid)
	}
	return ld, nil
}

func (p *logsProcessor) shutdown(context.Context) error {
	p.tel.Shutdown()
	return nil
}

func (p *logsProcessor) explainInvalid(res LinkResult) {
	if !p.warnedInvalid.CompareAndSwap(false, true) {
		return
	}
	v := res.InvalidValue
	if len(v) > 64 {
		// A malformed id may be a whole line; 64 bytes show what it looks like.
		n := 64
		for n > 0 && !utf8.RuneStart(v[n]) {
			n--
		}
		v = v[:n] + "…"
	}
	p.logger.Warn("Log record carries a malformed trace or span id; it was ignored and the next source "+
		"(attributes, then body) was tried. Expected 32 hex digits (or 16 for a 64-bit B3 trace id) for "+
		"a trace id and 16 for a span id, not all zeros. Fix the logging layout or MDC field that writes it. "+
		"Further occurrences are only counted in otelcol_tracesift_logs_invalid_ids.",
		zap.String("key", res.InvalidKey), zap.String("value", v), zap.String("linked_from", res.Source))
}

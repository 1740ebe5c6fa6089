package tailsampler

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/otlpwire"
)

// Reason says why a trace is kept. It is the value of the `reason` attribute
// of the otelcol_tracesift_sampler_traces_decided metric.
type Reason string

// Keep reasons, in order of precedence: when several apply to a trace, the
// first one in this list is reported.
const (
	// ReasonError: a span has status ERROR and is not a timeout.
	ReasonError Reason = "error"
	// ReasonTimeout: a span is a timeout (HTTP 504/408, gRPC DEADLINE_EXCEEDED,
	// an error.type/exception.type, exception or status message naming a
	// timeout or deadline: the rule of internal/model, timeout.go, marked by
	// the wire scan, timeoutMarks). A span that is both ERROR and a timeout counts as a timeout,
	// the more specific of the two, because "timeout" tells an engineer where to
	// look while almost every timeout is also reported as ERROR.
	ReasonTimeout Reason = "timeout"
	// ReasonSlow: end-to-end time (latest span end − earliest span start) is at
	// least slow_threshold.
	ReasonSlow Reason = "slow"
	// ReasonSlowRoute: slower than the recent adaptive_slow quantile of its
	// route (root service and operation).
	ReasonSlowRoute Reason = "slow_route"
	// ReasonRetries: otherwise healthy, but one call is repeated
	// keep_retry_amplification times or more in the trace (retries that
	// multiply down a chain of services, N+1 queries).
	ReasonRetries Reason = "retry_fanout"
	// ReasonClockSkew: otherwise healthy, but it crosses a pair of hosts whose
	// clocks disagree by skew_threshold or more (analyze::skew_threshold):
	// kept so that the skew can be seen and corrected.
	ReasonClockSkew Reason = "clock_skew"
	// ReasonBaseline: none of the above, kept by the deterministic baseline.
	ReasonBaseline Reason = "baseline"
	// ReasonNone: nothing applies; the trace is dropped.
	ReasonNone Reason = ""
)

// numReasons sizes tables indexed by Reason.rank().
const numReasons = 8

// rank orders reasons by precedence so that a trace's reason can be folded
// incrementally as its spans arrive.
func (r Reason) rank() int {
	switch r {
	case ReasonError:
		return 7
	case ReasonTimeout:
		return 6
	case ReasonSlow:
		return 5
	case ReasonSlowRoute:
		return 4
	case ReasonRetries:
		return 3
	case ReasonClockSkew:
		return 2
	case ReasonBaseline:
		return 1
	}
	return 0
}

// stronger returns whichever of a and b takes precedence.
func stronger(a, b Reason) Reason {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// metricValue is the reason as exported in metrics, where an empty attribute
// would be ambiguous.
func (r Reason) metricValue() string {
	if r == ReasonNone {
		return "none"
	}
	return string(r)
}

// ruleSet is the keep rules in force for the traces of one service.
type ruleSet struct {
	keepErrors, keepTimeouts, keepSlow, adaptive bool
	keepSkew                                     bool
	retryAmplification                           int // 0: off
	slow                                         time.Duration
	baseline                                     uint64  // see baselineThreshold
	baselinePerSecond                            float64 // per shard; 0: no cap
}

// ruleBook resolves the rules of a service: the processor-wide set, or the
// service's overrides applied to it, computed once at start.
type ruleBook struct {
	def      ruleSet
	services map[string]*ruleSet
}

func newRuleBook(cfg *Config, shards int) ruleBook {
	def := ruleSet{
		keepErrors:   cfg.KeepErrors,
		keepTimeouts: cfg.KeepTimeouts,
		keepSlow:     cfg.KeepSlow,
		adaptive:     cfg.AdaptiveSlow.Enabled,
		// Both rules learn from the analyzers' view of kept traces.
		keepSkew:           cfg.KeepClockSkew && cfg.Analyze.Enabled,
		retryAmplification: cfg.KeepRetryAmplification,
		slow:               cfg.SlowThreshold,
		baseline:           baselineThreshold(cfg.BaselineRatio),
		baselinePerSecond:  cfg.BaselineMaxPerSecond / float64(shards),
	}
	b := ruleBook{def: def, services: make(map[string]*ruleSet, len(cfg.Services))}
	for name, o := range cfg.Services {
		rs := def
		setIf(&rs.keepErrors, o.KeepErrors)
		setIf(&rs.keepTimeouts, o.KeepTimeouts)
		setIf(&rs.keepSlow, o.KeepSlow)
		setIf(&rs.slow, o.SlowThreshold)
		// The routes are tracked only when the rule is on processor-wide.
		rs.adaptive = rs.adaptive && (o.AdaptiveSlow == nil || *o.AdaptiveSlow)
		if o.BaselineRatio != nil {
			rs.baseline = baselineThreshold(*o.BaselineRatio)
		}
		if o.BaselineMaxPerSecond != nil {
			rs.baselinePerSecond = *o.BaselineMaxPerSecond / float64(shards)
		}
		b.services[name] = &rs
	}
	return b
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func (b *ruleBook) forService(name string) *ruleSet {
	if rs, ok := b.services[name]; ok {
		return rs
	}
	return &b.def
}

// traceFacts is what the keep rules look at, gathered by the shard.
type traceFacts struct {
	known      Reason // strongest span reason, see spanReason
	hasError   bool   // some span has status ERROR
	hasTimeout bool   // some span is a timeout
	e2e        time.Duration
	id         pcommon.TraceID
	// slowForRoute: e2e is above its route's recent quantile (adaptive_slow).
	slowForRoute bool
	// repeatedCalls is the most calls (client or producer spans) of one
	// name in the trace; skewed says it crosses a host pair whose clock
	// skew estimate is at least the threshold.
	repeatedCalls int
	skewed        bool
}

// decide is the keep decision for a whole trace under rs. ReasonRetries,
// ReasonClockSkew and ReasonBaseline, which keep otherwise healthy traces,
// are subject to the service's baseline rate cap, applied by the caller.
func decide(f traceFacts, rs *ruleSet) Reason {
	switch {
	case f.known == ReasonError && rs.keepErrors:
		return ReasonError
	case f.hasTimeout && rs.keepTimeouts:
		return ReasonTimeout
	case f.hasError && rs.keepErrors:
		// Only ERROR spans that are also timeouts, with timeouts not kept.
		return ReasonError
	case rs.keepSlow && f.e2e >= rs.slow:
		return ReasonSlow
	case rs.adaptive && f.slowForRoute:
		return ReasonSlowRoute
	case rs.retryAmplification > 0 && f.repeatedCalls >= rs.retryAmplification:
		return ReasonRetries
	case rs.keepSkew && f.skewed:
		return ReasonClockSkew
	case baselineKeep(f.id, rs.baseline):
		return ReasonBaseline
	}
	return ReasonNone
}

// baselineKeep follows the W3C Trace Context level 2 / OTel convention that
// the last 7 bytes of a trace id are random: reading them as a 56-bit
// big-endian number gives a uniform value that every node computes alike.
func baselineKeep(id pcommon.TraceID, threshold uint64) bool {
	var r uint64
	for _, b := range id[9:] {
		r = r<<8 | uint64(b)
	}
	return r < threshold
}

// timeoutMarks is the model's timeout rule (internal/model, timeout.go) as
// the wire scan applies it: it marks (otlpwire.Span.Marked) each span that
// timed out, in its one pass over a request.
var timeoutMarks = func() *otlpwire.MarkRule {
	m := &otlpwire.MarkRule{TextKeys: model.TimeoutTextKeys, EventName: model.ExceptionEvent,
		EventTextKeys: model.TimeoutEventTextKeys, Words: model.TimeoutWords}
	for _, kv := range model.TimeoutStatuses {
		m.Values = append(m.Values, otlpwire.KeyValues{Key: kv.Key, Values: kv.Values})
	}
	return m
}()

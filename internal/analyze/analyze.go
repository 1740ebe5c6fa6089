package analyze

import "github.com/tracesift/tracesift/internal/model"

// Defaults of Options, documented on its fields.
const (
	defaultFanoutThreshold  = 50
	defaultMinRepeatedCalls = 5
	defaultMaxOrigins       = 5
	defaultMaxSpanIDs       = 20
)

// Options tune the analyzers. A field left zero (or negative) takes its
// default, so Options{} behaves as DefaultOptions().
type Options struct {
	// FanoutThreshold is how many downstream calls (CLIENT and PRODUCER
	// spans) one entry span must make, at least, for a fanout finding.
	// Default 50.
	FanoutThreshold int

	// MinRepeatedCalls is how many calls must reach the bottom of a chain of
	// repeated calls none of which is a retry (see RetryCalls) for a
	// retry_fanout finding. Retries are reported from 2 attempts. Default 5:
	// a few successful calls of the same thing under one parent (cache
	// reads, pages of a listing) are common enough not to be worth a
	// finding on every trace; loops beyond that (N+1 queries) are.
	MinRepeatedCalls int

	// MaxOrigins caps the error_origin findings, and separately the timeout
	// findings, of one trace; the summaries say how many there were.
	// Default 5.
	MaxOrigins int

	// MaxSpanIDs caps the spanIds of one finding; the summary says when the
	// list was cut. Default 20.
	MaxSpanIDs int
}

// DefaultOptions returns the default options.
func DefaultOptions() Options {
	return Options{
		FanoutThreshold:  defaultFanoutThreshold,
		MinRepeatedCalls: defaultMinRepeatedCalls,
		MaxOrigins:       defaultMaxOrigins,
		MaxSpanIDs:       defaultMaxSpanIDs,
	}
}

// withDefaults fills the fields left zero or negative.
func (o Options) withDefaults() Options {
	if o.FanoutThreshold <= 0 {
		o.FanoutThreshold = defaultFanoutThreshold
	}
	if o.MinRepeatedCalls <= 0 {
		o.MinRepeatedCalls = defaultMinRepeatedCalls
	}
	if o.MaxOrigins <= 0 {
		o.MaxOrigins = defaultMaxOrigins
	}
	if o.MaxSpanIDs <= 0 {
		o.MaxSpanIDs = defaultMaxSpanIDs
	}
	return o
}

// Analyze runs every analyzer on t, indexing it once, and returns their
// findings in a fixed order: slowest_hop, critical_path, retry_fanout,
// timeout, error_origin, broken_propagation, fanout, throttled, fast_fail,
// fallback, pool_exhausted; within a kind, in the
// order each analyzer documents. A nil or empty trace has no findings (nil).
// Analyze is safe for concurrent use and does not keep t.
func Analyze(t *model.Trace, opts Options) []model.Finding {
	if t == nil || len(t.Spans) == 0 {
		return nil
	}
	opts = opts.withDefaults()
	ix := newIndex(t)
	defer ix.free()
	var out []model.Finding
	out = ix.slowestHop(out, opts)
	out = ix.criticalPathFinding(out, opts)
	out = ix.retryFanout(out, opts)
	out = ix.timeouts(out, opts)
	out = ix.errorOrigins(out, opts)
	out = ix.brokenPropagation(out, opts)
	out = ix.fanout(out, opts)
	out = ix.throttled(out, opts)
	out = ix.fastFail(out, opts)
	out = ix.fallback(out, opts)
	out = ix.poolExhausted(out, opts)
	for i := range out {
		out[i].Subject = subject(t, &out[i])
	}
	return out
}

// subject is what f is about, the key findings are aggregated by across
// traces: the call edge of a retry chain ("checkout → payments POST
// /charge"), else the operation of its first span ("checkout GET /cart").
func subject(t *model.Trace, f *model.Finding) string {
	if len(f.SpanIDs) == 0 {
		return ""
	}
	var span *model.Span
	for i := range t.Spans {
		if t.Spans[i].SpanID == f.SpanIDs[0] {
			span = &t.Spans[i]
			break
		}
	}
	if span == nil {
		return ""
	}
	if f.Kind == KindRetryFanout {
		callee := span.Attributes["peer.service"]
		if callee == "" {
			callee = span.Attributes["server.address"]
		}
		if callee != "" {
			return span.Service + " → " + callee + " " + span.Name
		}
		return span.Service + " → " + span.Name
	}
	return span.Service + " " + span.Name
}

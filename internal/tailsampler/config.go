package tailsampler

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/tracesift/tracesift/internal/red"
)

// Defaults of the sampler configuration, documented on the Config fields.
const (
	defaultDecisionWait      = 10 * time.Second
	defaultSlowThreshold     = time.Second
	defaultBaselineRatio     = 0.01
	defaultDecisionCacheSize = 100_000
	defaultShardQueueSize    = 64
	defaultMaxWait           = 30 * time.Second
	defaultMaxBufferedBytes  = 512 << 20
	defaultMaxTraceBytes     = 16 << 20
	defaultMaxSpansPerTrace  = 20_000

	defaultBaselineMaxPerSecond = 100
)

// Config is the configuration of the tracesift_sampler processor.
type Config struct {
	// NumShards is the number of independent shards a trace is routed to by
	// hash(traceId); each shard has its own goroutine and state. 0 (the
	// default) means one shard per CPU (runtime.NumCPU()). Must not be negative.
	NumShards int `mapstructure:"num_shards"`

	// DecisionWait is how long a trace must have been quiet (no new span) before
	// it is decided: long enough for the slowest service of a trace to report.
	// Default 10s. Must be positive.
	DecisionWait time.Duration `mapstructure:"decision_wait"`

	// SlowThreshold keeps traces whose end-to-end time (latest span end minus
	// earliest span start) is at least this long. Default 1s. Must be positive.
	SlowThreshold time.Duration `mapstructure:"slow_threshold"`

	// BaselineRatio is the fraction of otherwise uninteresting traces kept, chosen
	// deterministically from the trace id so that every node keeps the same
	// ones. In [0, 1]; 0 keeps none, 1 keeps all. Default 0.01 (1 %).
	BaselineRatio float64 `mapstructure:"baseline_ratio"`

	// DecisionCacheSize is the total number of keep/drop decisions remembered so
	// that late spans follow their trace's decision. It is split evenly over the
	// shards, at least one per shard; the oldest decision is forgotten first.
	// Default 100000. Must be positive.
	DecisionCacheSize int `mapstructure:"decision_cache_size"`

	// ShardQueueSize is the number of incoming batches buffered per shard before
	// ConsumeTraces blocks (back-pressure towards the receivers). Default 64.
	// Must be positive.
	ShardQueueSize int `mapstructure:"shard_queue_size"`

	// MaxWait bounds how long a trace is buffered, counted from its first
	// span. A trace is normally decided once its root span has arrived and it
	// has been quiet for decision_wait; a trace whose root never arrives (an
	// uninstrumented entry point, lost context) or that never goes quiet is
	// decided after max_wait. Default 30s. Must be at least decision_wait.
	MaxWait time.Duration `mapstructure:"max_wait"`

	// MaxBufferedBytes bounds the accounted memory of the spans queued for or
	// buffered in the shards (their stored frames, after compression, plus
	// ~320 bytes of bookkeeping per trace), split evenly over them. Above 90 % of its share
	// a shard decides traces early (first those already matching a keep rule,
	// then complete ones, then the oldest) down to 75 %; a request that would
	// still not fit is refused with gRPC ResourceExhausted / HTTP 429 and a
	// retry delay, so the process never grows past the bound. Default 512 MiB.
	MaxBufferedBytes int64 `mapstructure:"max_buffered_bytes"`

	// BufferCompression compresses buffered spans (S2 against a dictionary
	// trained on recent traffic): ~3.5× more traffic fits in
	// max_buffered_bytes. It is paused while the sampler is overloaded (a
	// shard needs relief although the buffer holds compressed traces), when
	// it would cost CPU without letting traces wait out decision_wait, and
	// retried after a pause of 1 min doubling to 10 min. Default true.
	BufferCompression bool `mapstructure:"buffer_compression"`

	// BufferCompressionAbove is the share of max_buffered_bytes the buffer
	// must hold before new frames are compressed; compression stops again
	// below three quarters of it. Below it the memory compression saves is
	// not needed, and compressing is a fifth of a distributed-mode
	// sampler's CPU. 0 (the default) compresses from the first span. Must
	// be at least 0 and below 0.9, where the shards start deciding early.
	BufferCompressionAbove float64 `mapstructure:"buffer_compression_above"`

	// GoMemoryLimit is the Go runtime's soft memory limit this sampler holds
	// while it runs. The buffer itself lives outside the Go heap and is not
	// counted; the heap is the working set (requests being scanned, kept
	// traces decoded, analyzed and queued for the store), and without a limit
	// the runtime lets garbage grow to the size of what is live before
	// collecting. 0 (the default) means 5/8 of max_buffered_bytes (320 MiB
	// by default). Several samplers in one process add theirs up, a higher
	// limit set before stays, and the limit before comes back when the last
	// sampler stops. A soft limit never refuses memory: past it the collector
	// collects more often (the runtime caps that at half the CPU). -1 leaves
	// the runtime alone. GOMEMLIMIT, when set, wins.
	GoMemoryLimit int64 `mapstructure:"go_memory_limit"`

	// MaxTraceBytes caps the accounted memory of one buffered trace; a trace
	// reaching it is decided at once on what has arrived, and its later spans
	// follow that decision. It keeps one huge trace from starving the others.
	// Default 16 MiB. Must be positive.
	MaxTraceBytes int64 `mapstructure:"max_trace_bytes"`

	// MaxSpansPerTrace caps the spans of one buffered trace, like
	// max_trace_bytes. Default 20000. Must be positive.
	MaxSpansPerTrace int `mapstructure:"max_spans_per_trace"`

	// KeepErrors keeps traces with a span whose status is ERROR. Default true.
	KeepErrors bool `mapstructure:"keep_errors"`
	// KeepTimeouts keeps traces with a timeout span (HTTP 504/408, gRPC
	// DEADLINE_EXCEEDED, a timeout or deadline named by error.type,
	// exception.type or the status message). Default true.
	KeepTimeouts bool `mapstructure:"keep_timeouts"`
	// KeepSlow enables the fixed slow rule (slow_threshold). Default true.
	KeepSlow bool `mapstructure:"keep_slow"`
	// KeepRetryAmplification keeps an otherwise healthy trace in which one
	// call (client or producer spans of one name) is made this many times or
	// more: retries multiplying down a chain of services (3 attempts at 3
	// layers = 27 calls at the bottom) or an N+1 query loop. 0 turns it off.
	// Such traces count against baseline_max_per_second. Default 27.
	KeepRetryAmplification int `mapstructure:"keep_retry_amplification"`
	// KeepClockSkew keeps an otherwise healthy trace that crosses a pair of
	// hosts whose clock skew estimate (analyze::skew_threshold) is exceeded,
	// so the skew shows and is corrected. Needs analyze::enabled. Such traces
	// count against baseline_max_per_second. Default true.
	KeepClockSkew bool `mapstructure:"keep_clock_skew"`

	// AdaptiveSlow keeps traces slower than their own route's recent
	// latency quantile, the route being the root span's service and name:
	// a 300 ms trace on a 20 ms endpoint matters, the same on a batch export
	// does not.
	AdaptiveSlow AdaptiveSlowConfig `mapstructure:"adaptive_slow"`

	// Analyze configures the analyzers run on every kept trace.
	Analyze AnalyzeConfig `mapstructure:"analyze"`

	// RED counts requests, errors and durations of every entry span received,
	// before the sampler decides (internal/red): enabled, interval (10s),
	// max_series (10000), dimensions (resource attributes besides the
	// defaults). The rows go down the pipeline with the findings, to the
	// store named by analyze::store; without one, RED is not counted.
	RED red.Config `mapstructure:"red"`

	// BaselineMaxPerSecond caps the baseline traces kept per service (the
	// root span's service) per second, so a chatty service cannot fill the
	// store through the baseline. 0 means no cap. Default 100.
	BaselineMaxPerSecond float64 `mapstructure:"baseline_max_per_second"`

	// Services overrides the keep rules for the traces whose root span
	// belongs to the named service, e.g. a batch job whose traces are all
	// long: `services: {batch-export: {slow_threshold: 10m, adaptive_slow: false}}`.
	Services map[string]ServiceRules `mapstructure:"services"`
}

// AdaptiveSlowConfig configures the per-route latency rule.
type AdaptiveSlowConfig struct {
	// Enabled turns the rule on. Default true.
	Enabled bool `mapstructure:"enabled"`
	// Quantile is the route latency above which a trace is kept. In (0, 1).
	// Default 0.99.
	Quantile float64 `mapstructure:"quantile"`
	// MinSamples is how many traces of a route must have been seen in the
	// window before the rule applies to it. Default 100.
	MinSamples int `mapstructure:"min_samples"`
	// MinDuration is a floor: traces faster than this are never kept by this
	// rule, however slow for their route. Default 10ms.
	MinDuration time.Duration `mapstructure:"min_duration"`
	// Window is how recent the latencies are: each route keeps the current
	// and the previous window. Default 5m.
	Window time.Duration `mapstructure:"window"`
	// MaxRoutes bounds the routes tracked per shard (about 4 KiB each);
	// traces of further routes are judged by the other rules. Default 2000.
	MaxRoutes int `mapstructure:"max_routes"`
}

// ServiceRules overrides keep rules for one service; an unset key keeps the
// processor-wide value.
type ServiceRules struct {
	KeepErrors           *bool          `mapstructure:"keep_errors"`
	KeepTimeouts         *bool          `mapstructure:"keep_timeouts"`
	KeepSlow             *bool          `mapstructure:"keep_slow"`
	SlowThreshold        *time.Duration `mapstructure:"slow_threshold"`
	AdaptiveSlow         *bool          `mapstructure:"adaptive_slow"`
	BaselineRatio        *float64       `mapstructure:"baseline_ratio"`
	BaselineMaxPerSecond *float64       `mapstructure:"baseline_max_per_second"`
}

func createDefaultConfig() *Config {
	return &Config{
		NumShards:              0,
		DecisionWait:           defaultDecisionWait,
		SlowThreshold:          defaultSlowThreshold,
		BaselineRatio:          defaultBaselineRatio,
		DecisionCacheSize:      defaultDecisionCacheSize,
		ShardQueueSize:         defaultShardQueueSize,
		MaxWait:                defaultMaxWait,
		MaxBufferedBytes:       defaultMaxBufferedBytes,
		BufferCompression:      true,
		MaxTraceBytes:          defaultMaxTraceBytes,
		MaxSpansPerTrace:       defaultMaxSpansPerTrace,
		KeepErrors:             true,
		KeepTimeouts:           true,
		KeepSlow:               true,
		KeepRetryAmplification: 27,
		KeepClockSkew:          true,
		AdaptiveSlow: AdaptiveSlowConfig{
			Enabled:     true,
			Quantile:    0.99,
			MinSamples:  100,
			MinDuration: 10 * time.Millisecond,
			Window:      5 * time.Minute,
			MaxRoutes:   2000,
		},
		BaselineMaxPerSecond: defaultBaselineMaxPerSecond,
		Analyze:              defaultAnalyzeConfig(),
		RED:                  red.DefaultConfig(),
	}
}

// Validate reports every invalid field, naming its YAML key.
func (c *Config) Validate() error {
	var errs []error
	if c.NumShards < 0 {
		errs = append(errs, fmt.Errorf("`num_shards` must not be negative (0 means one per CPU), got %d", c.NumShards))
	}
	if err := c.Analyze.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.RED.Enabled {
		if err := c.RED.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.KeepRetryAmplification < 0 || c.KeepRetryAmplification == 1 {
		errs = append(errs, fmt.Errorf("`keep_retry_amplification` must be 0 (off) or at least 2, got %d", c.KeepRetryAmplification))
	}
	if c.DecisionWait <= 0 {
		errs = append(errs, fmt.Errorf("`decision_wait` must be positive, got %s", c.DecisionWait))
	}
	if c.SlowThreshold <= 0 {
		errs = append(errs, fmt.Errorf("`slow_threshold` must be positive, got %s", c.SlowThreshold))
	}
	// The negated form also rejects NaN.
	if !(c.BaselineRatio >= 0 && c.BaselineRatio <= 1) {
		errs = append(errs, fmt.Errorf("`baseline_ratio` must be in [0, 1], got %v", c.BaselineRatio))
	}
	if c.DecisionCacheSize <= 0 {
		errs = append(errs, fmt.Errorf("`decision_cache_size` must be positive, got %d", c.DecisionCacheSize))
	}
	if c.ShardQueueSize <= 0 {
		errs = append(errs, fmt.Errorf("`shard_queue_size` must be positive, got %d", c.ShardQueueSize))
	}
	if c.MaxWait < c.DecisionWait {
		errs = append(errs, fmt.Errorf("`max_wait` (%s) must be at least `decision_wait` (%s)", c.MaxWait, c.DecisionWait))
	}
	if c.MaxBufferedBytes < minBufferedBytesPerShard*int64(c.shards()) {
		errs = append(errs, fmt.Errorf("`max_buffered_bytes` must be at least %d (1 MiB per shard), got %d",
			minBufferedBytesPerShard*int64(c.shards()), c.MaxBufferedBytes))
	}
	if !(c.BufferCompressionAbove >= 0 && c.BufferCompressionAbove < 0.9) {
		errs = append(errs, fmt.Errorf("`buffer_compression_above` must be in [0, 0.9), got %v", c.BufferCompressionAbove))
	}
	if c.GoMemoryLimit < -1 {
		errs = append(errs, fmt.Errorf("`go_memory_limit` must be -1 (off), 0 (auto) or a size in bytes, got %d", c.GoMemoryLimit))
	}
	if c.MaxTraceBytes <= 0 {
		errs = append(errs, fmt.Errorf("`max_trace_bytes` must be positive, got %d", c.MaxTraceBytes))
	}
	if c.MaxSpansPerTrace <= 0 {
		errs = append(errs, fmt.Errorf("`max_spans_per_trace` must be positive, got %d", c.MaxSpansPerTrace))
	}
	if a := c.AdaptiveSlow; a.Enabled {
		if !(a.Quantile > 0 && a.Quantile < 1) {
			errs = append(errs, fmt.Errorf("`adaptive_slow::quantile` must be in (0, 1), got %v", a.Quantile))
		}
		if a.MinSamples <= 0 {
			errs = append(errs, fmt.Errorf("`adaptive_slow::min_samples` must be positive, got %d", a.MinSamples))
		}
		if a.MinDuration < 0 {
			errs = append(errs, fmt.Errorf("`adaptive_slow::min_duration` must not be negative, got %s", a.MinDuration))
		}
		if a.Window <= 0 {
			errs = append(errs, fmt.Errorf("`adaptive_slow::window` must be positive, got %s", a.Window))
		}
		if a.MaxRoutes <= 0 {
			errs = append(errs, fmt.Errorf("`adaptive_slow::max_routes` must be positive, got %d", a.MaxRoutes))
		}
	}
	if !(c.BaselineMaxPerSecond >= 0) {
		errs = append(errs, fmt.Errorf("`baseline_max_per_second` must not be negative, got %v", c.BaselineMaxPerSecond))
	}
	for name, o := range c.Services {
		if o.SlowThreshold != nil && *o.SlowThreshold <= 0 {
			errs = append(errs, fmt.Errorf("`services::%s::slow_threshold` must be positive, got %s", name, *o.SlowThreshold))
		}
		if r := o.BaselineRatio; r != nil && !(*r >= 0 && *r <= 1) {
			errs = append(errs, fmt.Errorf("`services::%s::baseline_ratio` must be in [0, 1], got %v", name, *r))
		}
		if r := o.BaselineMaxPerSecond; r != nil && !(*r >= 0) {
			errs = append(errs, fmt.Errorf("`services::%s::baseline_max_per_second` must not be negative, got %v", name, *r))
		}
	}
	return errors.Join(errs...)
}

// minBufferedBytesPerShard keeps a shard's share of max_buffered_bytes above
// the size of one request, or every request would be refused.
const minBufferedBytesPerShard = 1 << 20

// shards resolves num_shards = 0 to the CPU count.
func (c *Config) shards() int {
	if c.NumShards > 0 {
		return c.NumShards
	}
	return runtime.NumCPU()
}

// cachePerShard splits decision_cache_size evenly; a shard with no room for a
// single decision could not make late spans follow their trace at all.
func (c *Config) cachePerShard(shards int) int {
	return max(1, c.DecisionCacheSize/shards)
}

// tickInterval is how often shards look for quiet traces: a fifth of
// decision_wait bounds the extra wait to 20 %, the clamp keeps the ticker from
// spinning on tiny waits and from lagging by more than a second on long ones.
func (c *Config) tickInterval() time.Duration {
	return min(max(c.DecisionWait/5, 10*time.Millisecond), time.Second)
}

// baselineThreshold converts baseline_ratio to the bound on the 56 random bits
// of a trace id. Multiplying by a power of two is exact in float64, so ratio 1
// yields exactly 2^56 (keep all) and ratio 0 yields 0 (keep none).
func baselineThreshold(ratio float64) uint64 {
	switch {
	case !(ratio > 0):
		return 0
	case ratio >= 1:
		return 1 << 56
	}
	return uint64(math.Ldexp(ratio, 56))
}

// goMemoryLimit is the soft memory limit to set, or 0 for none.
func (c *Config) goMemoryLimit() int64 {
	switch {
	case c.GoMemoryLimit < 0:
		return 0
	case c.GoMemoryLimit > 0:
		return c.GoMemoryLimit
	}
	return c.MaxBufferedBytes / 8 * 5
}

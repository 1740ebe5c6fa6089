package tailsampler

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
)

// Defaults of the sampler configuration, documented on the Config fields.
const (
	defaultDecisionWait      = 10 * time.Second
	defaultSlowThreshold     = time.Second
	defaultBaselineRatio     = 0.01
	defaultDecisionCacheSize = 100_000
	defaultShardQueueSize    = 64
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
}

func createDefaultConfig() *Config {
	return &Config{
		NumShards:         0,
		DecisionWait:      defaultDecisionWait,
		SlowThreshold:     defaultSlowThreshold,
		BaselineRatio:     defaultBaselineRatio,
		DecisionCacheSize: defaultDecisionCacheSize,
		ShardQueueSize:    defaultShardQueueSize,
	}
}

// Validate reports every invalid field, naming its YAML key.
func (c *Config) Validate() error {
	var errs []error
	if c.NumShards < 0 {
		errs = append(errs, fmt.Errorf("`num_shards` must not be negative (0 means one per CPU), got %d", c.NumShards))
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
	return errors.Join(errs...)
}

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

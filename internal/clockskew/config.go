package clockskew

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of the estimator configuration, documented on the Config fields.
const (
	defaultWindow     = 5 * time.Minute
	defaultMinSamples = 5
	defaultThreshold  = 100 * time.Millisecond
	defaultMaxPairs   = 10_000
	defaultMaxSamples = 256
)

// Config configures an Estimator. The mapstructure tags are its YAML keys,
// meant for a component configuration that embeds Config with
// `mapstructure:",squash"`.
type Config struct {
	// Window is how recent the samples of an estimate are: a sample counts
	// until more than Window has passed since it was observed (on the clock
	// given to Estimator.Observe). Default 5m. Must be positive.
	Window time.Duration `mapstructure:"skew_window"`

	// MinSamples is how many samples (one per trace) a host pair needs in
	// the window before its estimate is trusted: before that it raises no
	// finding and Adjust falls back to the trace's own calls. Default 5.
	// At least 1 and at most skew_max_samples.
	MinSamples int `mapstructure:"skew_min_samples"`

	// Threshold is the smallest estimated offset, either way, that raises a
	// clock_skew finding; smaller offsets are still corrected by Adjust.
	// Default 100ms. Must be positive.
	Threshold time.Duration `mapstructure:"skew_threshold"`

	// MaxPairs bounds the host pairs tracked; when a new pair would exceed
	// it, the least recently observed pairs are forgotten (1/64 of MaxPairs
	// at a time, at least one). Default 10000. Must be positive.
	MaxPairs int `mapstructure:"skew_max_pairs"`

	// MaxSamples bounds the samples kept per host pair (a ring buffer of 16
	// bytes a sample, grown as needed): the newest MaxSamples samples in the
	// window make the estimate. Default 256, about 4 KiB per busy pair.
	// Must be positive.
	MaxSamples int `mapstructure:"skew_max_samples"`
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		Window:     defaultWindow,
		MinSamples: defaultMinSamples,
		Threshold:  defaultThreshold,
		MaxPairs:   defaultMaxPairs,
		MaxSamples: defaultMaxSamples,
	}
}

// Validate reports every invalid field, naming its YAML key.
func (c *Config) Validate() error {
	var errs []error
	if c.Window <= 0 {
		errs = append(errs, fmt.Errorf("`skew_window` must be positive, got %s", c.Window))
	}
	if c.Threshold <= 0 {
		errs = append(errs, fmt.Errorf("`skew_threshold` must be positive, got %s", c.Threshold))
	}
	if c.MaxPairs <= 0 {
		errs = append(errs, fmt.Errorf("`skew_max_pairs` must be positive, got %d", c.MaxPairs))
	}
	if c.MaxSamples <= 0 {
		errs = append(errs, fmt.Errorf("`skew_max_samples` must be positive, got %d", c.MaxSamples))
	}
	if c.MinSamples <= 0 {
		errs = append(errs, fmt.Errorf("`skew_min_samples` must be positive, got %d", c.MinSamples))
	} else if c.MaxSamples > 0 && c.MinSamples > c.MaxSamples {
		errs = append(errs, fmt.Errorf("`skew_min_samples` (%d) must be at most `skew_max_samples` (%d), or no estimate is ever trusted",
			c.MinSamples, c.MaxSamples))
	}
	return errors.Join(errs...)
}

package red

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// InstanceKeys name a span's instance, best first: the resource's
// service.instance.id, else k8s.pod.name, else host.name.
var InstanceKeys = []string{"service.instance.id", "k8s.pod.name", "host.name"}

// DefaultDimensions are the resource attributes every series is keyed by,
// besides its service, operation and instance.
var DefaultDimensions = []string{"service.version", "deployment.environment.name", "deployment.environment",
	"cloud.region", "cloud.availability_zone", "host.name"}

// MaxDimensions bounds the dimensions of a series, DefaultDimensions
// included; maxSpanDimensions the configured ones, which are read from spans.
const (
	MaxDimensions     = 12
	maxSpanDimensions = 6
)

// Config configures RED on all traffic (the sampler's `red` section).
type Config struct {
	// Enabled counts RED. Default true; it needs analyze::store, the store
	// the rows go to with the findings.
	Enabled bool `mapstructure:"enabled"`
	// Interval is the width of a series' time buckets. Default 10s.
	Interval time.Duration `mapstructure:"interval"`
	// MaxSeries bounds the series of one interval; spans of series past it
	// count in one overflow series (dimension tracesift.red.overflow).
	// Default 10000.
	MaxSeries int `mapstructure:"max_series"`
	// Dimensions are attributes to key series by, besides
	// DefaultDimensions: read from the span (http.route, a user tier), else
	// from its resource. Default none; at most 8 span attributes are read.
	Dimensions []string `mapstructure:"dimensions"`
}

// DefaultConfig is the configuration when none is given.
func DefaultConfig() Config {
	return Config{Enabled: true, Interval: 10 * time.Second, MaxSeries: 10000}
}

// Validate reports every invalid field, naming its YAML key.
func (c *Config) Validate() error {
	var errs []error
	if c.Interval < time.Second {
		errs = append(errs, fmt.Errorf("`red::interval` must be at least 1s, got %s", c.Interval))
	}
	if c.MaxSeries < 1 {
		errs = append(errs, fmt.Errorf("`red::max_series` must be at least 1, got %d", c.MaxSeries))
	}
	if n := len(c.AllDimensions()); n > MaxDimensions || len(c.Dimensions) > maxSpanDimensions {
		errs = append(errs, fmt.Errorf("`red::dimensions`: at most %d of them and %d with the defaults, got %d and %d",
			maxSpanDimensions, MaxDimensions, len(c.Dimensions), n))
	}
	for _, d := range c.Dimensions {
		if d == "" {
			errs = append(errs, errors.New("`red::dimensions`: an empty key"))
		}
	}
	return errors.Join(errs...)
}

// AllDimensions are DefaultDimensions and then the configured ones, each
// once.
func (c *Config) AllDimensions() []string {
	out := slices.Clone(DefaultDimensions)
	for _, d := range c.Dimensions {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

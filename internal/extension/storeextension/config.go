// Package storeextension is the `tracesift_store` extension: it owns the one
// connection to the store (chDB opens one data directory per process) and hands a
// writer and a reader to the components that name it, as storage extensions
// do in the OpenTelemetry Collector.
package storeextension

//go:generate mdatagen metadata.yaml

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/tracesift/tracesift/internal/store"
)

// Config is the store's configuration.
type Config struct {
	// Database is the ClickHouse database holding tracesift's tables. It is
	// created if missing. Default: tracesift.
	Database string `mapstructure:"database"`
	// Embedded configures the embedded engine (chDB), used when
	// clickhouse.dsn is empty.
	Embedded EmbeddedConfig `mapstructure:"embedded"`
	// ClickHouse configures a ClickHouse server. When its dsn is set the
	// server is used instead of the embedded engine.
	ClickHouse ClickHouseConfig `mapstructure:"clickhouse"`
	// LogWindow is how far before a trace's first span and after its last
	// one the skewed pairs of its hosts are looked for; its logs are found by
	// its id alone. Default: 5m.
	LogWindow time.Duration `mapstructure:"log_window"`
	// MaxLogsPerTrace caps the logs returned with one trace. Default: 10000.
	MaxLogsPerTrace int `mapstructure:"max_logs_per_trace"`
	// MaxSpansPerTrace caps the spans returned with one trace (its
	// earliest; the answer says it was truncated). Default: 100000.
	MaxSpansPerTrace int `mapstructure:"max_spans_per_trace"`
	// MaxQueryTime bounds each statement of a read (ClickHouse's
	// max_execution_time); a read past it is answered 400. Default: 4s.
	MaxQueryTime time.Duration `mapstructure:"max_query_time"`
	// MaxQueryMemory bounds each statement's memory in bytes (ClickHouse's
	// max_memory_usage). Default: 1073741824 (1 GiB).
	MaxQueryMemory int64 `mapstructure:"max_query_memory"`
	// Retention is how long data is kept, applied as table TTLs at every
	// start.
	Retention RetentionConfig `mapstructure:"retention"`
}

// RetentionConfig sets how long data is kept; 0 keeps it forever. Expired
// data goes as ClickHouse merges parts; a whole day's partition is dropped
// once all of it has expired.
type RetentionConfig struct {
	// Traces applies to kept traces (spans, trace index, findings, clock
	// offsets). Default: 168h (7 days).
	Traces time.Duration `mapstructure:"traces"`
	// Logs applies to all logs. Default: 168h (7 days).
	Logs time.Duration `mapstructure:"logs"`
}

// EmbeddedConfig configures chDB.
type EmbeddedConfig struct {
	// Path is the data directory. One process may use it at a time.
	// Default: ./data.
	Path string `mapstructure:"path"`
}

// ClickHouseConfig configures a ClickHouse server connection.
type ClickHouseConfig struct {
	// DSN is a clickhouse-go DSN, e.g. clickhouse://default:@clickhouse:9000.
	// The collector starts whether or not the server answers yet, and
	// connects (applying the schema) as soon as it does; until then writes
	// wait in the exporters' queues. Default: empty (use the embedded
	// engine).
	DSN string `mapstructure:"dsn"`
}

func createDefaultConfig() *Config {
	return &Config{
		Database:         "tracesift",
		Embedded:         EmbeddedConfig{Path: "./data"},
		LogWindow:        store.DefaultLogWindow,
		MaxLogsPerTrace:  10000,
		MaxSpansPerTrace: store.DefaultMaxSpansPerTrace,
		MaxQueryTime:     store.DefaultMaxQueryTime,
		MaxQueryMemory:   store.DefaultMaxQueryMemory,
		Retention:        RetentionConfig{Traces: 7 * 24 * time.Hour, Logs: 7 * 24 * time.Hour},
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	var errs []error
	if !store.ValidDatabaseName(c.Database) {
		errs = append(errs, fmt.Errorf("`database` %q must be a plain identifier (letters, digits, _)", c.Database))
	}
	if c.ClickHouse.DSN == "" && c.Embedded.Path == "" {
		errs = append(errs, errors.New("`embedded::path` must be set when `clickhouse::dsn` is empty"))
	}
	if c.ClickHouse.DSN != "" {
		// Found now rather than by the connecting loop, which retries
		// everything else.
		if err := parseDSN(c.ClickHouse.DSN); err != nil {
			errs = append(errs, err)
		}
	}
	if c.LogWindow < 0 {
		errs = append(errs, errors.New("`log_window` must not be negative"))
	}
	if c.Retention.Traces < 0 {
		errs = append(errs, errors.New("`retention::traces` must not be negative (0 keeps traces forever)"))
	}
	if c.Retention.Logs < 0 {
		errs = append(errs, errors.New("`retention::logs` must not be negative (0 keeps logs forever)"))
	}
	if c.MaxLogsPerTrace <= 0 {
		errs = append(errs, errors.New("`max_logs_per_trace` must be positive"))
	}
	if c.MaxSpansPerTrace <= 0 {
		errs = append(errs, errors.New("`max_spans_per_trace` must be positive"))
	}
	if c.MaxQueryTime < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("`max_query_time` must be at least 100ms, got %s", c.MaxQueryTime))
	}
	if c.MaxQueryMemory < 16<<20 {
		errs = append(errs, fmt.Errorf("`max_query_memory` must be at least 16777216 (16 MiB), got %d", c.MaxQueryMemory))
	}
	return errors.Join(errs...)
}

// parseDSN checks that dsn parses, saying why not without repeating it: it
// may hold a password.
func parseDSN(dsn string) error {
	_, err := clickhouse.ParseDSN(dsn)
	if err == nil {
		return nil
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return fmt.Errorf("`clickhouse::dsn` is not a valid DSN: %w", err)
}

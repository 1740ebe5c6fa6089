package loki

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/tracesift/tracesift/internal/httpbody"
)

// Defaults of the receiver configuration, documented on the Config fields.
const (
	defaultEndpoint           = "localhost:3100" // Loki's own port
	defaultMaxRequestBodySize = 16 << 20         // 16 MiB
	defaultMaxLineBytes       = 64 << 10         // 64 KiB
	defaultMaxLinesPerSecond  = 1_000_000
	defaultMaxRecords         = 200_000
)

// Config is the configuration of the tracesift_loki receiver:
//
//	receivers:
//	  tracesift_loki:
//	    endpoint: localhost:3100
//	    max_request_body_size: 16777216
//	    max_line_bytes: 65536
//	    max_lines_per_second: 1000000
type Config struct {
	// ServerConfig holds the Collector's HTTP server settings (endpoint, tls,
	// cors, auth, max_request_body_size, compression_algorithms,
	// middlewares, read_header_timeout, …), at the top level of the
	// receiver's section. Defaults: endpoint localhost:3100 (Loki's port, so
	// clients only change the host), max_request_body_size 16777216
	// (16 MiB; larger bodies are answered 413; the limit applies to the body
	// as received, again after HTTP decompression (Content-Encoding) and to
	// the snappy-decoded size of a protobuf push), write_timeout 0 (none:
	// the answer waits for the pipeline).
	ServerConfig confighttp.ServerConfig `mapstructure:",squash"`

	// MaxLineBytes bounds every text value of a record: a log line (the
	// body) or an attribute value (label, structured metadata, NDJSON field)
	// longer than this is cut to it, at a character boundary, and
	// "…[truncated N bytes]" is appended (N: the bytes cut off); the record
	// is counted in otelcol_tracesift_loki_records_truncated. It also
	// bounds the joining of stack-trace lines on the plain-text lines
	// endpoint: a continuation line that would make the record longer
	// starts a new one.
	// Default 65536 (64 KiB). Must be positive.
	MaxLineBytes int `mapstructure:"max_line_bytes"`

	// MaxLinesPerSecond bounds the rate of records (lines) the receiver
	// takes, over both endpoints, with a burst of one second's worth: a
	// request beyond it is answered 429 with Retry-After, which Loki clients
	// (Promtail, Alloy, Fluent Bit, Vector) and curl scripts retry, and its
	// records are not taken. Default 1000000, about twice what one
	// collector on 2 cores stores; 0 removes the bound. A request of more
	// records than the bound can never pass: it is answered 413.
	MaxLinesPerSecond int `mapstructure:"max_lines_per_second"`

	// MaxRecordsPerRequest bounds the records of one request: decoding
	// stops when a request holds more, and it is answered 413 (send smaller
	// batches). A record costs a few hundred bytes of heap however short its
	// line, so this, not the body size, bounds a request's memory: 16 MiB of
	// two-byte lines would be 8 M records. Default 200000 (Loki clients send
	// ~1 MiB batches: about 10 000 lines). Must be positive.
	MaxRecordsPerRequest int `mapstructure:"max_records_per_request"`

	// MaxBytesInFlight bounds the bytes of request bodies the receiver holds
	// at once, as they are read and until each request is answered: many slow
	// or large requests, each within max_request_body_size, cannot add up to
	// more. A request that would pass it is answered 429 with Retry-After.
	// Default 268435456 (256 MiB); 0: no bound; else at least
	// max_request_body_size.
	MaxBytesInFlight int64 `mapstructure:"max_bytes_in_flight"`

	// prevent unkeyed literal initialization
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate reports every invalid field, naming its YAML key.
func (c *Config) Validate() error {
	var errs []error
	// 0 would silently mean confighttp's own 20 MiB default.
	if c.ServerConfig.MaxRequestBodySize <= 0 {
		errs = append(errs, fmt.Errorf("`max_request_body_size` must be positive (default %d), got %d",
			defaultMaxRequestBodySize, c.ServerConfig.MaxRequestBodySize))
	}
	if c.MaxLineBytes <= 0 {
		errs = append(errs, fmt.Errorf("`max_line_bytes` must be positive (default %d), got %d",
			defaultMaxLineBytes, c.MaxLineBytes))
	}
	if c.MaxLinesPerSecond < 0 {
		errs = append(errs, fmt.Errorf("`max_lines_per_second` must be 0 (no bound) or positive (default %d), got %d",
			defaultMaxLinesPerSecond, c.MaxLinesPerSecond))
	}
	if c.MaxRecordsPerRequest <= 0 {
		errs = append(errs, fmt.Errorf("`max_records_per_request` must be positive (default %d), got %d",
			defaultMaxRecords, c.MaxRecordsPerRequest))
	}
	if c.MaxBytesInFlight < 0 || c.MaxBytesInFlight > 0 && c.MaxBytesInFlight < c.ServerConfig.MaxRequestBodySize {
		errs = append(errs, fmt.Errorf("`max_bytes_in_flight` must be 0 (no bound) or at least `max_request_body_size` (%d), "+
			"or a request of that size could never pass; got %d", c.ServerConfig.MaxRequestBodySize, c.MaxBytesInFlight))
	}
	if c.ServerConfig.NetAddr.Endpoint == "" {
		errs = append(errs, fmt.Errorf("`endpoint` must not be empty (default %q)", defaultEndpoint))
	}
	return errors.Join(errs...)
}

func createDefaultConfig() component.Config {
	sc := confighttp.NewDefaultServerConfig()
	sc.NetAddr.Endpoint = defaultEndpoint
	sc.TLS = configoptional.None[configtls.ServerConfig]()
	sc.MaxRequestBodySize = defaultMaxRequestBodySize
	// As in tracesift_otlp: the answer to a request that waited for the
	// pipeline must still get out.
	sc.WriteTimeout = 0
	// A client that stops sending mid-body is cut off rather than holding
	// its connection and buffer for ever.
	sc.ReadTimeout = httpbody.ReadTimeout
	return &Config{ServerConfig: sc, MaxLineBytes: defaultMaxLineBytes, MaxLinesPerSecond: defaultMaxLinesPerSecond,
		MaxRecordsPerRequest: defaultMaxRecords, MaxBytesInFlight: httpbody.DefaultMaxBytesInFlight}
}

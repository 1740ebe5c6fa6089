package otlpraw

import (
	"errors"
	"fmt"
	"net/url"
	"path"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/tracesift/tracesift/internal/httpbody"
	"github.com/tracesift/tracesift/internal/kafka"
	"github.com/tracesift/tracesift/internal/tailsampler"
)

// Defaults of the receiver configuration, documented on the Config fields.
const (
	defaultGRPCEndpoint       = "localhost:4317"
	defaultHTTPEndpoint       = "localhost:4318"
	defaultMaxRecvMsgSizeMiB  = 16
	defaultMaxRequestBodySize = 16 << 20 // 16 MiB
	defaultTracesURLPath      = "/v1/traces"
	defaultLogsURLPath        = "/v1/logs"
	// defaultGRPCReadBufferSize is the Collector's otlp receiver default: OTLP
	// requests are large, and a bigger read buffer means fewer syscalls.
	defaultGRPCReadBufferSize = 512 << 10
)

// Config is the configuration of the tracesift_otlp receiver:
//
//	receivers:
//	  tracesift_otlp:
//	    protocols:
//	      grpc:
//	        endpoint: localhost:4317
//	      http:
//	        endpoint: localhost:4318
//	    sampler:
//	      decision_wait: 10s
type Config struct {
	// Protocols are the servers to run; at least one must be present.
	Protocols Protocols `mapstructure:"protocols"`

	// Sampler configures the tail sampler the receiver hands raw trace
	// requests to: every key of the tracesift_sampler processor
	// (internal/tailsampler), with the same defaults (decision_wait 10s,
	// slow_threshold 1s, baseline_ratio 0.01, max_buffered_bytes 512 MiB, …).
	Sampler tailsampler.Config `mapstructure:"sampler"`

	// Kafka makes the receiver a gateway of distributed mode: trace
	// requests are split by trace id and produced to the spans topic
	// (acknowledged to the client once Kafka has them) instead of being
	// sampled here; `sampler` is then unused. Absent by default.
	Kafka configoptional.Optional[kafka.Config] `mapstructure:"kafka"`

	// MaxBytesInFlight bounds the bytes of requests the receiver holds at
	// once, HTTP bodies as they are read and gRPC messages as they are
	// handled, until each request is answered: many slow or large requests,
	// each within its size limit, cannot add up to more. A request that
	// would pass it is answered 429 with Retry-After (gRPC
	// ResourceExhausted with RetryInfo), which OTLP clients retry. A gRPC
	// stream holds 16 KiB of it from its opening until its message has
	// arrived (gRPC does not tell how much of a message has), so new streams
	// are refused the same way while it is full. Default 268435456
	// (256 MiB); 0: no bound.
	MaxBytesInFlight int64 `mapstructure:"max_bytes_in_flight"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Protocols selects the servers, as in the Collector's otlp receiver: a
// protocol runs when its key is present (`grpc:` alone enables it with the
// defaults below) and is off when absent or `enabled: false`.
type Protocols struct {
	// GRPC is the OTLP/gRPC server: the Collector's gRPC server settings
	// (endpoint, tls, keepalive, auth, max_recv_msg_size_mib, middlewares, …).
	// Defaults: endpoint localhost:4317, max_recv_msg_size_mib 16 (larger
	// messages are refused with ResourceExhausted by gRPC itself),
	// read_buffer_size 524288. An export request whose message has not
	// arrived in full (half-close included) within 1 minute of its stream
	// opening is aborted with DeadlineExceeded, as HTTP's read_timeout.
	GRPC configoptional.Optional[configgrpc.ServerConfig] `mapstructure:"grpc"`

	// HTTP is the OTLP/HTTP server: the Collector's HTTP server settings
	// (endpoint, tls, cors, auth, max_request_body_size, compression_algorithms,
	// middlewares, …) and the URL paths. Defaults: endpoint localhost:4318,
	// max_request_body_size 16777216 (16 MiB; larger bodies are answered 413,
	// the limit applies to the body as received and again after
	// decompression), read_header_timeout 1m, write_timeout 0 (none: a
	// request held back by the sampler must not lose its answer).
	HTTP configoptional.Optional[HTTPConfig] `mapstructure:"http"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// HTTPConfig is the OTLP/HTTP server configuration.
type HTTPConfig struct {
	// ServerConfig holds the Collector's HTTP server settings.
	ServerConfig confighttp.ServerConfig `mapstructure:",squash"`

	// TracesURLPath is the path traces are POSTed to. Default /v1/traces.
	TracesURLPath URLPath `mapstructure:"traces_url_path"`

	// LogsURLPath is the path logs are POSTed to. Default /v1/logs.
	LogsURLPath URLPath `mapstructure:"logs_url_path"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// URLPath is a URL path; a relative one ("v1/traces") is made absolute, as
// the Collector's otlp receiver does.
type URLPath string

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *URLPath) UnmarshalText(text []byte) error {
	u, err := url.Parse(string(text))
	if err != nil {
		return fmt.Errorf("invalid URL path %q: %w", text, err)
	}
	if !path.IsAbs(u.Path) {
		u.Path = "/" + u.Path
	}
	*p = URLPath(u.Path)
	return nil
}

var _ component.Config = (*Config)(nil)

// Validate reports every invalid field of the protocols, naming its full
// key. (The `sampler` section is validated by tailsampler.Config.Validate,
// which confmap calls on its own.)
func (c *Config) Validate() error {
	p := &c.Protocols
	var errs []error
	if !p.GRPC.HasValue() && !p.HTTP.HasValue() {
		errs = append(errs, errors.New("`protocols`: at least one of `grpc` and `http` must be configured"))
	}
	if g := p.GRPC.Get(); g != nil {
		// 0 would silently mean gRPC's own 4 MiB default.
		if g.MaxRecvMsgSizeMiB <= 0 {
			errs = append(errs, fmt.Errorf("`protocols::grpc::max_recv_msg_size_mib` must be positive (default %d), got %d",
				defaultMaxRecvMsgSizeMiB, g.MaxRecvMsgSizeMiB))
		}
	}
	if h := p.HTTP.Get(); h != nil {
		// 0 would silently mean confighttp's own 20 MiB default.
		if h.ServerConfig.MaxRequestBodySize <= 0 {
			errs = append(errs, fmt.Errorf("`protocols::http::max_request_body_size` must be positive (default %d), got %d",
				defaultMaxRequestBodySize, h.ServerConfig.MaxRequestBodySize))
		}
		if h.TracesURLPath == "" {
			errs = append(errs, errors.New("`protocols::http::traces_url_path` must not be empty"))
		}
		if h.LogsURLPath == "" {
			errs = append(errs, errors.New("`protocols::http::logs_url_path` must not be empty"))
		}
		if h.TracesURLPath != "" && h.TracesURLPath == h.LogsURLPath {
			errs = append(errs, fmt.Errorf("`protocols::http::traces_url_path` and `protocols::http::logs_url_path` "+
				"must differ, both are %q", h.TracesURLPath))
		}
	}
	if c.MaxBytesInFlight < 0 {
		errs = append(errs, fmt.Errorf("`max_bytes_in_flight` must be 0 (no bound) or positive, got %d", c.MaxBytesInFlight))
	}
	if largest := c.largestRequest(); c.MaxBytesInFlight > 0 && c.MaxBytesInFlight < largest {
		errs = append(errs, fmt.Errorf("`max_bytes_in_flight` (%d) must hold at least one request of the largest size "+
			"the servers accept (%d), or such a request could never pass", c.MaxBytesInFlight, largest))
	}
	return errors.Join(errs...)
}

// largestRequest is the largest request body or message the servers take.
func (c *Config) largestRequest() int64 {
	var n int64
	if g := c.Protocols.GRPC.Get(); g != nil {
		n = int64(g.MaxRecvMsgSizeMiB) << 20
	}
	if h := c.Protocols.HTTP.Get(); h != nil {
		n = max(n, h.ServerConfig.MaxRequestBodySize)
	}
	return n
}

func createDefaultConfig() component.Config {
	grpcCfg := configgrpc.NewDefaultServerConfig()
	grpcCfg.NetAddr.Endpoint = defaultGRPCEndpoint
	grpcCfg.MaxRecvMsgSizeMiB = defaultMaxRecvMsgSizeMiB
	grpcCfg.ReadBufferSize = defaultGRPCReadBufferSize

	httpCfg := HTTPConfig{
		ServerConfig:  confighttp.NewDefaultServerConfig(),
		TracesURLPath: defaultTracesURLPath,
		LogsURLPath:   defaultLogsURLPath,
	}
	httpCfg.ServerConfig.NetAddr.Endpoint = defaultHTTPEndpoint
	httpCfg.ServerConfig.TLS = configoptional.None[configtls.ServerConfig]()
	httpCfg.ServerConfig.MaxRequestBodySize = defaultMaxRequestBodySize
	// The Collector's otlp receiver has no write timeout either: the answer
	// to a request that waited for room in the sampler must still get out.
	httpCfg.ServerConfig.WriteTimeout = 0
	// A client that stops sending mid-body is cut off rather than holding
	// its connection and buffer for ever.
	httpCfg.ServerConfig.ReadTimeout = httpbody.ReadTimeout

	return &Config{
		Protocols: Protocols{
			GRPC: configoptional.Default(grpcCfg),
			HTTP: configoptional.Default(httpCfg),
		},
		Sampler:          *tailsampler.NewFactory().CreateDefaultConfig().(*tailsampler.Config),
		MaxBytesInFlight: httpbody.DefaultMaxBytesInFlight,
		Kafka:            configoptional.Default(kafka.DefaultConfig()),
	}
}

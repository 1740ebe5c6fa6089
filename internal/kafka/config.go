// Package kafka is tracesift's distributed mode over Apache Kafka: the
// topics and their contract, the gateway's span producer, the samplers'
// decision log, and the consumer that commits a partition's offset only up
// to what is safely handed on (docs/architecture.md, "Distributed mode").
//
// The topics:
//   - spans: a trace's partition is FNV-1a(its key) mod the partition
//     count (kafka-go's Hash balancer on the 16-byte key), so a trace's spans
//     all meet in one partition and so in one sampler. A trace's key is its
//     id XOR its tenant's key (tenant.Key), the id itself for the default
//     tenant: two tenants' traces of one id are two traces. Each message is
//     an OTLP ExportTraceServiceRequest with the spans of one request's
//     traces that fall in its partition, keyed by the key of one of them,
//     with the request's tenant in the header "tenant" (TenantHeader;
//     absent for the default tenant).
//   - kept: what samplers keep, OTLP ExportTraceServiceRequest (kept spans,
//     with the analysis resource of findings, clock offsets and RED rows).
//   - logs: OTLP ExportLogsServiceRequest, as the gateway received them.
//   - decisions: compacted; key the trace's key, value a byte (1 kept, 0
//     dropped) and the big-endian int64 offset in the spans partition up to
//     which the trace's spans were handed on with that decision
//     (tailsampler.Decision.Through); partitioned as spans, so a
//     partition's decisions go with it.
package kafka

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Config names the brokers and topics every role shares.
type Config struct {
	// Brokers are host:port of bootstrap brokers.
	Brokers []string `mapstructure:"brokers"`
	Topics  Topics   `mapstructure:"topics"`
	// Partitions is the partition count of the spans and decisions topics
	// when they are created: it bounds the samplers (one partition is read
	// by one sampler); changing it re-hashes traces. Default 12.
	Partitions int `mapstructure:"partitions"`
	// CreateTopics creates missing topics at start. Default true.
	CreateTopics bool `mapstructure:"create_topics"`
	// WriteTimeout bounds a produce call, acknowledgement included.
	// Default 10 s.
	WriteTimeout time.Duration `mapstructure:"write_timeout"`
}

// Topics are the topics' names.
type Topics struct {
	Spans     string `mapstructure:"spans"`
	Kept      string `mapstructure:"kept"`
	Logs      string `mapstructure:"logs"`
	Decisions string `mapstructure:"decisions"`
}

// DefaultConfig is the configuration every role starts from.
func DefaultConfig() Config {
	return Config{
		Brokers:      []string{"localhost:9092"},
		Topics:       Topics{Spans: "tracesift-spans", Kept: "tracesift-kept", Logs: "tracesift-logs", Decisions: "tracesift-decisions"},
		Partitions:   12,
		CreateTopics: true,
		WriteTimeout: 10 * time.Second,
	}
}

// brokers are the configured brokers, an entry with commas split (an
// environment variable names several that way).
func (c *Config) brokers() []string {
	var out []string
	for _, b := range c.Brokers {
		for _, s := range strings.Split(b, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// Validate says what is wrong with c.
func (c *Config) Validate() error {
	var errs []error
	if len(c.brokers()) == 0 {
		errs = append(errs, errors.New("kafka::brokers: at least one broker"))
	}
	for name, t := range map[string]string{"spans": c.Topics.Spans, "kept": c.Topics.Kept, "logs": c.Topics.Logs,
		"decisions": c.Topics.Decisions} {
		if t == "" {
			errs = append(errs, fmt.Errorf("kafka::topics::%s: a topic name", name))
		}
	}
	if c.Partitions < 1 {
		errs = append(errs, errors.New("kafka::partitions: at least 1"))
	}
	if c.WriteTimeout <= 0 {
		errs = append(errs, errors.New("kafka::write_timeout: positive"))
	}
	return errors.Join(errs...)
}

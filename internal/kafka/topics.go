package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	kgo "github.com/segmentio/kafka-go"
)

// maxMessageBytes is the largest message a topic takes: a request of up to
// 16 MiB (the receivers' bound) must fit whole.
const maxMessageBytes = 16 << 20

// decisionsRetention is how long decisions are kept for late spans after a
// handover; compaction keeps the last of a trace.
const decisionsRetention = time.Hour

// EnsureTopics creates the topics that do not exist yet: spans and
// decisions with c.Partitions partitions, kept and logs with as many.
func EnsureTopics(ctx context.Context, c *Config) error {
	client := &kgo.Client{Addr: kgo.TCP(c.brokers()...), Timeout: c.WriteTimeout}
	big := []kgo.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: strconv.Itoa(maxMessageBytes)}}
	topics := []kgo.TopicConfig{
		{Topic: c.Topics.Spans, NumPartitions: c.Partitions, ReplicationFactor: -1, ConfigEntries: big},
		{Topic: c.Topics.Kept, NumPartitions: c.Partitions, ReplicationFactor: -1, ConfigEntries: big},
		{Topic: c.Topics.Logs, NumPartitions: c.Partitions, ReplicationFactor: -1, ConfigEntries: big},
		{Topic: c.Topics.Decisions, NumPartitions: c.Partitions, ReplicationFactor: -1, ConfigEntries: []kgo.ConfigEntry{
			{ConfigName: "cleanup.policy", ConfigValue: "compact,delete"},
			{ConfigName: "retention.ms", ConfigValue: strconv.FormatInt(decisionsRetention.Milliseconds(), 10)},
		}},
	}
	resp, err := client.CreateTopics(ctx, &kgo.CreateTopicsRequest{Topics: topics})
	if err != nil {
		return fmt.Errorf("creating the Kafka topics on %v: %w", c.brokers(), err)
	}
	var errs []error
	for name, err := range resp.Errors {
		if err != nil && !errors.Is(err, kgo.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("creating topic %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// newWriter produces to topic: a message is acknowledged once every in-sync
// replica has it, partitioned by the hash of its key (the trace id).
func newWriter(c *Config, topic string) *kgo.Writer {
	return &kgo.Writer{
		Addr:         kgo.TCP(c.brokers()...),
		Topic:        topic,
		Balancer:     &kgo.Hash{},
		RequiredAcks: kgo.RequireAll,
		// A call's messages go out together; waiting for more costs latency
		// a client is waiting on.
		BatchTimeout: time.Millisecond,
		BatchSize:    10000,
		BatchBytes:   maxMessageBytes,
		WriteTimeout: c.WriteTimeout,
		ReadTimeout:  c.WriteTimeout,
		MaxAttempts:  3,
	}
}

package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	kgo "github.com/segmentio/kafka-go"
	"go.uber.org/zap"
)

// maxMessageBytes is the largest message a topic takes: a request of up to
// 16 MiB (the receivers' bound) must fit whole.
const maxMessageBytes = 16 << 20

// A reader's fetch returns once fetchMinBytes are there or after
// fetchMaxWait: one fetch per produced message would cost the broker more
// CPU than the roles spend, and a quarter second is nothing next to a
// sampler's decision wait or an ingester's batch.
const (
	fetchMinBytes = 1 << 20
	fetchMaxWait  = 250 * time.Millisecond
)

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
// replica has it, partitioned by the hash of its key (the trace id). A
// batch (one partition's messages of a produce request) holds at most
// batchSize messages: kafka-go allocates that many for every batch, so it
// is sized to what a call writes to one partition, not larger.
func newWriter(c *Config, topic string, batchSize int) *kgo.Writer {
	return &kgo.Writer{
		Addr:         kgo.TCP(c.brokers()...),
		Topic:        topic,
		Balancer:     &kgo.Hash{}, // keyless messages (kept, logs): round robin
		RequiredAcks: kgo.RequireAll,
		// A call's messages go out together; waiting for more costs latency
		// a client is waiting on.
		BatchTimeout: time.Millisecond,
		BatchSize:    batchSize,
		BatchBytes:   maxMessageBytes,
		WriteTimeout: c.WriteTimeout,
		ReadTimeout:  c.WriteTimeout,
		MaxAttempts:  3,
	}
}

// partitionOf is the index of key's partition among n: FNV-1a of the key
// mod n, as the writers' kafka-go Hash balancer computes it (tested), so the
// gateway can group a request's traces by partition and key each group's
// message by one of its trace ids.
func partitionOf(key []byte, n int) int {
	h := uint32(2166136261)
	for _, c := range key {
		h ^= uint32(c)
		h *= 16777619
	}
	p := int32(h) % int32(n)
	if p < 0 {
		p = -p
	}
	return int(p)
}

// topicPartitions reads topic's partition count from the brokers.
func topicPartitions(ctx context.Context, c *Config, topic string) (int, error) {
	client := &kgo.Client{Addr: kgo.TCP(c.brokers()...), Timeout: c.WriteTimeout}
	resp, err := client.Metadata(ctx, &kgo.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("reading the partitions of topic %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return 0, fmt.Errorf("reading the partitions of topic %s: %w", topic, t.Error)
		}
		if len(t.Partitions) > 0 {
			return len(t.Partitions), nil
		}
	}
	return 0, fmt.Errorf("topic %s has no partitions (does it exist?)", topic)
}

// readerErrors logs what a kafka-go reader retries on its own (a lost
// connection, a moved leader): otherwise a partition that stopped being read
// says nothing.
func readerErrors(logger *zap.Logger, topic string) kgo.Logger {
	return kgo.LoggerFunc(func(msg string, args ...any) {
		logger.Warn("Kafka reader: "+fmt.Sprintf(msg, args...), zap.String("topic", topic))
	})
}

package kafka

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/kafka/broker"
	"github.com/tracesift/tracesift/internal/tailsampler"
)

// A partition's new owner loads its recent decisions: the last n of them,
// every one, and at once (the partition is not read meanwhile).
func TestLoadDecisions(t *testing.T) {
	ctx := context.Background()
	cfg := startBroker(t, 2)
	log := NewDecisionLog(&cfg, nil)
	defer log.Close()

	// 20 000 decisions, in batches as shards record them; those of
	// partition 0 are counted.
	var want []tailsampler.Decision
	for batch := range 100 {
		ds := make([]tailsampler.Decision, 200)
		for i := range ds {
			n := uint64(batch*200 + i)
			binary.BigEndian.PutUint64(ds[i].TraceID[:], n*0x9e3779b97f4a7c15)
			binary.BigEndian.PutUint64(ds[i].TraceID[8:], n)
			ds[i].Kept, ds[i].Through = n%3 == 0, int64(n)
			if partitionOf(ds[i].TraceID[:], cfg.Partitions) == 0 {
				want = append(want, ds[i])
			}
		}
		require.NoError(t, log.Record(ctx, ds))
	}
	start := time.Now()
	got, err := loadDecisions(ctx, &cfg, 0, 100000)
	t.Logf("loaded %d decisions in %s", len(got), time.Since(start))
	require.NoError(t, err)
	require.Equal(t, want, got)

	got, err = loadDecisions(ctx, &cfg, 0, 10)
	require.NoError(t, err)
	require.Equal(t, want[len(want)-10:], got)
}

// startBroker starts a Kafka broker for the test (skipped with -short) and
// returns a configuration for it with its topics of partitions created.
func startBroker(t *testing.T, partitions int) Config {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Kafka broker")
	}
	if _, err := broker.Libs(); err != nil {
		t.Fatalf("%v (make test installs them)", err)
	}
	b, err := broker.Start(context.Background(), t.TempDir(), "")
	require.NoError(t, err)
	t.Cleanup(b.Stop)
	cfg := DefaultConfig()
	cfg.Brokers = []string{b.Addr}
	cfg.Partitions = partitions
	require.NoError(t, EnsureTopics(context.Background(), &cfg))
	return cfg
}

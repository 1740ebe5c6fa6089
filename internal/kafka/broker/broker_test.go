package broker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// A broker starts, takes a topic and a message and gives it back, and
// comes back with its data after a kill.
func TestBroker(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := Start(ctx, dir, "")
	require.NoError(t, err)
	t.Cleanup(b.Stop)
	client := &kafka.Client{Addr: kafka.TCP(b.Addr), Timeout: 10 * time.Second}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: "t", NumPartitions: 2, ReplicationFactor: 1}}})
	require.NoError(t, err)
	require.NoError(t, resp.Errors["t"])
	w := &kafka.Writer{Addr: kafka.TCP(b.Addr), Topic: "t", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	require.NoError(t, w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("v")}))
	require.NoError(t, w.Close())

	b.Kill()
	b, err = Start(ctx, dir, b.Addr)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(dir, "broker.log"))
			t.Log(string(out))
		}
	})
	require.NoError(t, err)
	t.Cleanup(b.Stop)
	got := 0
	for p := range 2 {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{b.Addr}, Topic: "t", Partition: p})
		// The broker answers before it has elected its partitions' leaders
		// again: asked until it has (polling, at most 30 s).
		var last int64
		deadline := time.Now().Add(30 * time.Second)
		for last, err = r.ReadLag(ctx); err != nil && time.Now().Before(deadline); last, err = r.ReadLag(ctx) {
			time.Sleep(200 * time.Millisecond)
		}
		require.NoError(t, err)
		if last > 0 {
			m, err := r.ReadMessage(ctx)
			require.NoError(t, err)
			require.Equal(t, "v", string(m.Value))
			got++
		}
		r.Close()
	}
	require.Equal(t, 1, got, "the message survived the kill")
}

// A cluster id never starts with '-': the storage tool would take it for an
// option (a broker failed to format once in 64 that way).
func TestClusterIDIsNeverAnOption(t *testing.T) {
	for range 2000 {
		require.NotEqual(t, byte('-'), clusterID()[0])
	}
}

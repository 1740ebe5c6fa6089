package kafka

import (
	"encoding/binary"
	"testing"

	kgo "github.com/segmentio/kafka-go"
	"github.com/stretchr/testify/require"
)

// The topics' contract says a trace's partition is kafka-go's Hash of its
// id: another producer keying by trace id with that balancer must land
// where the gateway's messages do.
func TestPartitionOfIsTheWritersHash(t *testing.T) {
	for _, n := range []int{1, 3, 8, 12, 100} {
		parts := make([]int, n)
		for i := range parts {
			parts[i] = i
		}
		seen := map[int]bool{}
		for i := range 2000 {
			var id [16]byte
			binary.BigEndian.PutUint64(id[:], uint64(i)*0x9e3779b97f4a7c15)
			binary.BigEndian.PutUint64(id[8:], uint64(i))
			m := kgo.Message{Key: id[:]}
			want := (&kgo.Hash{}).Balance(m, parts...)
			require.Equal(t, want, partitionOf(id[:], n), "n=%d id=%x", n, id)
			seen[want] = true
		}
		require.Len(t, seen, n, "every partition gets traces")
	}
}

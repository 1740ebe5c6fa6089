package kafka

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The safe offset is the lowest still needed, whatever the order messages
// are handed on in; gaps in the offsets (compaction) do not matter.
func TestOffsetsCommitTheLowestStillNeeded(t *testing.T) {
	o := newOffsets()
	assert.Equal(t, int64(-1), o.safe(), "nothing read")
	for _, off := range []int64{10, 11, 12, 15} {
		o.read(off)
	}
	assert.Equal(t, int64(10), o.safe())
	o.done(11)
	o.done(15)
	assert.Equal(t, int64(10), o.safe(), "10 still needed")
	o.done(10)
	assert.Equal(t, int64(12), o.safe())
	o.done(12)
	assert.Equal(t, int64(16), o.safe(), "all handed on: after the last read")
	o.done(99) // unknown: ignored
	assert.Zero(t, o.waiting())
}

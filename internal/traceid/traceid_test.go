package traceid

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

const (
	tid     = "4bf92f3577b34da6a3ce929d0e0e4736"
	sid     = "00f067aa0ba902b7"
	tid64   = "463ac35c9f6413ad" // a 64-bit B3 trace id
	zeroTID = "00000000000000000000000000000000"
	zeroSID = "0000000000000000"
)

func TestParseIDs(t *testing.T) {
	id, ok := ParseTraceID(strings.ToUpper(tid))
	assert.True(t, ok)
	assert.Equal(t, tid, hex.EncodeToString(id[:]))
	id, ok = ParseTraceID(tid64)
	assert.True(t, ok)
	assert.Equal(t, "0000000000000000"+tid64, hex.EncodeToString(id[:]))
	for _, bad := range []string{"", zeroTID, zeroSID, tid[:31], tid + "0", "g" + tid[1:], tid[:16] + " " + tid[17:]} {
		_, ok := ParseTraceID(bad)
		assert.False(t, ok, bad)
	}
	sp, ok := ParseSpanID("00F067AA0BA902B7")
	assert.True(t, ok)
	assert.Equal(t, sid, hex.EncodeToString(sp[:]))
	for _, bad := range []string{"", zeroSID, tid, sid[:15], "x" + sid[1:]} {
		_, ok := ParseSpanID(bad)
		assert.False(t, ok, bad)
	}
}

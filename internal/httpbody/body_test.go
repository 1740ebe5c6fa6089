package httpbody

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		16 << 20: "16 MiB", 2048: "2 KiB", 1000: "1000 B", 3<<20 + 1: "3.0 MiB",
	} {
		assert.Equal(t, want, FormatBytes(n))
	}
}

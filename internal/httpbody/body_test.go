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

func TestTooLargeMessage(t *testing.T) {
	assert.Equal(t, "request too large: the body is over the limit of 4096 bytes (4 KiB), set by `max_request_body_size` "+
		"of receiver x; send smaller batches (lower the exporter's batch size) or raise the limit",
		TooLargeMessage("the body", 4096, "`max_request_body_size` of receiver x"))
}

package httpbody

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// A client announcing a large body and sending a few bytes gets a buffer
// sized by what arrived, not by what it announced.
func TestReadDoesNotTrustContentLength(t *testing.T) {
	var p Pool
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("ten bytes!"))
	req.ContentLength = 16 << 20
	buf, _, err := p.Read(req)
	require.NoError(t, err)
	assert.Equal(t, "ten bytes!", buf.String())
	assert.Less(t, buf.Cap(), 1<<20, "not the 16 MiB announced")

	// A large body that does arrive is read whole.
	body := bytes.Repeat([]byte("x"), 3<<20)
	req = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	buf, _, err = p.Read(req)
	require.NoError(t, err)
	assert.Equal(t, len(body), buf.Len())
}

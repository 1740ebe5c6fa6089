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

// The bodies a Pool has given out and not got back are bounded by its
// Budget: a request that would pass it fails with ErrBusy and holds nothing,
// and what is put back can be taken again.
func TestBudgetBoundsBytesInFlight(t *testing.T) {
	p := Pool{Budget: NewBudget(100)}
	read := func(n int) (*bytes.Buffer, error) {
		buf, _, err := p.Read(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", n))))
		return buf, err
	}
	a, err := read(60)
	require.NoError(t, err)
	assert.EqualValues(t, 60, p.Budget.Used())
	_, err = read(50)
	require.ErrorIs(t, err, ErrBusy)
	assert.EqualValues(t, 60, p.Budget.Used(), "a refused request holds nothing")
	b, err := read(40)
	require.NoError(t, err)
	assert.EqualValues(t, 100, p.Budget.Used())
	p.Put(a)
	p.Put(b)
	assert.Zero(t, p.Budget.Used())
	c, err := read(100)
	require.NoError(t, err)
	p.Put(c)
	assert.Zero(t, p.Budget.Used())

	var unbounded Pool
	d, _, err := unbounded.Read(httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 1000))))
	require.NoError(t, err)
	unbounded.Put(d)
	assert.Nil(t, NewBudget(0), "no limit, no budget")
}

// Package httpbody reads HTTP request bodies for the receivers: pooled
// buffers, and the words that explain a size limit.
package httpbody

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// maxPooledBody bounds the buffers a Pool keeps: a rare huge request
// should not pin its buffer for the life of the process.
const maxPooledBody = 4 << 20

// ReadTimeout is the receivers' default bound on reading a whole request:
// a 16 MiB body at 280 KB/s.
const ReadTimeout = time.Minute

// announcedGrow is how much of a body's announced length is allocated
// before any of it has arrived.
const announcedGrow = 256 << 10

// Pool reads HTTP request bodies into reusable buffers, for receivers
// that hand the bytes on and do not keep them. The zero value is ready.
type Pool struct{ pool sync.Pool }

// Read reads req's body in full. When a size limit (http.MaxBytesReader,
// as confighttp installs it) stopped it, tooLarge is that limit and err is
// nil; any other failure (a truncated upload, a corrupt compressed body) is
// err. buf is non-nil only on success; give it back with Put.
func (p *Pool) Read(req *http.Request) (buf *bytes.Buffer, tooLarge int64, err error) {
	buf, _ = p.pool.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	if n := req.ContentLength; n > 0 {
		// Sized from Content-Length only up to announcedGrow: a client that
		// announces a large body and sends nothing must not pin that much
		// memory; beyond it the buffer grows as bytes arrive. MinRead is the
		// room ReadFrom wants to see EOF.
		buf.Grow(int(min(n, announcedGrow)) + bytes.MinRead)
	}
	if _, err = buf.ReadFrom(req.Body); err == nil {
		return buf, 0, nil
	}
	p.Put(buf)
	if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, mbe.Limit, nil
	}
	return nil, 0, err
}

// Put returns a buffer from Read for reuse.
func (p *Pool) Put(buf *bytes.Buffer) {
	if buf == nil || buf.Cap() > maxPooledBody {
		return
	}
	buf.Reset()
	p.pool.Put(buf)
}

// TooLargeMessage is the 413 answer's text: what (e.g. "the body") is over
// limit bytes, set by setBy (the configuration key and component), and what
// the client can do about it.
func TooLargeMessage(what string, limit int64, setBy string) string {
	return "request too large: " + what + " is over the limit of " + strconv.FormatInt(limit, 10) + " bytes (" +
		FormatBytes(limit) + "), set by " + setBy + "; send smaller batches (lower the exporter's batch size) " +
		"or raise the limit"
}

// FormatBytes renders a size limit for operators: "16 MiB", "512 KiB",
// "1.5 MiB", "100 B".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	default:
		return strconv.FormatInt(n, 10) + " B"
	}
}

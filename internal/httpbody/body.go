// Package httpbody reads HTTP request bodies for the receivers: pooled
// buffers, and the words that explain a size limit.
package httpbody

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
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

// DefaultMaxBytesInFlight is the receivers' default Budget: sixteen bodies
// of the largest default size at once, or hundreds of usual ones.
const DefaultMaxBytesInFlight = 256 << 20

// ErrBusy is why a request was refused by its receiver's Budget: the bodies
// of other requests hold it. Clients are told to retry (429, Retry-After).
var ErrBusy = errors.New("the receiver holds its limit of request bytes in flight (`max_bytes_in_flight`)")

// Budget bounds the bytes of request bodies a receiver holds at once, read
// and not yet given back, across all its requests: without it, many slow or
// large requests each within the size limit add up to any amount of memory.
// A nil Budget bounds nothing.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes; nil when limit is not positive.
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		return nil
	}
	return &Budget{limit: limit}
}

// Take takes n bytes, or nothing and false when that would pass the limit.
func (b *Budget) Take(n int64) bool {
	if b == nil {
		return true
	}
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// Release gives back n bytes taken.
func (b *Budget) Release(n int64) {
	if b != nil {
		b.used.Add(-n)
	}
}

// Used is the bytes taken now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// budgeted takes from a Budget every byte it reads: a read that would pass
// the limit returns ErrBusy and nothing, so the buffer holds exactly what
// was taken.
type budgeted struct {
	r io.Reader
	b *Budget
}

func (br budgeted) Read(p []byte) (int, error) {
	n, err := br.r.Read(p)
	if n > 0 && !br.b.Take(int64(n)) {
		return 0, ErrBusy
	}
	return n, err
}

// Pool reads HTTP request bodies into reusable buffers, for receivers
// that hand the bytes on and do not keep them. The zero value is ready
// and unbounded; Budget, when set, bounds the bytes of the buffers given
// out and not yet put back.
type Pool struct {
	pool   sync.Pool
	Budget *Budget
}

// Read reads req's body in full. When a size limit (http.MaxBytesReader,
// as confighttp installs it) stopped it, tooLarge is that limit and err is
// nil; any other failure (a truncated upload, a corrupt compressed body, the
// Budget spent: ErrBusy) is err. buf is non-nil only on success; give it
// back with Put, which gives its bytes back to the Budget.
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
	var body io.Reader = req.Body
	if p.Budget != nil {
		body = budgeted{r: req.Body, b: p.Budget}
	}
	if _, err = buf.ReadFrom(body); err == nil {
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
	if buf == nil {
		return
	}
	p.Budget.Release(int64(buf.Len()))
	if buf.Cap() > maxPooledBody {
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

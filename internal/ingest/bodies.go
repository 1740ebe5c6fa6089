package ingest

import (
	"bytes"
	"errors"
	"net/http"
	"sync"
)

// maxPooledBody bounds the buffers a BodyPool keeps: a rare huge request
// should not pin its buffer for the life of the process.
const maxPooledBody = 4 << 20

// BodyPool reads HTTP request bodies into reusable buffers, for receivers
// that hand the bytes on and do not keep them. The zero value is ready.
type BodyPool struct{ pool sync.Pool }

// Read reads req's body in full. When a size limit (http.MaxBytesReader,
// as confighttp installs it) stopped it, tooLarge is that limit and err is
// nil; any other failure (a truncated upload, a corrupt compressed body) is
// err. buf is non-nil only on success; give it back with Put.
func (p *BodyPool) Read(req *http.Request) (buf *bytes.Buffer, tooLarge int64, err error) {
	buf, _ = p.pool.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	if n := req.ContentLength; n > 0 {
		// One allocation at most, and none for a pooled buffer that is big
		// enough; MinRead is the room ReadFrom wants to see EOF.
		buf.Grow(int(n) + bytes.MinRead)
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
func (p *BodyPool) Put(buf *bytes.Buffer) {
	if buf == nil || buf.Cap() > maxPooledBody {
		return
	}
	buf.Reset()
	p.pool.Put(buf)
}

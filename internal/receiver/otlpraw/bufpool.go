package otlpraw

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc/mem"
)

// Buffer sizes the request pool keeps: powers of two from 4 KiB to 16 MiB.
// Larger requests get a buffer of their own.
const (
	minPoolExp = 12
	maxPoolExp = 24
)

// requestPool holds the buffers the gRPC server reads frames into and
// requests are gathered into (see rawCodec.Unmarshal). Unlike gRPC's
// default pool it rounds up to the next power of two and does not clear a
// buffer it hands out: a buffer is filled up to the length asked for before
// anything reads it, and nothing reads past that length.
type requestPool struct {
	tiers [maxPoolExp + 1]sync.Pool
}

var _ mem.BufferPool = (*requestPool)(nil)

var receivedRequests requestPool

// Get returns a buffer of length n, holding whatever its last user left.
func (p *requestPool) Get(n int) *[]byte {
	exp := minPoolExp
	if n > 1<<minPoolExp {
		exp = bits.Len(uint(n - 1))
	}
	if exp > maxPoolExp {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[exp].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<exp)
	return &b
}

// Put takes back a buffer Get returned; others are left to the collector.
func (p *requestPool) Put(b *[]byte) {
	c := cap(*b)
	exp := bits.Len(uint(c)) - 1
	if c == 0 || c != 1<<exp || exp < minPoolExp || exp > maxPoolExp {
		return
	}
	*b = (*b)[:0]
	p.tiers[exp].Put(b)
}

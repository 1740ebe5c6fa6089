package kafka

import (
	"slices"
	"sync"
)

// offsets follows the messages of one partition read in one generation:
// which are still needed (their traces undecided, or kept but not produced
// yet) and so the offset that is safe to commit — the lowest one still
// needed, or the one after the last read. Jaeger's ingester commits the
// same way (its highest contiguous processed offset).
type offsets struct {
	mu      sync.Mutex
	pending []entry // by offset
	next    int64   // the offset after the last read; -1 before any
}

type entry struct {
	off  int64
	done bool
}

func newOffsets() *offsets { return &offsets{next: -1} }

// read registers a message read at off (offsets grow).
func (o *offsets) read(off int64) {
	o.mu.Lock()
	o.pending = append(o.pending, entry{off: off})
	o.next = off + 1
	o.mu.Unlock()
}

// done marks the message at off as handed on.
func (o *offsets) done(off int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i, found := slices.BinarySearchFunc(o.pending, off, func(e entry, off int64) int {
		return int(min(max(e.off-off, -1), 1))
	})
	if !found {
		return
	}
	o.pending[i].done = true
	n := 0
	for n < len(o.pending) && o.pending[n].done {
		n++
	}
	if n > 0 {
		o.pending = slices.Delete(o.pending, 0, n)
	}
}

// safe is the offset to commit: every message before it is handed on; -1
// while nothing was read.
func (o *offsets) safe() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) > 0 {
		return o.pending[0].off
	}
	return o.next
}

// waiting is how many messages are still needed.
func (o *offsets) waiting() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.pending)
}

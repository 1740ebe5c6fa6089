package tailsampler

import (
	"sync"
	"sync/atomic"
	"time"
)

// Compression is worth its CPU while it lets traces wait out decision_wait in
// max_buffered_bytes; under overload, when the shards decide early whatever
// the buffer holds, it only costs CPU the overloaded process lacks. The
// governor pauses compression when the buffer needs relief although it has
// been compressing for long enough to be full of compressed traces, and
// tries again after a pause that doubles (up to maxCompressionPause) while
// the overload lasts.
type compressionGovernor struct {
	grace time.Duration // how long compression must have run before relief counts against it

	pausedUntil atomic.Int64 // unix nanoseconds; 0 while compressing
	resumedAt   atomic.Int64 // when compression last (re)started

	mu           sync.Mutex
	pause        time.Duration
	lastOverload time.Time
	pauses       int64 // for the metric and the log
}

const (
	minCompressionPause = time.Minute
	maxCompressionPause = 10 * time.Minute
)

func newCompressionGovernor(grace time.Duration, now time.Time) *compressionGovernor {
	g := &compressionGovernor{grace: grace, pause: minCompressionPause}
	g.resumedAt.Store(now.UnixNano())
	return g
}

// compressing reports whether new frames are compressed now.
func (g *compressionGovernor) compressing(now time.Time) bool {
	until := g.pausedUntil.Load()
	if until == 0 {
		return true
	}
	if now.UnixNano() < until {
		return false
	}
	if g.pausedUntil.CompareAndSwap(until, 0) {
		g.resumedAt.Store(now.UnixNano())
	}
	return true
}

// restarted is told that compression started again for another reason
// (the buffer passed buffer_compression_above): the grace counts from now.
func (g *compressionGovernor) restarted(now time.Time) {
	g.resumedAt.Store(now.UnixNano())
}

// overloaded is told that a shard needs relief; it returns true when that
// paused compression.
func (g *compressionGovernor) overloaded(now time.Time) bool {
	if g.pausedUntil.Load() != 0 || now.UnixNano()-g.resumedAt.Load() < int64(g.grace) {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pausedUntil.Load() != 0 {
		return false
	}
	if now.Sub(g.lastOverload) > maxCompressionPause+g.grace {
		g.pause = minCompressionPause // the last overload is long past: start over
	} else {
		g.pause = min(2*g.pause, maxCompressionPause)
	}
	g.lastOverload = now
	g.pauses++
	g.pausedUntil.Store(now.Add(g.pause).UnixNano())
	return true
}

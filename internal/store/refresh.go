package store

import (
	"context"
	"sync"
	"time"
)

// refresher runs the reads that renew what a Reader keeps of a tenant (its
// skewed host pairs, its resources in use) in the background, one at a time
// a tenant, once what it has was read every or more ago. A lookup starts
// them when it is done, so that it does not wait for them nor share the
// engine's read sessions with them; only one that cannot answer without
// them starts them first and waits.
type refresher struct {
	every   time.Duration
	timeout time.Duration   // of a read, besides the statement's own bounds
	bg      *sync.WaitGroup // the reader's: Wait waits for it
	mu      sync.Mutex
	began   map[string]time.Time     // when the tenant's last good read began
	running map[string]chan struct{} // closed when the tenant's read under way ends
}

// ever says whether a read of the tenant's has succeeded.
func (f *refresher) ever(tn string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.began[tn]
	return ok
}

// start runs read for tenant tn in the background when its last good read
// began every or more before now (or none did) and none is under way. It
// returns the tenant's read under way, if any. read gets ctx's values
// without its cancellation: the lookup that starts it may end first.
func (f *refresher) start(ctx context.Context, now time.Time, tn string, read func(context.Context) error) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch := f.running[tn]; ch != nil {
		return ch
	}
	if at, ok := f.began[tn]; ok && now.Sub(at) < f.every {
		return nil
	}
	if f.running == nil {
		f.running = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	f.running[tn] = ch
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
		err := read(rctx)
		cancel()
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.running, tn)
		if err == nil { // a failed read is tried again by the next lookup
			if f.began == nil || len(f.began) >= maxTenantsKept {
				f.began = map[string]time.Time{}
			}
			f.began[tn] = now
		}
		close(ch)
	}()
	return ch
}

// await waits for running, if not nil, to end, or ctx to be done; false if
// ctx was done first.
func await(ctx context.Context, running <-chan struct{}) bool {
	if running == nil {
		return true
	}
	select {
	case <-running:
		return true
	case <-ctx.Done():
		return false
	}
}

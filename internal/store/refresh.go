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
// them starts them first and waits. After a read fails, the tenant's next
// waits every, then twice as long after each further failure, up to
// maxRenewBackoff; lookups answer without it meanwhile.
type refresher struct {
	what    string // the report's name of what is read
	every   time.Duration
	timeout time.Duration   // of a read, besides the statement's own bounds
	bg      *sync.WaitGroup // the reader's: Wait waits for it
	// report, if set, is told of a tenant's first failed read in a row and
	// of its next good one (err nil).
	report  func(what, tenant string, err error)
	mu      sync.Mutex
	began   map[string]time.Time     // when the tenant's last good read began
	running map[string]chan struct{} // closed when the tenant's read under way ends
	failed  map[string]failures      // the tenant's failed reads since its last good one
}

// failures are a tenant's failed reads in a row: how many, and when the last
// began.
type failures struct {
	n  int
	at time.Time
}

// maxRenewBackoff bounds the wait after failed reads, unless every is longer.
const maxRenewBackoff = time.Minute

// backoff is how long after the last of fs the tenant's next read waits.
func (f *refresher) backoff(fs failures) time.Duration {
	most := max(f.every, maxRenewBackoff)
	d := f.every
	for i := 1; i < fs.n && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// ever says whether a read of the tenant's has succeeded.
func (f *refresher) ever(tn string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.began[tn]
	return ok
}

// start runs read for tenant tn in the background when its last good read
// began every or more before now (or none did), none is under way and the
// backoff after failed ones is over. It returns the tenant's read under way,
// if any. read gets ctx's values without its cancellation: the lookup that
// starts it may end first.
func (f *refresher) start(ctx context.Context, now time.Time, tn string, read func(context.Context) error) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch := f.running[tn]; ch != nil {
		return ch
	}
	if at, ok := f.began[tn]; ok && now.Sub(at) < f.every {
		return nil
	}
	if fs, ok := f.failed[tn]; ok && now.Sub(fs.at) < f.backoff(fs) {
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
		defer close(ch)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
		err := read(rctx)
		cancel()
		if report := f.ended(tn, now, err); report && f.report != nil {
			f.report(f.what, tn, err)
		}
	}()
	return ch
}

// ended records the end of tenant tn's read begun at now, which returned
// err; it says whether to report it: the first failure in a row, or a good
// read after failures.
func (f *refresher) ended(tn string, now time.Time, err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, tn)
	fs, failedBefore := f.failed[tn]
	if err != nil {
		if f.failed == nil || (!failedBefore && len(f.failed) >= maxTenantsKept) {
			f.failed = map[string]failures{}
		}
		f.failed[tn] = failures{n: fs.n + 1, at: now}
		return fs.n == 0
	}
	delete(f.failed, tn)
	if f.began == nil || len(f.began) >= maxTenantsKept {
		f.began = map[string]time.Time{}
	}
	f.began[tn] = now
	return failedBefore
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

package embedded

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A write waiting for the engine goes before every read waiting with it, so
// an insert waits for the statement running at most; a read waiting gives up
// when its context ends.
func TestTurnsPutWritesFirst(t *testing.T) {
	var tr turns
	require.NoError(t, tr.enter(context.Background(), false)) // a read runs
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	queued := func(name string, write bool) {
		wg.Go(func() {
			require.NoError(t, tr.enter(context.Background(), write))
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			tr.leave()
		})
	}
	queued("read 1", false)
	queued("read 2", false)
	// The reads wait for the running one; the write comes after them.
	require.Eventually(t, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.free != nil
	}, 5*time.Second, time.Millisecond)
	queued("write", true)
	require.Eventually(t, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.writers == 1
	}, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- tr.enter(ctx, false) }()
	cancel()
	assert.ErrorIs(t, <-gaveUp, context.Canceled)

	tr.leave() // the running read ends
	wg.Wait()
	require.Len(t, order, 3)
	assert.Equal(t, "write", order[0], "the write goes first: %v", order)
	assert.False(t, tr.busy)
}

package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/store"
)

// A read runs while a write runs: reads have sessions of their own.
func TestReadsDoNotWaitForWrites(t *testing.T) {
	ctx := context.Background()
	wrote := make(chan error, 1)
	running := make(chan struct{})
	go func() {
		// Every write session is taken: one by this slow statement, the
		// others held until it runs.
		var held []*session
		for range writeSessions - 1 {
			held = append(held, <-conn.writes)
		}
		defer func() {
			for _, s := range held {
				conn.writes <- s
			}
		}()
		close(running)
		wrote <- conn.Exec(ctx, "SELECT sleep(2)", nil)
	}()
	<-running
	// Once the engine runs the write, a read.
	require.Eventually(t, func() bool {
		n := 0
		require.NoError(t, conn.Query(ctx, "SELECT 1 FROM system.processes WHERE query LIKE 'SELECT sleep(2)%'", nil,
			func([]byte) error { n++; return nil }))
		return n == 1
	}, 10*time.Second, time.Millisecond)
	select {
	case err := <-wrote:
		t.Fatalf("the read waited for the write (%v)", err)
	default:
	}
	require.NoError(t, <-wrote)
}

// A statement waiting for a session gives up when its context ends.
func TestWaitingForASessionEndsWithTheContext(t *testing.T) {
	p := make(sessions, 1) // no idle session
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.do(ctx, func(*session) error { return nil }) }()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

// A read's bound on its run time is cut to what is left of its context's
// deadline, once it has a session: the engine does not stop a statement when
// its context ends.
func TestReadsEndByTheirDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	began := time.Now()
	// 10 s of sleeping, bounded at 30 s by its own setting.
	err := conn.Query(ctx, "SELECT sleepEachRow(0.1) FROM numbers(100)\nSETTINGS max_execution_time = 30, max_block_size = 1",
		nil, func([]byte) error { return nil })
	require.Error(t, err)
	assert.True(t, store.IsQueryLimit(err), "%v", err)
	assert.Less(t, time.Since(began), 5*time.Second)

	soon, cancelSoon := context.WithTimeout(context.Background(), time.Second)
	defer cancelSoon()
	cut, err := withinDeadline(soon, "SELECT 1 -- max_execution_time = 9\nSETTINGS max_execution_time = 4, max_memory_usage = 10")
	require.NoError(t, err)
	assert.Regexp(t, `^SELECT 1 -- max_execution_time = 9\nSETTINGS max_execution_time = [01]\.[0-9]{3}, max_memory_usage = 10$`, cut)
	for _, q := range []string{"SELECT 1\nSETTINGS max_execution_time = 0.5", "SELECT 'max_execution_time = 9'"} {
		kept, err := withinDeadline(soon, q)
		require.NoError(t, err)
		assert.Equal(t, q, kept, "a bound within the deadline, or none")
	}
	kept, err := withinDeadline(context.Background(), "SELECT 1\nSETTINGS max_execution_time = 4")
	require.NoError(t, err)
	assert.Equal(t, "SELECT 1\nSETTINGS max_execution_time = 4", kept, "no deadline")
	<-ctx.Done()
	_, err = withinDeadline(ctx, "SELECT 1")
	require.ErrorIs(t, err, context.DeadlineExceeded, "no time left")
}

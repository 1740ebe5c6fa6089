package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

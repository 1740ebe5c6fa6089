package red

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An edge whose retries exceed 10 % of its calls over the window stands
// out; one within the budget, or with too few calls, does not.
func TestRetryBudget(t *testing.T) {
	r := NewRetries(100)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	// Over five minutes, in 30 s steps: checkout → payments retries 15 % of
	// its calls, checkout → stock 5 %, cart → pricing 40 % of 20 calls.
	for i := range 10 {
		at := now.Add(-time.Duration(i) * 30 * time.Second)
		require.True(t, r.Add(at, 1, "", "checkout", []byte("payments"), 100, 15))
		require.True(t, r.Add(at, 2, "", "checkout", []byte("stock"), 100, 5))
		require.True(t, r.Add(at, 3, "", "cart", []byte("pricing"), 2, 1))
	}
	got := r.Judge(now)
	require.Len(t, got, 1)
	f := got[0]
	assert.Equal(t, KindRetryBudget, f.Kind)
	assert.Equal(t, "checkout", f.Service)
	assert.Equal(t, "checkout → payments", f.Subject)
	assert.Equal(t, 0.15, f.Value)
	assert.Equal(t, "checkout → payments: 15 % of 1000 calls were retries (150) over the last 5m0s, over the 10 % budget", f.Summary)
	assert.Equal(t, []string{}, f.SpanIDs)

	// Ten minutes later, with no more retries, the window has moved on.
	later := now.Add(10 * time.Minute)
	r.Add(later, 1, "", "checkout", []byte("payments"), 100, 0)
	assert.Empty(t, r.Judge(later))
}

// Past maxEdges edges in a slot, a new edge is refused (the caller counts
// it); the edges already there are still counted.
func TestRetryBudgetBoundsEdges(t *testing.T) {
	r := NewRetries(2)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	assert.True(t, r.Add(now, 1, "", "a", []byte("x"), 100, 50))
	assert.True(t, r.Add(now, 2, "", "a", []byte("y"), 1, 0))
	assert.False(t, r.Add(now, 3, "", "a", []byte("z"), 100, 50))
	assert.True(t, r.Add(now, 1, "", "a", []byte("x"), 100, 50))
	got := r.Judge(now)
	require.Len(t, got, 1)
	assert.Equal(t, "a → x", got[0].Subject)
	assert.Equal(t, 0.5, got[0].Value)
}

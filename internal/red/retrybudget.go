package red

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// KindRetryBudget is the finding kind of a call edge whose retries exceed
// the retry budget over the last RetryBudgetWindow.
const KindRetryBudget = "retry_budget"

// The retry budget: an edge stands out when more than RetryBudget of its
// calls over RetryBudgetWindow were retries, with at least minBudgetCalls
// calls and minBudgetRetries retries, so that a quiet edge's one retry
// does not decide.
const (
	RetryBudget       = 0.10
	RetryBudgetWindow = 5 * time.Minute
	minBudgetCalls    = 50
	minBudgetRetries  = 5
)

// Edge is a call edge: the calling service and what it calls (the callee's
// peer.service, server address or RPC service, else the call's name), of a
// tenant ("" for the default).
type Edge struct{ Tenant, Service, Callee string }

// Retries counts the calls and retries of every call edge over the last
// RetryBudgetWindow, in slots, and judges them against the retry budget. It
// is safe for concurrent use.
type Retries struct {
	mu       sync.Mutex
	maxEdges int
	slots    map[uint64]map[uint64]*edgeTally // by slot start (Unix nanoseconds), then edge hash
	newest   uint64
}

type edgeTally struct {
	edge           Edge
	calls, retries uint64
}

// NewRetries counts at most maxEdges edges in each 30 s slot of the window.
func NewRetries(maxEdges int) *Retries {
	return &Retries{maxEdges: max(maxEdges, 1), slots: map[uint64]map[uint64]*edgeTally{}}
}

// MaxEdges is the most edges counted in a slot.
func (r *Retries) MaxEdges() int { return r.maxEdges }

// Add counts calls on the edge hashed h, retries of them, at now; tenant,
// service and callee name it (h must hash all three), read only when the
// edge is new in its slot. It reports false when the edge was not counted:
// its slot had maxEdges.
func (r *Retries) Add(now time.Time, h uint64, tenant, service string, callee []byte, calls, retries uint64) bool {
	at := uint64(now.UnixNano())
	at -= at % uint64(outlierSlot)
	r.mu.Lock()
	defer r.mu.Unlock()
	slot := r.slots[at]
	if slot == nil {
		if at+uint64(RetryBudgetWindow) < r.newest {
			return true // older than the window: nothing to judge
		}
		slot = map[uint64]*edgeTally{}
		r.slots[at] = slot
		r.newest = max(r.newest, at)
	}
	t := slot[h]
	if t == nil {
		if len(slot) >= r.maxEdges {
			return false
		}
		t = &edgeTally{edge: Edge{tenant, service, string(callee)}}
		slot[h] = t
	}
	t.calls += calls
	t.retries += retries
	return true
}

// Judge drops the slots older than RetryBudgetWindow before now and returns
// a finding for each edge over the retry budget, at now.
func (r *Retries) Judge(now time.Time) []model.Finding {
	from := uint64(now.Add(-RetryBudgetWindow).UnixNano())
	sums := map[Edge]*edgeTally{}
	r.mu.Lock()
	for at, slot := range r.slots {
		if at+uint64(outlierSlot) <= from {
			delete(r.slots, at)
			continue
		}
		for _, t := range slot {
			s := sums[t.edge]
			if s == nil {
				s = &edgeTally{edge: t.edge}
				sums[t.edge] = s
			}
			s.calls += t.calls
			s.retries += t.retries
		}
	}
	r.mu.Unlock()
	var out []model.Finding
	for _, e := range slices.SortedFunc(maps.Keys(sums), func(a, b Edge) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Service, b.Service), cmp.Compare(a.Callee, b.Callee))
	}) {
		t := sums[e]
		ratio := float64(t.retries) / float64(max(t.calls, 1))
		if t.calls < minBudgetCalls || t.retries < minBudgetRetries || ratio <= RetryBudget {
			continue
		}
		out = append(out, model.Finding{TimeUnixNano: uint64(now.UnixNano()), Kind: KindRetryBudget, SpanIDs: []string{}, Tenant: e.Tenant,
			Service: e.Service, Subject: e.Service + " → " + e.Callee, Value: math.Round(ratio*1e4) / 1e4,
			Summary: fmt.Sprintf("%s → %s: %s of %s calls were retries (%s) over the last %s, over the %s budget",
				e.Service, e.Callee, pct(ratio), strconv.FormatUint(t.calls, 10), strconv.FormatUint(t.retries, 10),
				RetryBudgetWindow, pct(RetryBudget))})
	}
	return out
}

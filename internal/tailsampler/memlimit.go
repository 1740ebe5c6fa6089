package tailsampler

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
)

// memoryLimits holds the Go memory limit for the samplers of the process.
// The limit is the process's, while samplers come and go (the Collector
// rebuilds its pipelines on a configuration reload; a process may run
// several). While any sampler runs, the limit is the sum of their
// go_memory_limit (each bounds its own working set), or the limit in force
// before the first started if that is higher; when the last one stops, that
// limit comes back. GOMEMLIMIT, when set, wins.
var memoryLimits = memoryLimitHolder{held: map[*sampler]int64{}}

type memoryLimitHolder struct {
	mu     sync.Mutex
	held   map[*sampler]int64
	before int64 // the limit before the first sampler held it
}

// hold adds limit (> 0) for s and returns the limit now in force; 0 when
// nothing was changed.
func (m *memoryLimitHolder) hold(s *sampler, limit int64) int64 {
	if limit <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.held) == 0 {
		m.before = debug.SetMemoryLimit(-1)
	}
	m.held[s] = limit
	return m.apply()
}

// release drops s's part of the limit.
func (m *memoryLimitHolder) release(s *sampler) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.held[s]; !ok {
		return
	}
	delete(m.held, s)
	if len(m.held) == 0 {
		debug.SetMemoryLimit(m.before)
		return
	}
	m.apply()
}

// apply sets the limit for the samplers held; m.mu is held.
func (m *memoryLimitHolder) apply() int64 {
	var limit int64
	for _, l := range m.held {
		if limit > math.MaxInt64-l {
			limit = math.MaxInt64
			break
		}
		limit += l
	}
	if m.before != math.MaxInt64 { // MaxInt64: there was none
		limit = max(limit, m.before)
	}
	debug.SetMemoryLimit(limit)
	return limit
}

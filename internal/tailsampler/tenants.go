package tailsampler

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/tracesift/tracesift/internal/tenant"
)

// A trace is keyed by its trace id XOR its tenant's key (tenant.Key), so two
// tenants sending one trace id have two traces: the key routes it to a
// shard, buffers it, caches its decision and names it in the decision log.
// The default tenant's key is zero: single-tenant keys are the trace ids.
// A buffered trace holds its tenant as an index into tenantTable (index 0
// is tenant.Default), not as a string.

// tenantInfo is one interned tenant.
type tenantInfo struct {
	name string   // as tenant.FromContext returns it
	key  [16]byte // tenant.Key(name)
	// row is the tenant as model rows carry it: "" for the default.
	row string
}

// tenantTable interns tenants. Lookups by index are lock-free (the list is
// copied on write); tenants come from configured tokens, so it stays small.
type tenantTable struct {
	list atomic.Pointer[[]tenantInfo]
	mu   sync.RWMutex
	idx  map[string]uint32
}

func newTenantTable() *tenantTable {
	t := &tenantTable{idx: map[string]uint32{tenant.Default: 0}}
	t.list.Store(&[]tenantInfo{{name: tenant.Default}})
	return t
}

// intern returns the index of tenant name, adding it when new.
func (t *tenantTable) intern(name string) uint32 {
	if name == tenant.Default || name == "" {
		return 0
	}
	t.mu.RLock()
	i, ok := t.idx[name]
	t.mu.RUnlock()
	if ok {
		return i
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok = t.idx[name]; ok {
		return i
	}
	old := *t.list.Load()
	list := append(old[:len(old):len(old)], tenantInfo{name: name, key: tenant.Key(name), row: name})
	i = uint32(len(old))
	t.idx[name] = i
	t.list.Store(&list)
	return i
}

// get returns the tenant at index i (from intern).
func (t *tenantTable) get(i uint32) *tenantInfo {
	return &(*t.list.Load())[i]
}

// keyed returns id XOR key: a trace's key from its id, and back.
func keyed(id pcommon.TraceID, key *[16]byte) pcommon.TraceID {
	for i := range id {
		id[i] ^= key[i]
	}
	return id
}

// traceID is the trace id c's spans carry (c.id is its key).
func (p *sampler) traceID(c *traceChunk) pcommon.TraceID {
	if c.tenant == 0 {
		return c.id
	}
	return keyed(c.id, &p.tenants.get(c.tenant).key)
}

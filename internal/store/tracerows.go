package store

import (
	"encoding/binary"
	"sync"

	"github.com/cespare/xxhash/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/tenant"
)

// The rows a batch of spans adds besides its span rows: a summary of each of
// its traces for trace_summaries (computed here, as a materialized view did
// in the engine before schema 008), and the resources its spans name
// (resources holds each once, under resource_id).

// traceSum is what a batch holds of one trace, from which its
// trace_summaries row derives.
type traceSum struct {
	id                    pcommon.TraceID
	tenant                int32  // in traceSums.tenants
	start, end            uint64 // Unix ns: the first span's start, the last end
	rootService, rootName string // the greatest of the root spans', as maxIf
	spans, errors         uint64
	services              []string // distinct, in order of appearance
}

// traceSums sums up the traces of a batch, in order of first appearance, so
// that the same batch always makes the same rows (and insert token). Two
// tenants' traces of one id are two traces.
type traceSums struct {
	index   map[traceKey]int32
	sums    []traceSum
	tenants []string // of the batch, distinct; cur is the current resource's
	cur     int32
}

type traceKey struct {
	id     pcommon.TraceID
	tenant int32
}

// setTenant makes t the tenant of the spans added next.
func (t *traceSums) setTenant(name string) {
	for i, known := range t.tenants {
		if known == name {
			t.cur = int32(i)
			return
		}
	}
	t.cur = int32(len(t.tenants))
	t.tenants = append(t.tenants, name)
}

func (t *traceSums) reset() {
	clear(t.index)
	clear(t.tenants) // do not keep the pdata's strings alive
	t.tenants, t.cur = t.tenants[:0], 0
	for i := range t.sums {
		clear(t.sums[i].services) // do not keep the pdata's strings alive
		t.sums[i].services = t.sums[i].services[:0]
		t.sums[i].rootService, t.sums[i].rootName = "", ""
	}
	t.sums = t.sums[:0]
}

// add counts span s, of service (valid UTF-8), whose duration is dur.
func (t *traceSums) add(s ptrace.Span, service string, dur uint64) {
	if t.index == nil {
		t.index = map[traceKey]int32{}
	}
	start := uint64(s.StartTimestamp())
	end := start + dur
	key := traceKey{s.TraceID(), t.cur}
	i, ok := t.index[key]
	if !ok {
		i = int32(len(t.sums))
		t.index[key] = i
		if len(t.sums) < cap(t.sums) {
			t.sums = t.sums[:i+1]
		} else {
			t.sums = append(t.sums, traceSum{})
		}
		sum := &t.sums[i]
		sum.id, sum.tenant, sum.start, sum.end, sum.spans, sum.errors = s.TraceID(), t.cur, start, end, 0, 0
	}
	sum := &t.sums[i]
	sum.start, sum.end = min(sum.start, start), max(sum.end, end)
	sum.spans++
	if s.Status().Code() == ptrace.StatusCodeError {
		sum.errors++
	}
	if s.ParentSpanID().IsEmpty() {
		// The greatest of the names as stored, as the engine compared them.
		sum.rootService, sum.rootName = max(sum.rootService, service), max(sum.rootName, validUTF8(s.Name()))
	}
	for _, known := range sum.services {
		if known == service {
			return
		}
	}
	sum.services = append(sum.services, service)
}

// Columns of trace_summaries, in the order of its schema.
var traceSummaryColumns = []nativeColumnDef{
	{"start", nativeDateTime64},
	{"trace_id", nativeString},
	{"duration_ns", nativeUInt64},
	{"root_service", nativeString},
	{"root_name", nativeString},
	{"span_count", nativeUInt32},
	{"error_count", nativeUInt32},
	{"services", nativeStringArray},
	{"tenant", nativeString},
}

// appendSummaryRows appends a trace_summaries row for each trace to b, set to
// traceSummaryColumns. Counts beyond UInt32 saturate.
func (t *traceSums) appendSummaryRows(b *nativeBlock) {
	c := b.cols
	for i := range t.sums {
		s := &t.sums[i]
		c[0].appendUInt64(s.start)
		c[1].data = appendNativeTraceID(c[1].data, s.id)
		c[2].appendUInt64(s.end - s.start)
		c[3].appendString(s.rootService)
		c[4].appendString(s.rootName)
		c[5].appendUInt32(uint32(min(s.spans, 1<<32-1)))
		c[6].appendUInt32(uint32(min(s.errors, 1<<32-1)))
		c[7].appendStrings(s.services)
		c[8].appendString(t.tenants[s.tenant])
		b.rows++
	}
}

// resourceID is the resources table's key of a resource: a 64-bit hash of its
// entries as the rows hold them (Native keys, then values, and their number)
// and of its tenant (a Native string) but for the default's, whose ids are
// those of before tenants; never 0, which marks the rows that carry their
// resource themselves. Two tenants' resources alike get two ids, so the
// writer's and reader's memories of ids keep tenants apart too.
// Resources with the same attributes in another order get another id, and
// both are stored; a collision of two different resources is as likely as
// any 64-bit hash's (about 3 in 10⁸ among a million resources).
func resourceID(keys, values []byte, entries uint64, tenantNative []byte) uint64 {
	var d xxhash.Digest
	d.Reset()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], entries)
	_, _ = d.Write(n[:])
	_, _ = d.Write(keys)
	_, _ = d.Write(values)
	if string(tenantNative) != defaultTenantNative {
		_, _ = d.Write(tenantNative)
	}
	if id := d.Sum64(); id != 0 {
		return id
	}
	return 1
}

// defaultTenantNative is tenant.Default as a Native string.
var defaultTenantNative = string(appendNativeString(nil, tenant.Default))

// batchResource is a resource met in a batch: its entries and tenant as
// Native strings (in the encoder's arena) and its last span's start.
type batchResource struct {
	id                     uint64
	keysFrom, keysTo, vals int // arena offsets: keys [keysFrom, keysTo), values [keysTo, vals)
	tenantTo               int // the tenant: [vals, tenantTo)
	entries                uint64
	lastSeen               uint64 // Unix ns
}

// Columns of resources, in the order of its schema.
var resourceColumns = []nativeColumnDef{
	{"resource_id", nativeUInt64},
	{"last_seen", nativeDateTime},
	{"attributes", nativeStringMap},
	{"tenant", nativeString},
}

// resourceRefresh is how often a resource in use is written again, so that
// its last_seen (and retention) follows its spans'.
const resourceRefresh = 3600 // seconds

// maxRememberedResources bounds the writer's memory of the resources it
// wrote; past it, it forgets them all and writes each again once.
const maxRememberedResources = 100_000

// writtenResources remembers, per resource id, the last_seen (Unix seconds)
// that the writer last stored.
type writtenResources struct {
	mu   sync.Mutex
	seen map[uint64]uint32
}

// appendNew appends to b, set to resourceColumns, a row for each resource of
// the batch that was not written with a last_seen within resourceRefresh of
// the batch's. It returns the rows' ids and last_seen to mark once stored.
func (w *writtenResources) appendNew(b *nativeBlock, res []batchResource, arena []byte, marks []resourceMark) []resourceMark {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := b.cols
	for _, r := range res {
		secs := uint32(min(r.lastSeen/1e9, 1<<32-1))
		if last, ok := w.seen[r.id]; ok && uint64(secs) < uint64(last)+resourceRefresh {
			continue
		}
		c[0].appendUInt64(r.id)
		c[1].appendUInt32(secs)
		c[2].keys = append(c[2].keys, arena[r.keysFrom:r.keysTo]...)
		c[2].values = append(c[2].values, arena[r.keysTo:r.vals]...)
		c[2].entries += r.entries
		c[2].endMap()
		c[3].data = append(c[3].data, arena[r.vals:r.tenantTo]...)
		b.rows++
		marks = append(marks, resourceMark{r.id, secs})
	}
	return marks
}

type resourceMark struct {
	id   uint64
	secs uint32
}

// mark records that the resources of marks are stored.
func (w *writtenResources) mark(marks []resourceMark) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil || len(w.seen)+len(marks) > maxRememberedResources {
		w.seen = make(map[uint64]uint32, len(marks))
	}
	for _, m := range marks {
		w.seen[m.id] = max(w.seen[m.id], m.secs)
	}
}

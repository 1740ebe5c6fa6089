package tailsampler

// Per-trace statistics for the keep rules that stand in for analyzer findings
// on traces the analyzers never see (they run on kept traces only): how often
// one call repeats (retry_fanout) and which hosts a trace crosses
// (clock_skew). Both are small fixed tables folded in as spans arrive, so a
// buffered trace costs 48 bytes more and no allocation.

// OTLP span kinds the sampler tells apart.
const (
	kindServer   = 2
	kindClient   = 3
	kindProducer = 4
	kindConsumer = 5
)

// callCounts counts client and producer spans by name hash for the four
// most frequent names seen; a fifth name replaces the least frequent one
// when it has more calls.
type callCounts [4]struct{ name, n uint32 }

func (c *callCounts) add(name, n uint32) {
	least := 0
	for i := range c {
		switch {
		case c[i].name == name && c[i].n > 0:
			c[i].n += n
			return
		case c[i].n < c[least].n:
			least = i
		}
	}
	if n > c[least].n {
		c[least].name, c[least].n = name, n
	}
}

func (c *callCounts) merge(o *callCounts) {
	for _, e := range o {
		if e.n > 0 {
			c.add(e.name, e.n)
		}
	}
}

// max is the most calls of one name.
func (c *callCounts) max() int {
	m := uint32(0)
	for _, e := range c {
		m = max(m, e.n)
	}
	return int(m)
}

// hostSet holds the hash of up to four hosts a trace crosses (0: empty slot;
// a trace over more hosts keeps its first four).
type hostSet [4]uint32

func (h *hostSet) add(host uint32) {
	if host == 0 {
		return
	}
	for i := range h {
		switch h[i] {
		case host:
			return
		case 0:
			h[i] = host
			return
		}
	}
}

// nameHash and hostHash are 32-bit FNV-1a; 0 is kept for "none".
func nameHash(b []byte) uint32 { return fnv32(b) }

func hostHash(b []byte) uint32 {
	if len(b) == 0 {
		return 0
	}
	return fnv32(b)
}

func fnv32(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	if h == 0 {
		h = 1
	}
	return h
}

// pairKey is an unordered pair of host hashes.
func pairKey(a, b uint32) uint64 {
	if a > b {
		a, b = b, a
	}
	return uint64(a)<<32 | uint64(b)
}

//go:build !unix

package tailsampler

// mapSlab allocates slabs on the Go heap where anonymous mappings are not
// available: the allocator still reuses blocks, only without leaving the heap.
func mapSlab(n int) ([]byte, error) { return make([]byte, n), nil }

func releaseSlab([]byte) {}

func unmapSlab([]byte) {}

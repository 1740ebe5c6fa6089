//go:build unix

package tailsampler

import "syscall"

// mapSlab maps n bytes of anonymous memory, outside the Go heap.
func mapSlab(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
}

// releaseSlab gives the slab's pages back to the operating system; the
// mapping stays, and reads as zeros until written again.
func releaseSlab(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }

func unmapSlab(b []byte) { _ = syscall.Munmap(b) }

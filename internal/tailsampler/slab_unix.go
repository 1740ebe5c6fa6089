//go:build unix

package tailsampler

import "syscall"

// mapSlab maps n bytes of anonymous memory, outside the Go heap.
func mapSlab(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
}

func unmapSlab(b []byte) { _ = syscall.Munmap(b) }

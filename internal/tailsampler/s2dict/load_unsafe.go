//go:build !s2dict_safe

package s2dict

import "unsafe"

// load64 reads the 8 bytes of b at i, little-endian, without a bounds check:
// the encoder's loop reads there several times a byte, and the checks cost a
// sixth of its time (BenchmarkEncode). Every caller keeps i+8 <= len(b);
// `go test -tags s2dict_safe` (make test) runs the tests with checked loads.
func load64(b []byte, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), i))
}

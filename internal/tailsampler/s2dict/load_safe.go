//go:build s2dict_safe

package s2dict

import "encoding/binary"

// load64 reads the 8 bytes of b at i, little-endian; this build checks the
// bounds the unchecked one relies on.
func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

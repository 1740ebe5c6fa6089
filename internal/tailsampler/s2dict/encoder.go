// Package s2dict compresses small blocks against a dictionary in the S2 block
// format, for s2.Dict.Decode (github.com/klauspost/compress/s2) to read.
//
// The sampler compresses every trace's spans of a request as a small block of
// its own against a dictionary trained on recent traffic. S2's own dictionary
// encoder zeroes a 64 KiB hash table for every block, which dominates on small
// blocks (docs/benchmarks.md). This encoder indexes the dictionary once, in a
// table shared read-only by every block, and gives each block a table sized to
// the block, reused by the caller. It emits literals, copies
// and repeats only, all within the format S2's decoder checks; blocks larger
// than MaxBlock, rare, are left to S2's encoder.
package s2dict

import (
	"encoding/binary"
	"math/bits"

	"github.com/klauspost/compress/s2"
)

// MaxBlock is the largest block Encode compresses itself: S2 copies from the
// dictionary only up to this output position, and the block's own hash table
// holds 16-bit positions.
const MaxBlock = s2.MaxDictSrcOffset

const (
	dictTableBits = 14
	minTableBits  = 6
	maxTableBits  = 14
	// minBlock is the smallest block worth searching; shorter ones are stored
	// as a literal.
	minBlock = 16
)

// Encoder compresses blocks against one dictionary. It is immutable after
// NewEncoder and safe for concurrent use; each goroutine brings its own
// Table.
type Encoder struct {
	dict  *s2.Dict
	raw   []byte // the dictionary's bytes, as s2.Dict holds them
	table *[1 << dictTableBits]uint16
}

// NewEncoder returns an encoder for the dictionary made of the last
// s2.MaxDictSize bytes of sample, as s2.MakeDict(sample, nil) makes it, or
// nil when sample is too short for one.
func NewEncoder(sample []byte) *Encoder {
	d := s2.MakeDict(sample, nil)
	if d == nil {
		return nil
	}
	if len(sample) > s2.MaxDictSize {
		sample = sample[len(sample)-s2.MaxDictSize:]
	}
	e := &Encoder{dict: d, raw: sample, table: new([1 << dictTableBits]uint16)}
	// Every position from which 8 bytes can be read, the later ones winning:
	// they are the most recent traffic.
	for i := 0; i+8 <= len(sample); i++ {
		e.table[hash6(load64(sample, i), dictTableBits)] = uint16(i)
	}
	return e
}

// Dict is the dictionary for decoding what the encoder wrote.
func (e *Encoder) Dict() *s2.Dict { return e.dict }

// Table is a block's hash table, reused from block to block by one goroutine.
type Table struct {
	t []uint16
}

// Encode returns the S2 block of src, in dst if it is large enough. The block
// decodes with e.Dict().Decode.
func (e *Encoder) Encode(dst, src []byte, tab *Table) []byte {
	if len(src) > MaxBlock {
		return e.dict.Encode(dst, src)
	}
	n := s2.MaxEncodedLen(len(src))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	dst = dst[:n]
	h := binary.PutUvarint(dst, uint64(len(src)))
	if len(src) >= minBlock {
		if m := e.encodeBlock(dst[h:], src, tab); m > 0 {
			return dst[:h+m]
		}
	}
	return dst[:h+emitLiteral(dst[h:], src)]
}

// encodeBlock writes src's elements to dst and returns their size, or 0 when
// they would not be smaller than src stored as a literal.
func (e *Encoder) encodeBlock(dst, src []byte, tab *Table) int {
	tableBits := uint8(min(max(bits.Len(uint(len(src))), minTableBits), maxTableBits))
	if cap(tab.t) < 1<<tableBits {
		tab.t = make([]uint16, 1<<maxTableBits)
	}
	table := tab.t[:1<<tableBits]
	clear(table)
	dict := e.raw

	// Bail out once the block cannot beat a literal by a little.
	dstLimit := len(src) - len(src)>>5 - 5
	sLimit := len(src) - 8 // 8 bytes are read at s
	d, s, nextEmit := 0, 0, 0
	lastOffset := 0 // no copy yet: S2 starts the repeat offset in the dictionary
	for s <= sLimit {
		cv := load64(src, s)
		hs := hash6(cv, tableBits)
		cand := int(table[hs])
		table[hs] = uint16(s)

		length, offset := 0, 0
		fromDict := false
		if cand < s {
			if x := cv ^ load64(src, cand); uint32(x) == 0 {
				length, offset = 8, s-cand
				if x != 0 {
					length = bits.TrailingZeros64(x) >> 3
				} else {
					length += matchLen(src[s+8:], src[cand+8:])
				}
			}
		}
		// The dictionary is searched unless the block itself gave a long
		// match: a copy from the dictionary costs more (a farther offset),
		// so it must be longer to win.
		if length < 16 {
			dc := int(e.table[hash6(cv, dictTableBits)])
			if dc+8 <= len(dict) {
				if x := cv ^ load64(dict, dc); uint32(x) == 0 {
					l := 8
					if x != 0 {
						l = bits.TrailingZeros64(x) >> 3
					} else {
						l += matchLen(src[s+8:], dict[dc+8:])
					}
					if l > length+1 {
						length, offset, fromDict = l, s+len(dict)-dc, true
					}
				}
			}
		}
		if length == 0 {
			// Skip faster through data that does not compress (random ids
			// and times): a byte further for every 8 without a match, the
			// step that balanced CPU against size (docs/benchmarks.md).
			s += 1 + (s-nextEmit)>>3
			continue
		}
		// A farther offset costs a 5-byte copy: not worth it for 4 bytes.
		if offset > 0xffff && length < 6 {
			s += 1 + (s-nextEmit)>>3
			continue
		}

		// Extend backwards over the pending literal. A copy from the
		// dictionary stays within it, and one from the block within the
		// block: S2 rejects a copy that straddles them.
		base := s
		if fromDict {
			for ref := base - offset + len(dict); base > nextEmit && ref > 0 && dict[ref-1] == src[base-1]; ref-- {
				base--
			}
		} else {
			for ref := base - offset; base > nextEmit && ref > 0 && src[ref-1] == src[base-1]; ref-- {
				base--
			}
		}
		if d+(base-nextEmit)+16 > dstLimit {
			return 0
		}
		d += emitLiteral(dst[d:], src[nextEmit:base])
		if offset == lastOffset {
			d += emitRepeat(dst[d:], s+length-base)
		} else {
			d += emitCopy(dst[d:], offset, s+length-base)
		}
		lastOffset = offset
		s += length
		nextEmit = s
		// Index two positions before the next search, as S2 does: the
		// next match often starts where this one ended.
		if s <= sLimit {
			table[hash6(load64(src, s-2), tableBits)] = uint16(s - 2)
			table[hash6(load64(src, s-1), tableBits)] = uint16(s - 1)
		}
	}
	if d+(len(src)-nextEmit)+5 > dstLimit {
		return 0
	}
	return d + emitLiteral(dst[d:], src[nextEmit:])
}

// matchLen is the length of the common prefix of a and b.
func matchLen(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := load64(a, i) ^ load64(b, i); x != 0 {
			return i + bits.TrailingZeros64(x)>>3
		}
	}
	for ; i < n && a[i] == b[i]; i++ {
	}
	return i
}

const (
	tagLiteral = 0x00
	tagCopy1   = 0x01
	tagCopy2   = 0x02
	tagCopy4   = 0x03
)

// emitLiteral writes lit as a literal element and returns the bytes written.
func emitLiteral(dst, lit []byte) int {
	if len(lit) == 0 {
		return 0
	}
	n := uint32(len(lit) - 1)
	i := 0
	switch {
	case n < 60:
		dst[0] = byte(n)<<2 | tagLiteral
		i = 1
	case n < 1<<8:
		dst[0], dst[1] = 60<<2|tagLiteral, byte(n)
		i = 2
	case n < 1<<16:
		dst[0], dst[1], dst[2] = 61<<2|tagLiteral, byte(n), byte(n>>8)
		i = 3
	case n < 1<<24:
		dst[0], dst[1], dst[2], dst[3] = 62<<2|tagLiteral, byte(n), byte(n>>8), byte(n>>16)
		i = 4
	default:
		dst[0], dst[1], dst[2], dst[3], dst[4] = 63<<2|tagLiteral, byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
		i = 5
	}
	return i + copy(dst[i:], lit)
}

// emitCopy writes a copy of length (at least 4) bytes from offset back and
// returns the bytes written. A copy element holds at most 64 bytes; the rest
// follows as a repeat of the same offset.
func emitCopy(dst []byte, offset, length int) int {
	if offset < 2048 && length <= 11 {
		dst[0] = byte(offset>>8)<<5 | byte(length-4)<<2 | tagCopy1
		dst[1] = byte(offset)
		return 2
	}
	first := length
	if length > 64 {
		first = 64
		if length-first < 4 {
			first = length - 4
		}
	}
	var n int
	if offset <= 0xffff {
		dst[0], dst[1], dst[2] = byte(first-1)<<2|tagCopy2, byte(offset), byte(offset>>8)
		n = 3
	} else {
		dst[0] = byte(first-1)<<2 | tagCopy4
		binary.LittleEndian.PutUint32(dst[1:], uint32(offset))
		n = 5
	}
	if first < length {
		n += emitRepeat(dst[n:], length-first)
	}
	return n
}

// emitRepeat writes a copy of length (4 to 65 795) bytes from the last copy's
// offset and returns the bytes written.
func emitRepeat(dst []byte, length int) int {
	switch l := length - 4; {
	case l <= 4:
		dst[0], dst[1] = byte(l)<<2|tagCopy1, 0
		return 2
	case l < 1<<8+4:
		dst[0], dst[1], dst[2] = 5<<2|tagCopy1, 0, byte(l-4)
		return 3
	default:
		l -= 1 << 8
		dst[0], dst[1], dst[2], dst[3] = 6<<2|tagCopy1, 0, byte(l), byte(l>>8)
		return 4
	}
}

// hash6 hashes the low 6 bytes of u to h bits.
func hash6(u uint64, h uint8) uint32 {
	const prime6bytes = 227718039650203
	return uint32(((u << (64 - 48)) * prime6bytes) >> ((64 - h) & 63))
}

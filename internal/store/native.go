package store

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"unicode/utf8"
)

// The spans and logs are inserted in ClickHouse's Native format: one block,
// column after column, each value in its binary form, which the engine takes
// with almost no parsing (docs/benchmarks.md compares it with JSONEachRow).
//
// A block is: the number of columns and of rows (unsigned LEB128), then per
// column its name, its type (strings) and its values:
//
//	DateTime64(9), DateTime,      fixed-width little-endian integers
//	UInt64, UInt32, UInt8, Int64
//	Float64                       IEEE 754, little-endian
//	FixedString(16)               the 16 bytes
//	String                        LEB128 length, then the bytes
//	Map(String, String)           per row the cumulative number of entries
//	                              (UInt64), then every key, then every value
//	Array(String)                 per row the cumulative number of elements
//	                              (UInt64), then every element
//
// LowCardinality(String) columns are sent as String, and
// SimpleAggregateFunction columns as their value type: the engine converts
// them on insert (input_format_native_allow_types_conversion, on by default).
//
// Strings are made valid UTF-8 (each byte that is not part of valid UTF-8
// becomes U+FFFD), as they were when rows went as JSON: the API serves them
// as JSON.

// nativeType is a column type of a Native block.
type nativeType uint8

const (
	nativeString nativeType = iota
	nativeDateTime64
	nativeUInt64
	nativeUInt32
	nativeUInt8
	nativeDateTime
	nativeStringMap
	nativeStringArray
	nativeFloat64
	nativeInt64
	nativeFixedString16
	nativeBucketMap
)

var nativeTypeNames = [...]string{
	nativeString:        "String",
	nativeDateTime64:    "DateTime64(9)",
	nativeUInt64:        "UInt64",
	nativeUInt32:        "UInt32",
	nativeUInt8:         "UInt8",
	nativeDateTime:      "DateTime",
	nativeStringMap:     "Map(String, String)",
	nativeStringArray:   "Array(String)",
	nativeFloat64:       "Float64",
	nativeInt64:         "Int64",
	nativeFixedString16: "FixedString(16)",
	nativeBucketMap:     "Map(Int32, UInt64)",
}

// nativeColumnDef names a column of a table and its type in the block.
type nativeColumnDef struct {
	name string
	typ  nativeType
}

// nativeColumn holds the values of one column of the block being built.
type nativeColumn struct {
	data []byte
	// Map columns: data holds the cumulative entry counts, keys and values
	// the entries, entries how many there are so far. Array columns use keys
	// for the elements.
	keys, values []byte
	entries      uint64
}

func (c *nativeColumn) reset() {
	c.data, c.keys, c.values, c.entries = c.data[:0], c.keys[:0], c.values[:0], 0
}

func (c *nativeColumn) appendString(s string) { c.data = appendNativeString(c.data, s) }

func (c *nativeColumn) appendBytes(b []byte) {
	c.data = binary.AppendUvarint(c.data, uint64(len(b)))
	c.data = append(c.data, b...)
}

func (c *nativeColumn) appendUInt64(v uint64) { c.data = binary.LittleEndian.AppendUint64(c.data, v) }

func (c *nativeColumn) appendUInt32(v uint32) { c.data = binary.LittleEndian.AppendUint32(c.data, v) }

func (c *nativeColumn) appendUInt8(v uint8) { c.data = append(c.data, v) }

func (c *nativeColumn) appendInt64(v int64) { c.appendUInt64(uint64(v)) }

func (c *nativeColumn) appendFloat64(v float64) { c.appendUInt64(math.Float64bits(v)) }

// appendStrings appends a row of an Array(String) column.
func (c *nativeColumn) appendStrings(ss []string) {
	for _, s := range ss {
		c.keys = appendNativeString(c.keys, s)
	}
	c.entries += uint64(len(ss))
	c.endMap()
}

// appendStringMap appends a row of a Map(String, String) column, its keys in
// order (the same rows make the same block, for deduplication).
func (c *nativeColumn) appendStringMap(m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		c.keys = appendNativeString(c.keys, k)
		c.values = appendNativeString(c.values, m[k])
	}
	c.entries += uint64(len(m))
	c.endMap()
}

// appendBucketMap appends a row of a Map(Int32, UInt64) column, its keys in
// order.
func (c *nativeColumn) appendBucketMap(m map[int32]uint64) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		c.keys = binary.LittleEndian.AppendUint32(c.keys, uint32(k))
		c.values = binary.LittleEndian.AppendUint64(c.values, m[k])
	}
	c.entries += uint64(len(m))
	c.endMap()
}

// endMap ends the current row of a map or array column: its entries are in keys and
// values, entries counts them.
func (c *nativeColumn) endMap() { c.data = binary.LittleEndian.AppendUint64(c.data, c.entries) }

// nativeBlock builds a Native block of a table's columns, row by row.
type nativeBlock struct {
	defs []nativeColumnDef
	cols []nativeColumn
	rows int
}

// reset empties b and sets its columns, keeping the buffers.
func (b *nativeBlock) reset(defs []nativeColumnDef) {
	b.defs, b.rows = defs, 0
	if cap(b.cols) < len(defs) {
		b.cols = make([]nativeColumn, len(defs))
	}
	b.cols = b.cols[:len(defs)]
	for i := range b.cols {
		b.cols[i].reset()
	}
}

// size is the length of the encoded block without its header.
func (b *nativeBlock) size() int {
	n := 0
	for i := range b.cols {
		n += len(b.cols[i].data) + len(b.cols[i].keys) + len(b.cols[i].values)
	}
	return n
}

// appendTo appends the encoded block to dst, growing it once.
func (b *nativeBlock) appendTo(dst []byte) []byte {
	header := 2 * binary.MaxVarintLen64
	for _, d := range b.defs {
		header += 2*binary.MaxVarintLen64 + len(d.name) + len(nativeTypeNames[d.typ])
	}
	dst = slices.Grow(dst, header+b.size())
	dst = binary.AppendUvarint(dst, uint64(len(b.defs)))
	dst = binary.AppendUvarint(dst, uint64(b.rows))
	for i, d := range b.defs {
		dst = appendNativeString(dst, d.name)
		dst = appendNativeString(dst, nativeTypeNames[d.typ])
		c := &b.cols[i]
		dst = append(dst, c.data...)
		dst = append(dst, c.keys...)
		dst = append(dst, c.values...)
	}
	return dst
}

// validUTF8 returns s as appendNativeString stores it: each byte that is not
// part of valid UTF-8 replaced by U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := appendNativeString(nil, s)
	_, n := binary.Uvarint(b)
	return string(b[n:])
}

// appendNativeString appends s as a Native String value: its length, then
// its bytes, made valid UTF-8.
func appendNativeString(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		return append(b, s...)
	}
	n := 0 // the length once each bad byte is U+FFFD (3 bytes)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 3
		} else {
			n += size
		}
		i += size
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

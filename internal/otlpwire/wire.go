package otlpwire

import "encoding/binary"

// Wire types of the protobuf encoding.
const (
	wtVarint     int8 = 0
	wtI64        int8 = 1
	wtLen        int8 = 2
	wtStartGroup int8 = 3
	wtEndGroup   int8 = 4
	wtI32        int8 = 5
)

// fault is what went wrong at the wire level. It is a small value, not an
// error, so that the hot path never builds an error it does not return.
type fault uint8

const (
	faultNone     fault = iota
	faultEOF            // a varint, fixed-size value or length runs past the end of its message
	faultOverflow       // a varint longer than 10 bytes
	faultLength         // a length that does not fit in an int
	faultFieldNum       // a tag with field number 0 (or one that wraps negative)
	faultWireType       // wire type 6 or 7
	faultEndGroup       // an end-group tag with no group open
	faultDepth          // attribute values nested deeper than recursionLimit
)

func (f fault) String() string {
	switch f {
	case faultEOF:
		return "truncated"
	case faultOverflow:
		return "varint longer than 10 bytes"
	case faultLength:
		return "length out of range"
	case faultFieldNum:
		return "invalid field number"
	case faultWireType:
		return "illegal wire type"
	case faultEndGroup:
		return "end-group tag without a start-group"
	case faultDepth:
		return "attribute values nested too deeply"
	}
	return "no fault"
}

// recursionLimit is pdata's proto.RecursionLimit: how deep KeyValue,
// AnyValue, ArrayValue and KeyValueList may nest.
const recursionLimit = 100

// The primitives below mirror go.opentelemetry.io/collector/pdata/internal/proto
// (ConsumeVarint, ConsumeTag, ConsumeLen, ConsumeUnknown) quirk for quirk,
// rather than using protowire, which is stricter in some places (10th varint
// byte, field numbers above 2^29) and laxer in others (groups with content).
// Accepting exactly what pdata accepts means raw bytes we forward always
// decode downstream.

// readVarint reads the varint at b[i:]; one byte is the common case.
func readVarint(b []byte, i int) (uint64, int, fault) {
	if i < len(b) && b[i] < 0x80 {
		return uint64(b[i]), i + 1, faultNone
	}
	return readVarintSlow(b, i)
}

// readVarintSlow is pdata's ConsumeVarint: at most 10 bytes, the bits past
// 64 dropped. The slow paths are kept out of line so that the fast ones stay
// short.
//
//go:noinline
func readVarintSlow(b []byte, i int) (uint64, int, fault) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, 0, faultOverflow
		}
		if i >= len(b) {
			return 0, 0, faultEOF
		}
		c := b[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, faultNone
		}
	}
}

// readTag reads a field tag; tags of fields 1 to 15 take one byte.
func readTag(b []byte, i int) (int32, int8, int, fault) {
	if i < len(b) && b[i] < 0x80 && b[i] >= 8 {
		return int32(b[i] >> 3), int8(b[i] & 7), i + 1, faultNone
	}
	return readTagSlow(b, i)
}

// readTagSlow truncates the field number to int32 as pdata does, so a tag
// pdata reads as a known field is read as that field here too.
//
//go:noinline
func readTagSlow(b []byte, i int) (int32, int8, int, fault) {
	v, i, f := readVarint(b, i)
	if f != faultNone {
		return 0, 0, 0, f
	}
	num := int32(v >> 3)
	if num <= 0 {
		return 0, 0, 0, faultFieldNum
	}
	return num, int8(v & 7), i, faultNone
}

// readLen reads a length prefix at b[i:] and returns the bounds of the
// value; lengths under 128 take one byte.
func readLen(b []byte, i int) (start, end int, f fault) {
	if i < len(b) && b[i] < 0x80 {
		if end = i + 1 + int(b[i]); end <= len(b) {
			return i + 1, end, faultNone
		}
	}
	return readLenSlow(b, i)
}

//go:noinline
func readLenSlow(b []byte, i int) (start, end int, f fault) {
	v, i, f := readVarint(b, i)
	if f != faultNone {
		return 0, 0, f
	}
	n := int(v)
	if n < 0 {
		return 0, 0, faultLength
	}
	end = i + n
	if end < 0 || end > len(b) {
		return 0, 0, faultEOF
	}
	return i, end, faultNone
}

func readFixed64(b []byte, i int) (uint64, int, fault) {
	if len(b)-i < 8 {
		return 0, 0, faultEOF
	}
	return binary.LittleEndian.Uint64(b[i:]), i + 8, faultNone
}

func readFixed32(b []byte, i int) (uint32, int, fault) {
	if len(b)-i < 4 {
		return 0, 0, faultEOF
	}
	return binary.LittleEndian.Uint32(b[i:]), i + 4, faultNone
}

// skipField skips the value of an unknown field whose tag was just read.
// It reproduces pdata's ConsumeUnknown exactly, including how it handles
// groups: only groups holding nothing but (nested) empty groups are skipped
// whole; for any other group pdata stops at the first inner field and later
// fails on the stray end-group tag, so such input is rejected both there and
// here. Groups are a proto2 feature no OTLP encoder emits.
func skipField(b []byte, i int, wt int8) (int, fault) {
	depth := 0
	for i < len(b) {
		var f fault
		switch wt {
		case wtVarint:
			_, i, f = readVarint(b, i)
			return i, f
		case wtI64:
			_, i, f = readFixed64(b, i)
			return i, f
		case wtLen:
			_, i, f = readLen(b, i)
			return i, f
		case wtStartGroup:
			depth++
		case wtEndGroup:
			if depth == 0 {
				return 0, faultEndGroup
			}
			depth--
		case wtI32:
			_, i, f = readFixed32(b, i)
			return i, f
		default:
			return 0, faultWireType
		}
		if depth == 0 {
			return i, faultNone
		}
		_, wt, i, f = readTag(b, i)
		if f != faultNone {
			return 0, f
		}
	}
	return 0, faultEOF
}

// sizeVarint is the encoded size of v.
func sizeVarint(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func appendVarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// field is one field as read off the wire.
type field struct {
	num  int32
	wt   int8
	v    uint64 // the value of a varint, fixed64 or fixed32 field
	s, e int    // the bounds of a length-delimited value
}

// readField reads the field that starts at b[i] (i < len(b)): its tag and
// its value, skipping groups, and returns where the next field starts. One
// call per field, with the one-byte tag and length cases handled inline,
// because calls, not bytes, are what a protobuf walk spends its time on.
func readField(b []byte, i int) (fl field, next int, f fault) {
	if c := b[i]; c < 0x80 && c >= 8 {
		fl.num, fl.wt = int32(c>>3), int8(c&7)
		i++
	} else if fl.num, fl.wt, i, f = readTagSlow(b, i); f != faultNone {
		return fl, 0, f
	}
	switch fl.wt {
	case wtLen:
		if i < len(b) && b[i] < 0x80 {
			if e := i + 1 + int(b[i]); e <= len(b) {
				fl.s, fl.e = i+1, e
				return fl, e, faultNone
			}
		}
		fl.s, fl.e, f = readLenSlow(b, i)
		return fl, fl.e, f
	case wtVarint:
		if i < len(b) && b[i] < 0x80 {
			fl.v = uint64(b[i])
			return fl, i + 1, faultNone
		}
		fl.v, i, f = readVarintSlow(b, i)
		return fl, i, f
	case wtI64:
		fl.v, i, f = readFixed64(b, i)
		return fl, i, f
	case wtI32:
		var v uint32
		v, i, f = readFixed32(b, i)
		fl.v = uint64(v)
		return fl, i, f
	}
	// Groups and illegal wire types. No OTLP field is a group, so a known
	// field with a group wire type fails its wire type check afterwards,
	// as it fails in pdata.
	i, f = skipField(b, i, fl.wt)
	return fl, i, f
}

// fieldDesc describes a field of a message: its name in the .proto (for
// errors) and its wire type.
type fieldDesc struct {
	name string // empty: not a field of the message
	wt   int8
}

// msgDesc is what Scan knows of a message's fields, numbered 1 to 16.
// Checking every known field's wire type is what pdata's generated code does
// field by field; a table does it in one place, including for the fields
// Scan only skips. The wire types are packed in a word so that the check,
// which runs for every field, is a shift and a compare.
type msgDesc struct {
	wire  uint64 // 4 bits per field from 1: its wire type + 1, 0 when unknown
	names [17]string
}

func newMsgDesc(fields map[int]fieldDesc) *msgDesc {
	d := &msgDesc{}
	for num, f := range fields {
		if num < 1 || num > 16 {
			panic("otlpwire: field number out of table range")
		}
		d.wire |= uint64(f.wt+1) << ((num - 1) * 4)
		d.names[num] = f.name
	}
	return d
}

// name is the name of field num, for errors.
func (d *msgDesc) name(num int32) string {
	switch {
	case num <= 0:
		return "tag"
	case num <= 16 && d.names[num] != "":
		return d.names[num]
	}
	return "unknown field"
}

// check fails when num is a field of d with a wire type other than wt.
func (d *msgDesc) check(num int32, wt int8, off int) *Error {
	if d.bad(num, wt) {
		return wireTypeErr(off, d.names[num], wt, int8(d.wire>>((num-1)*4))&0xf-1)
	}
	return nil
}

// bad reports whether num is a field of d with a wire type other than wt.
// It is check without the error, small enough to inline in the hot loop.
func (d *msgDesc) bad(num int32, wt int8) bool {
	n := uint32(num - 1)
	want := int8(d.wire>>(n*4)) & 0xf
	return n < 16 && want != 0 && want != wt+1
}

// Field tables of the messages in an ExportTraceServiceRequest, from the
// .proto files of go.opentelemetry.io/proto/otlp v1.11.1 and pdata v1.71's
// generated decoders (which also know ResourceSpans field 1000, KeyValue
// field 3 and AnyValue field 8).
var (
	requestDesc = newMsgDesc(map[int]fieldDesc{1: {"resource_spans", wtLen}})

	resourceSpansDesc = newMsgDesc(map[int]fieldDesc{1: {"resource", wtLen}, 2: {"scope_spans", wtLen}, 3: {"schema_url", wtLen}})

	resourceDesc = newMsgDesc(map[int]fieldDesc{1: {"attributes", wtLen}, 2: {"dropped_attributes_count", wtVarint}, 3: {"entity_refs", wtLen}})

	entityRefDesc = newMsgDesc(map[int]fieldDesc{1: {"schema_url", wtLen}, 2: {"type", wtLen}, 3: {"id_keys", wtLen}, 4: {"description_keys", wtLen}})

	scopeSpansDesc = newMsgDesc(map[int]fieldDesc{1: {"scope", wtLen}, 2: {"spans", wtLen}, 3: {"schema_url", wtLen}})

	scopeDesc = newMsgDesc(map[int]fieldDesc{1: {"name", wtLen}, 2: {"version", wtLen}, 3: {"attributes", wtLen}, 4: {"dropped_attributes_count", wtVarint}})

	spanDesc = newMsgDesc(map[int]fieldDesc{
		1:  {"trace_id", wtLen},
		2:  {"span_id", wtLen},
		3:  {"trace_state", wtLen},
		4:  {"parent_span_id", wtLen},
		5:  {"name", wtLen},
		6:  {"kind", wtVarint},
		7:  {"start_time_unix_nano", wtI64},
		8:  {"end_time_unix_nano", wtI64},
		9:  {"attributes", wtLen},
		10: {"dropped_attributes_count", wtVarint},
		11: {"events", wtLen},
		12: {"dropped_events_count", wtVarint},
		13: {"links", wtLen},
		14: {"dropped_links_count", wtVarint},
		15: {"status", wtLen},
		16: {"flags", wtI32},
	})

	statusDesc = newMsgDesc(map[int]fieldDesc{2: {"message", wtLen}, 3: {"code", wtVarint}})

	eventDesc = newMsgDesc(map[int]fieldDesc{1: {"time_unix_nano", wtI64}, 2: {"name", wtLen}, 3: {"attributes", wtLen}, 4: {"dropped_attributes_count", wtVarint}})

	linkDesc = newMsgDesc(map[int]fieldDesc{
		1: {"trace_id", wtLen},
		2: {"span_id", wtLen},
		3: {"trace_state", wtLen},
		4: {"attributes", wtLen},
		5: {"dropped_attributes_count", wtVarint},
		6: {"flags", wtI32},
	})

	keyValueDesc = newMsgDesc(map[int]fieldDesc{1: {"key", wtLen}, 2: {"value", wtLen}, 3: {"key_strindex", wtVarint}})

	anyValueDesc = newMsgDesc(map[int]fieldDesc{
		1: {"string_value", wtLen},
		2: {"bool_value", wtVarint},
		3: {"int_value", wtVarint},
		4: {"double_value", wtI64},
		5: {"array_value", wtLen},
		6: {"kvlist_value", wtLen},
		7: {"bytes_value", wtLen},
		8: {"string_value_strindex", wtVarint},
	})

	// ArrayValue and KeyValueList: field 1, values.
	valuesDesc = newMsgDesc(map[int]fieldDesc{1: {"values", wtLen}})
)

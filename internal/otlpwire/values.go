package otlpwire

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
)

// valueType is which member of the AnyValue oneof was set last, as
// pcommon.Value.Type would report it.
type valueType uint8

const (
	valEmpty valueType = iota // nothing set, or string_value_strindex (profiles only; pdata reports it as empty)
	valStr
	valBool
	valInt
	valDouble
	valBytes
	valArray
	valKvlist
)

// anyValue is an attribute value as read from the wire, without copying.
type anyValue struct {
	typ valueType
	raw []byte // string_value or bytes_value, aliasing the request
	num uint64 // bool_value (0/1), int_value (two's complement) or double_value (IEEE bits)
}

// keyValue is one attribute as read from the wire.
type keyValue struct {
	key []byte
	val anyValue
}

// parseKeyValue reads one KeyValue into kv. A message that repeats a field is
// merged the way protobuf (and pdata) merges: the last key wins, and a second
// value message updates the first one in place. The depth bound is pdata's,
// counted the same way, so that both reject the same nesting.
func parseKeyValue(b []byte, base, depth int, kv *keyValue) *Error {
	if depth == 0 && parseKeyValueFast(b, kv) {
		return nil
	}
	return parseKeyValueFields(b, base, depth, kv)
}

// parseKeyValueFields is parseKeyValue field by field, for any encoding.
func parseKeyValueFields(b []byte, base, depth int, kv *keyValue) *Error {
	if depth >= recursionLimit {
		return faultErr(base, "key_value", faultDepth)
	}
	depth++
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, keyValueDesc.name(fl.num), f)
		}
		if err := keyValueDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		switch fl.num {
		case 1:
			kv.key = b[fl.s:fl.e]
		case 2:
			if err := parseAnyValue(b[fl.s:fl.e], base+fl.s, depth, &kv.val); err != nil {
				return err.in("value", -1)
			}
		}
	}
	return nil
}

// parseKeyValueFast reads the common encoding of a KeyValue: exactly a key
// and a value, both shorter than 128 bytes, in either order (the OTel SDKs
// write fields in ascending order, pdata's marshaler, hence every Collector,
// in descending order), the value holding exactly one string, bool, int or
// double. It reports false, having decided nothing, for anything else, which
// parseKeyValue then reads field by field. Attributes are most of a span's
// fields, and matching their layout byte by byte avoids a call per field,
// the main cost of the walk.
func parseKeyValueFast(b []byte, kv *keyValue) bool {
	var key, v []byte
	i := 0
	for range 2 {
		if len(b)-i < 2 || b[i+1] >= 0x80 {
			return false
		}
		e := i + 2 + int(b[i+1])
		if e > len(b) {
			return false
		}
		switch b[i] {
		case 1<<3 | byte(wtLen):
			if key != nil {
				return false
			}
			key = b[i+2 : e]
		case 2<<3 | byte(wtLen):
			if v != nil {
				return false
			}
			v = b[i+2 : e]
		default:
			return false
		}
		i = e
	}
	if i != len(b) {
		return false
	}
	switch {
	case len(v) == 0:
		kv.val = anyValue{}
	case v[0] == 1<<3|byte(wtLen): // string_value
		if len(v) < 2 || v[1] >= 0x80 || 2+int(v[1]) != len(v) {
			return false
		}
		kv.val = anyValue{typ: valStr, raw: v[2:]}
	case v[0] == 3<<3|byte(wtVarint), v[0] == 2<<3|byte(wtVarint): // int_value, bool_value
		if len(v) < 2 || len(v) > 11 || v[len(v)-1] >= 0x80 {
			return false
		}
		var x uint64
		for j, c := range v[1:] {
			if j < len(v)-2 && c < 0x80 {
				return false // bytes after the end of the varint
			}
			x |= uint64(c&0x7f) << (7 * j)
		}
		if v[0] == 2<<3|byte(wtVarint) {
			kv.val = anyValue{typ: valBool}
			if x != 0 {
				kv.val.num = 1
			}
		} else {
			kv.val = anyValue{typ: valInt, num: x}
		}
	case v[0] == 4<<3|byte(wtI64): // double_value
		if len(v) != 9 {
			return false
		}
		kv.val = anyValue{typ: valDouble, num: binary.LittleEndian.Uint64(v[1:])}
	default:
		return false
	}
	kv.key = key
	return true
}

// parseAnyValue reads an AnyValue into v, merging with what v already holds:
// the last oneof member on the wire wins, as in pdata.
func parseAnyValue(b []byte, base, depth int, v *anyValue) *Error {
	if depth >= recursionLimit {
		return faultErr(base, "value", faultDepth)
	}
	depth++
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, anyValueDesc.name(fl.num), f)
		}
		if err := anyValueDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		switch fl.num {
		case 1:
			v.typ, v.raw = valStr, b[fl.s:fl.e]
		case 2:
			v.typ, v.num = valBool, 0
			if fl.v != 0 {
				v.num = 1
			}
		case 3:
			v.typ, v.num = valInt, fl.v
		case 4:
			v.typ, v.num = valDouble, fl.v
		case 5, 6:
			if err := parseValues(b[fl.s:fl.e], base+fl.s, depth, fl.num == 6); err != nil {
				return err.in(anyValueDesc.names[fl.num], -1)
			}
			v.typ = valArray
			if fl.num == 6 {
				v.typ = valKvlist
			}
		case 7:
			v.typ, v.raw = valBytes, b[fl.s:fl.e]
		case 8:
			v.typ = valEmpty
		}
	}
	return nil
}

// parseValues validates an ArrayValue (repeated AnyValue) or a
// KeyValueList (repeated KeyValue): nothing in them matters to the rules,
// but pdata rejects a request whose nested values are malformed.
func parseValues(b []byte, base, depth int, kvlist bool) *Error {
	if depth >= recursionLimit {
		name := "array_value"
		if kvlist {
			name = "kvlist_value"
		}
		return faultErr(base, name, faultDepth)
	}
	depth++
	n := 0
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, valuesDesc.name(fl.num), f)
		}
		if err := valuesDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		if fl.num != 1 {
			continue
		}
		var err *Error
		if kvlist {
			var kv keyValue
			err = parseKeyValueFields(b[fl.s:fl.e], base+fl.s, depth, &kv)
		} else {
			var v anyValue
			err = parseAnyValue(b[fl.s:fl.e], base+fl.s, depth, &v)
		}
		if err != nil {
			return err.in("values", n)
		}
		n++
	}
	return nil
}

// serviceNameKey is the resource attribute Resource.ServiceName reads.
const serviceNameKey = "service.name"

// appendAsString appends v as pcommon.Value.AsString renders it, for the
// scalar types, and reports false for arrays and maps (rendered as JSON by
// pdata; not worth a JSON encoder here for a service.name nobody sends).
// The store keys spans by that rendering, so a non-string service.name must
// route the same way here as after a full decode.
func appendAsString(dst []byte, v *anyValue) ([]byte, bool) {
	switch v.typ {
	case valEmpty:
		return dst, true
	case valStr:
		return append(dst, v.raw...), true
	case valBool:
		return strconv.AppendBool(dst, v.num != 0), true
	case valInt:
		return strconv.AppendInt(dst, int64(v.num), 10), true
	case valDouble:
		return appendFloatES6(dst, math.Float64frombits(v.num)), true
	case valBytes:
		return base64.StdEncoding.AppendEncode(dst, v.raw), true
	}
	return dst, false
}

// appendFloatES6 is pcommon's float64AsString: ES6 number-to-string, as most
// JSON generators do.
func appendFloatES6(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

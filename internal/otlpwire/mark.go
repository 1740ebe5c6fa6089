package otlpwire

import (
	"math"
	"slices"
	"strconv"
	"sync"
)

// MarkRule says which spans Scan marks (Span.Marked), decided in its one
// pass over the bytes, since it needs every attribute and event of every
// span. The sampler's timeout rule is one (internal/model, timeout.go). A
// span is marked when
//
//   - one of its attributes with a key of Values renders as one of that
//     key's values (as pcommon.Value.AsString renders a string, int, double
//     or bool), ASCII case-insensitively;
//   - one of its string attributes with a key of TextKeys contains one of
//     Words;
//   - an event named EventName has a string attribute with a key of
//     EventTextKeys that contains one of Words;
//   - its status message contains one of Words.
//
// Words are lowercase, compared ASCII case-insensitively. A rule must not
// change once handed to a Request.
type MarkRule struct {
	Values        []KeyValues
	TextKeys      []string
	EventName     string
	EventTextKeys []string
	Words         []string

	// Filled once by prepare: the lengths of the span's and the events'
	// keys (bit n: a key of n bytes), so that most attributes are passed
	// over in one test; Values' integers, compared without formatting; the
	// shortest word.
	once                sync.Once
	spanLens, eventLens uint64
	ints                [][]int64 // by Values index
	minWord             int
}

// prepare fills what the scan reads instead of the rule's fields, once.
func (m *MarkRule) prepare() {
	m.once.Do(func() {
		m.ints = make([][]int64, len(m.Values))
		for i, kv := range m.Values {
			m.spanLens |= lenBit(kv.Key)
			for _, v := range kv.Values {
				// Only a plain decimal renders back as itself.
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && strconv.FormatInt(n, 10) == v {
					m.ints[i] = append(m.ints[i], n)
				}
			}
		}
		m.minWord = math.MaxInt
		for _, w := range m.Words {
			m.minWord = min(m.minWord, len(w))
		}
		for _, k := range m.TextKeys {
			m.spanLens |= lenBit(k)
		}
		for _, k := range m.EventTextKeys {
			m.eventLens |= lenBit(k)
		}
	})
}

// lenBit is the bit of a key's length; keys of 63 bytes or more share one.
func lenBit(key string) uint64 { return 1 << min(len(key), 63) }

// mayMark reports whether key has the length of one of lens's keys: most
// attributes do not, and are passed over by this test alone.
func mayMark(lens uint64, key []byte) bool { return lens&(1<<min(len(key), 63)) != 0 }

// KeyValues is an attribute key and the values that mark a span.
type KeyValues struct {
	Key    string
	Values []string
}

// spanAttr reports whether a span attribute marks the span; the caller has
// checked its key's length (mayMark).
func (m *MarkRule) spanAttr(kv *keyValue) bool {
	for i := range m.Values {
		if string(kv.key) == m.Values[i].Key {
			return valueOneOf(&kv.val, m.Values[i].Values, m.ints[i])
		}
	}
	return kv.val.typ == valStr && keyIn(kv.key, m.TextKeys) && m.names(kv.val.raw)
}

// eventAttr reports whether an attribute of an event named EventName marks
// the span.
func (m *MarkRule) eventAttr(kv *keyValue) bool {
	return mayMark(m.eventLens, kv.key) && kv.val.typ == valStr && keyIn(kv.key, m.EventTextKeys) && m.names(kv.val.raw)
}

// names reports whether s contains one of m.Words.
func (m *MarkRule) names(s []byte) bool {
	if len(s) < m.minWord {
		return false
	}
	for _, w := range m.Words {
		if containsFoldASCII(s, w) {
			return true
		}
	}
	return false
}

func keyIn(key []byte, keys []string) bool {
	for _, k := range keys {
		if string(key) == k {
			return true
		}
	}
	return false
}

// valueOneOf reports whether v, rendered as pcommon.Value.AsString renders a
// scalar, is one of values (of which ints are the plain decimals), ASCII
// case-insensitively.
func valueOneOf(v *anyValue, values []string, ints []int64) bool {
	var buf [32]byte
	var s []byte
	switch v.typ {
	case valStr:
		s = v.raw
	case valInt:
		return slices.Contains(ints, int64(v.num))
	case valDouble:
		if f := math.Float64frombits(v.num); f == math.Trunc(f) && math.Abs(f) < 1e15 && !math.Signbit(f) {
			return slices.Contains(ints, int64(f)) // a whole double renders as its integer
		}
		s = appendFloatES6(buf[:0], math.Float64frombits(v.num))
	case valBool:
		s = strconv.AppendBool(buf[:0], v.num != 0)
	default:
		return false
	}
	for _, x := range values {
		if equalFoldASCII(s, x) {
			return true
		}
	}
	return false
}

// containsFoldASCII is bytes.Contains(bytes.ToLower(s), needle) for a
// lowercase ASCII needle, without allocating.
func containsFoldASCII(s []byte, needle string) bool {
	n := len(needle)
	if n == 0 {
		return true
	}
	for i := 0; i+n <= len(s); i++ {
		if lowerASCII(s[i]) != needle[0] {
			continue
		}
		j := 1
		for j < n && lowerASCII(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func equalFoldASCII(s []byte, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lowerASCII(s[i]) != lowerASCII(t[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

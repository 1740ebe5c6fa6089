package loki

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of arrays and objects, so that a hostile
// body cannot recurse without end.
const maxJSONDepth = 128

// jsonReader is a strict, minimal JSON pull reader over a byte slice. It
// exists because the two JSON formats of this receiver need what
// encoding/json does not give cheaply: member order (attributes keep the
// order of the line), the raw text of numbers and arrays (stored as
// written), and no reflection or intermediate values per member (a push
// request holds thousands of entries). It accepts exactly the documents
// encoding/json accepts, nested at most maxJSONDepth levels (see
// FuzzJSONReader); like encoding/json it keeps
// invalid UTF-8 in strings (the receiver replaces it later) and turns a
// lone surrogate escape into U+FFFD.
type jsonReader struct {
	b   []byte
	pos int
	// keyBuf and valBuf hold unescaped keys and string values: a key stays
	// valid while its value is read.
	keyBuf, valBuf, skipBuf []byte
}

// jsonSyntaxError is a document that is not JSON, or not the JSON expected.
type jsonSyntaxError struct {
	Offset int
	Msg    string
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte offset %d: %s", e.Offset, e.Msg)
}

func (r *jsonReader) reset(b []byte) {
	r.b, r.pos = b, 0
}

func (r *jsonReader) fail(msg string) error {
	return &jsonSyntaxError{Offset: r.pos, Msg: msg}
}

// unexpected reports the byte at the current position where want was
// expected.
func (r *jsonReader) unexpected(want string) error {
	if r.pos >= len(r.b) {
		return r.fail("unexpected end of input, want " + want)
	}
	return r.fail(fmt.Sprintf("unexpected %q, want %s", r.b[r.pos], want))
}

func (r *jsonReader) ws() {
	for r.pos < len(r.b) {
		switch r.b[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte, 0 at the end.
func (r *jsonReader) peek() byte {
	r.ws()
	if r.pos >= len(r.b) {
		return 0
	}
	return r.b[r.pos]
}

// atEnd reports whether only white space is left.
func (r *jsonReader) atEnd() bool {
	r.ws()
	return r.pos >= len(r.b)
}

func (r *jsonReader) consume(c byte, want string) error {
	if r.peek() != c {
		return r.unexpected(want)
	}
	r.pos++
	return nil
}

// more advances inside an object or array opened with '{' or '[': it
// consumes the closing byte and returns false, or consumes the ',' before a
// member that is not the first and returns true.
func (r *jsonReader) more(closing byte, first bool) (bool, error) {
	c := r.peek()
	if c == closing {
		r.pos++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, r.unexpected(fmt.Sprintf("',' or '%c'", closing))
		}
		r.pos++
	}
	return true, nil
}

// members calls member for each member of the object whose '{' has been
// read, with the member's key (valid until the next key is read) and the
// reader at the member's value, which member must read; then it reads the
// closing '}'.
func (r *jsonReader) members(member func(key []byte) error) error {
	for first := true; ; first = false {
		more, err := r.more('}', first)
		if err != nil || !more {
			return err
		}
		k, err := r.key()
		if err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
	}
}

// elements calls elem for each element of the array whose '[' has been read,
// with the reader at the element, which elem must read; then it reads the
// closing ']'.
func (r *jsonReader) elements(elem func() error) error {
	for first := true; ; first = false {
		more, err := r.more(']', first)
		if err != nil || !more {
			return err
		}
		if err := elem(); err != nil {
			return err
		}
	}
}

// key reads an object member's key and the ':' after it. The result is
// valid until the next call of key.
func (r *jsonReader) key() ([]byte, error) {
	k, err := r.str(&r.keyBuf)
	if err != nil {
		return nil, err
	}
	if err := r.consume(':', "':'"); err != nil {
		return nil, err
	}
	return k, nil
}

// strValue reads a string value; the result is valid until the next call.
func (r *jsonReader) strValue() ([]byte, error) {
	return r.str(&r.valBuf)
}

// str reads a string, unescaped: a slice of the input when it has no
// escapes, else of *buf.
func (r *jsonReader) str(buf *[]byte) ([]byte, error) {
	if r.peek() != '"' {
		return nil, r.unexpected("string")
	}
	r.pos++
	b := r.b
	start := r.pos
	for i := start; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			r.pos = i + 1
			return b[start:i], nil
		case c == '\\':
			return r.strEscaped(start, i, buf)
		case c < 0x20:
			r.pos = i
			return nil, r.fail("control character in string")
		}
	}
	r.pos = len(b)
	return nil, r.fail("unterminated string")
}

func (r *jsonReader) strEscaped(start, i int, buf *[]byte) ([]byte, error) {
	b := r.b
	out := append((*buf)[:0], b[start:i]...)
	defer func() { *buf = out[:0] }()
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			r.pos = i + 1
			return out, nil
		case c < 0x20:
			r.pos = i
			return nil, r.fail("control character in string")
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			break
		}
		switch e := b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			rn, ok := hex4(b, i+2)
			if !ok {
				r.pos = i
				return nil, r.fail(`invalid \u escape`)
			}
			i += 6
			if utf16.IsSurrogate(rn) {
				// A high surrogate followed by a low one is one character;
				// anything else is U+FFFD, as in encoding/json, and the
				// escape that follows is read on its own.
				lo, ok := rune(0), false
				if rn < 0xdc00 && i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					lo, ok = hex4(b, i+2)
				}
				if ok && lo >= 0xdc00 && lo < 0xe000 {
					rn = utf16.DecodeRune(rn, lo)
					i += 6
				} else {
					rn = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, rn)
			continue
		default:
			r.pos = i
			return nil, r.fail(fmt.Sprintf("invalid escape %q", "\\"+string(rune(e))))
		}
		i += 2
	}
	r.pos = len(b)
	return nil, r.fail("unterminated string")
}

// hex4 reads the 4 hex digits of a \u escape at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v rune
	for _, c := range b[i : i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(d)
	}
	return v, true
}

// number reads a number and returns its text.
func (r *jsonReader) number() ([]byte, error) {
	r.ws()
	b, i := r.b, r.pos
	start := i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		digits()
	default:
		r.pos = i
		return nil, r.unexpected("digit")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			r.pos = i
			return nil, r.unexpected("digit after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			r.pos = i
			return nil, r.unexpected("digit in exponent")
		}
	}
	r.pos = i
	return b[start:i], nil
}

func (r *jsonReader) literal(lit string) error {
	if len(r.b)-r.pos < len(lit) || string(r.b[r.pos:r.pos+len(lit)]) != lit {
		return r.unexpected(lit)
	}
	r.pos += len(lit)
	return nil
}

// skip reads and checks one value of any kind, at nesting depth depth.
func (r *jsonReader) skip(depth int) error {
	switch c := r.peek(); {
	case c == '{' || c == '[':
		if depth >= maxJSONDepth {
			return r.fail(fmt.Sprintf("nested deeper than %d levels", maxJSONDepth))
		}
		r.pos++
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		for first := true; ; first = false {
			more, err := r.more(closing, first)
			if err != nil || !more {
				return err
			}
			if c == '{' {
				if _, err := r.str(&r.skipBuf); err != nil {
					return err
				}
				if err := r.consume(':', "':'"); err != nil {
					return err
				}
			}
			if err := r.skip(depth + 1); err != nil {
				return err
			}
		}
	case c == '"':
		_, err := r.str(&r.skipBuf)
		return err
	case c == 't':
		return r.literal("true")
	case c == 'f':
		return r.literal("false")
	case c == 'n':
		return r.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := r.number()
		return err
	default:
		return r.unexpected("a JSON value")
	}
}

// raw reads one value of any kind and returns its text as written.
func (r *jsonReader) raw(depth int) ([]byte, error) {
	r.ws()
	start := r.pos
	if err := r.skip(depth); err != nil {
		return nil, err
	}
	return r.b[start:r.pos], nil
}

// validJSON reports whether b is exactly one JSON value, with white space
// around it at most.
func validJSON(r *jsonReader, b []byte) bool {
	r.reset(b)
	return r.skip(0) == nil && r.atEnd()
}

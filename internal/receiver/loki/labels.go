package loki

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// labelPair is a stream label or a structured-metadata pair.
type labelPair struct {
	name, value string
}

// parseLabels parses the text of a Prometheus label set, as Loki's
// protobuf push carries it ({job="varlogs", service_name="api"}), and
// appends its pairs to dst. Values are double-quoted with Go escapes (\"
// \\ \n \t \uXXXX …) or back-quoted (raw, as LogQL allows); names are
// identifiers or, as Prometheus 3 allows, double-quoted strings. A
// trailing comma is allowed. Empty text (or only blanks) is the empty set.
// Unescaped values are substrings of s: nothing is copied.
func parseLabels(s string, dst []labelPair) ([]labelPair, error) {
	i := skipBlanks(s, 0)
	if i == len(s) {
		return dst, nil
	}
	if s[i] != '{' {
		return dst, fmt.Errorf("label set must start with '{', got %q", excerpt(s[i:]))
	}
	i++
	for first := true; ; first = false {
		i = skipBlanks(s, i)
		if i < len(s) && s[i] == '}' {
			i++
			break
		}
		if !first {
			if i >= len(s) || s[i] != ',' {
				return dst, labelErr(s, i, "',' or '}'")
			}
			i = skipBlanks(s, i+1)
			if i < len(s) && s[i] == '}' { // trailing comma
				i++
				break
			}
		}
		var name, value string
		var err error
		if name, i, err = labelName(s, i); err != nil {
			return dst, err
		}
		i = skipBlanks(s, i)
		if i >= len(s) || s[i] != '=' {
			return dst, labelErr(s, i, "'=' after label name "+strconv.Quote(name))
		}
		i = skipBlanks(s, i+1)
		if value, i, err = quoted(s, i); err != nil {
			return dst, fmt.Errorf("value of label %q: %w", name, err)
		}
		dst = append(dst, labelPair{name: name, value: value})
	}
	if i = skipBlanks(s, i); i != len(s) {
		return dst, labelErr(s, i, "end of label set")
	}
	return dst, nil
}

func labelErr(s string, i int, want string) error {
	if i >= len(s) {
		return fmt.Errorf("label set ends early, want %s", want)
	}
	return fmt.Errorf("unexpected %q at byte offset %d of the label set, want %s", excerpt(s[i:]), i, want)
}

func skipBlanks(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// labelName reads a name: [A-Za-z_][A-Za-z0-9_.:-]* (a bit more than
// Prometheus allows unquoted, for the dotted names some clients send) or a
// double-quoted string.
func labelName(s string, i int) (string, int, error) {
	if i < len(s) && s[i] == '"' {
		name, j, err := quoted(s, i)
		if err != nil {
			return "", i, fmt.Errorf("quoted label name: %w", err)
		}
		if name == "" {
			return "", i, errors.New("empty label name")
		}
		return name, j, nil
	}
	j := i
	for j < len(s) {
		c := s[j]
		if c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') || (j > i && (c >= '0' && c <= '9' || c == '.' || c == ':' || c == '-')) {
			j++
			continue
		}
		break
	}
	if j == i {
		return "", i, labelErr(s, i, "a label name")
	}
	return s[i:j], j, nil
}

// quoted reads a double- or back-quoted string at s[i].
func quoted(s string, i int) (string, int, error) {
	if i >= len(s) || (s[i] != '"' && s[i] != '`') {
		return "", i, labelErr(s, i, "a quoted string")
	}
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case q:
			return s[i+1 : j], j + 1, nil
		case '\\':
			if q == '"' {
				return unquoteSlow(s, i, j)
			}
		}
	}
	return "", i, errors.New("unterminated quoted string")
}

// unquoteSlow decodes a double-quoted string with escapes; s[i] is the
// opening quote, s[j] the first backslash.
func unquoteSlow(s string, i, j int) (string, int, error) {
	buf := make([]byte, 0, j-i+16)
	buf = append(buf, s[i+1:j]...)
	rest := s[j:]
	for len(rest) > 0 {
		if rest[0] == '"' {
			return string(buf), len(s) - len(rest) + 1, nil
		}
		c, multibyte, tail, err := strconv.UnquoteChar(rest, '"')
		if err != nil {
			return "", i, fmt.Errorf("bad escape at byte offset %d: %q", len(s)-len(rest), excerpt(rest))
		}
		if c < utf8.RuneSelf || !multibyte {
			buf = append(buf, byte(c))
		} else {
			buf = utf8.AppendRune(buf, c)
		}
		rest = tail
	}
	return "", i, errors.New("unterminated quoted string")
}

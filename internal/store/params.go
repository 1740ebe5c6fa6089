package store

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var placeholderRe = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*):([A-Za-z0-9()]+)\}`)

// RenderParams replaces the `{name:Type}` placeholders of query with literals.
// It is for engines that cannot bind parameters themselves (chDB through its
// string API); a ClickHouse server binds the same placeholders server-side.
// Strings are quoted and escaped, so a value can never end its literal.
func RenderParams(query string, params Params) (string, error) {
	var firstErr error
	out := placeholderRe.ReplaceAllStringFunc(query, func(m string) string {
		sub := placeholderRe.FindStringSubmatch(m)
		name, typ := sub[1], sub[2]
		v, ok := params[name]
		if !ok {
			if firstErr == nil {
				firstErr = fmt.Errorf("query parameter %q has no value", name)
			}
			return m
		}
		lit, err := literal(v, typ)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("query parameter %q: %w", name, err)
		}
		return lit
	})
	return out, firstErr
}

func literal(v any, typ string) (string, error) {
	switch x := v.(type) {
	case string:
		if typ != "String" {
			return "", fmt.Errorf("string value for type %s", typ)
		}
		return quoteString(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	default:
		return "", fmt.Errorf("unsupported value type %T", v)
	}
}

// quoteString returns s as a ClickHouse string literal.
func quoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// ServerParams converts params to the string form a ClickHouse server binds.
func ServerParams(params Params) map[string]string {
	out := make(map[string]string, len(params))
	for k, v := range params {
		out[k] = fmt.Sprint(v)
	}
	return out
}

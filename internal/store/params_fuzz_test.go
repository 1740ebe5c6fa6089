package store

import (
	"errors"
	"strings"
	"testing"
)

// unquoteCH reads the ClickHouse string literal that starts s the way
// ClickHouse's lexer does, so that the test checks what the server would
// see rather than quoteString's own idea of it: a backslash escapes the
// next byte (\0 \a \b \e \f \n \r \t \v are control characters, \xHH a
// byte, any other \c is c) and a doubled quote is one quote. It returns
// the value and what follows the literal.
func unquoteCH(s string) (value, rest string, err error) {
	if !strings.HasPrefix(s, "'") {
		return "", s, errors.New("no opening quote")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), s[i+1:], nil
		case '\\':
			i++
			if i == len(s) {
				return "", "", errors.New("backslash at the end")
			}
			switch e := s[i]; e {
			case '0':
				b.WriteByte(0)
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'e':
				b.WriteByte(0x1b)
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'v':
				b.WriteByte('\v')
			case 'x':
				if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
					return "", "", errors.New(`bad \x escape`)
				}
				b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
				i += 2
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errors.New("unterminated literal")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func TestUnquoteCH(t *testing.T) {
	for in, want := range map[string]string{
		`''`: "", `'a''b'`: "a'b", `'\x41\n\q\\'`: "A\nq\\", `'\0\''`: "\x00'",
	} {
		got, rest, err := unquoteCH(in + " tail")
		if err != nil || got != want || rest != " tail" {
			t.Errorf("unquoteCH(%q) = %q, %q, %v; want %q", in, got, rest, err, want)
		}
	}
}

// FuzzRenderParams: whatever its bytes, a string value bound to a
// {name:String} placeholder renders as exactly one literal that ClickHouse
// reads back as the value, and placeholders written inside a value are not
// expanded. For any query template, rendering fails exactly when a
// placeholder has no value or is not typed String.
func FuzzRenderParams(f *testing.F) {
	f.Add("checkout", "GET /api/orders/{id}", "SELECT {v:String}")
	f.Add(`' OR 1=1 --`, `\'`, "x = {v:String} AND y = {w:Int64}")
	f.Add("a\x00b\\", "{v:String}", "{v:String}{v:String}")
	f.Add("\xff\n\t'", "{w:String}{v:String}", "no placeholders '{v:String' {1:String}")
	f.Add("", "''", "{v:Array(String)} {v:String}")
	f.Add(`\x41\n`, "\\", "{other:String}")
	f.Fuzz(func(t *testing.T, v, w, query string) {
		out, err := RenderParams("SELECT {v:String}, {w:String} FROM t WHERE x = {v:String}", Params{"v": v, "w": w})
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(out, "SELECT ")
		var got [3]string
		for i, sep := range []string{", ", " FROM t WHERE x = ", ""} {
			if !ok {
				t.Fatalf("%q: the text around the placeholders changed", out)
			}
			if got[i], rest, err = unquoteCH(rest); err != nil {
				t.Fatalf("%q: literal %d: %v", out, i, err)
			}
			rest, ok = strings.CutPrefix(rest, sep)
		}
		if !ok || rest != "" {
			t.Fatalf("%q: the text around the placeholders changed", out)
		}
		if got != [3]string{v, w, v} {
			t.Fatalf("%q reads back as %q, want %q", out, got, [3]string{v, w, v})
		}

		_, err = RenderParams(query, Params{"v": v})
		wantErr := false
		for _, m := range placeholderRe.FindAllStringSubmatch(query, -1) {
			wantErr = wantErr || m[1] != "v" || m[2] != "String"
		}
		if (err != nil) != wantErr {
			t.Fatalf("template %q: error %v, want one: %v", query, err, wantErr)
		}
	})
}

package loki

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var jsonSeeds = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `-0.5e+10`, `1E5`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`true`, `false`, `null`, `nul`, `truex`, `[1,]`, `{,}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{1:2}`,
	`[1 2]`, `{"a":[1,{"b":null}],"c":"d"}`, `"\u00e9\ud83d\ude00"`, `"\ud83d"`, `"\ud83d\u0041"`,
	`"\udc00"`, `"\uzzzz"`, `"\q"`, `"a` + "\n" + `b"`, `"tab` + "\t" + `"`, `"\/\b\f\n\r\t\"\\"`,
	` [ "x" , { "y" : [ ] } ] `, `{"a":1}{"b":2}`, "\"\xff\"", `"unterminated`, `"\`, `"\u12`,
	strings.Repeat("[", 200) + strings.Repeat("]", 200),
}

func TestJSONReaderValid(t *testing.T) {
	var r jsonReader
	for _, s := range jsonSeeds {
		got, want := validJSON(&r, []byte(s)), json.Valid([]byte(s))
		if strings.HasPrefix(s, "[[[[") {
			assert.False(t, got, "nesting is bounded")
			continue
		}
		assert.Equal(t, want, got, "%q", s)
	}
}

func TestJSONReaderStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`"\"q\" \\ \/ \b\f\n\r\t"`, "\"q\" \\ / \b\f\n\r\t"},
		{`"\u00e9\ud83d\ude00"`, "é😀"},
		{`"lone \ud83d high"`, "lone \uFFFD high"},
		{`"lone \udc00 low"`, "lone \uFFFD low"},
		{`"\ud83d\u0041"`, "\uFFFDA"},
	}
	var r jsonReader
	for _, tt := range tests {
		r.reset([]byte(tt.in))
		got, err := r.strValue()
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, string(got), tt.in)
	}

	r.reset([]byte(`{"k\u0031": "v\n", "k2": "x"}`))
	require.NoError(t, r.consume('{', "{"))
	more, err := r.more('}', true)
	require.NoError(t, err)
	require.True(t, more)
	k, err := r.key()
	require.NoError(t, err)
	v, err := r.strValue()
	require.NoError(t, err)
	assert.Equal(t, "k1", string(k), "a key stays valid while its value is read")
	assert.Equal(t, "v\n", string(v))
}

func TestJSONReaderErrors(t *testing.T) {
	var r jsonReader
	r.reset([]byte(`{"a": tru}`))
	err := r.skip(0)
	var se *jsonSyntaxError
	require.True(t, errors.As(err, &se))
	assert.Equal(t, 6, se.Offset)
	assert.EqualError(t, err, `invalid JSON at byte offset 6: unexpected 't', want true`)
}

// FuzzJSONReader: the reader accepts exactly what encoding/json accepts
// (up to its lower nesting bound), and decodes strings as it does.
func FuzzJSONReader(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r jsonReader
		r.reset(b)
		err := r.skip(0)
		got := err == nil && r.atEnd()
		want := json.Valid(b)
		if got != want {
			var se *jsonSyntaxError
			if want && errors.As(err, &se) && strings.Contains(se.Msg, "nested deeper") {
				return
			}
			t.Fatalf("valid: reader %v (%v), encoding/json %v, for %q", got, err, want, b)
		}
		if !want || !utf8.Valid(b) {
			return
		}
		if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '"' {
			return
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		r.reset(b)
		v, err := r.strValue()
		if err != nil || string(v) != s {
			t.Fatalf("string %q: reader %q (%v), encoding/json %q", b, v, err, s)
		}
	})
}

package otlpwire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

func TestScanMalformed(t *testing.T) {
	const spanPath = "resource_spans[0].scope_spans[0].spans[0]"
	const spanStart = 6 // three 2-byte headers: ResourceSpans, ScopeSpans, Span
	overlong := bytes.Repeat([]byte{0xff}, 11)
	tests := []struct {
		name   string
		req    []byte
		path   string
		field  string
		offset int
		reason string
	}{
		{"trace_id of 15 bytes", request(fBytes(1, tid[:15])), spanPath, "trace_id", spanStart, "is 15 bytes, want 16 or none"},
		{"trace_id of 17 bytes", request(fBytes(1, append(tid, 0))), spanPath, "trace_id", spanStart, "is 17 bytes, want 16 or none"},
		{"span_id of 9 bytes", request(fBytes(1, tid), fBytes(2, append(sid, 1))), spanPath, "span_id", spanStart + 18, "is 9 bytes, want 8 or none"},
		{"parent_span_id of 4 bytes", request(fBytes(4, sid[:4])), spanPath, "parent_span_id", spanStart, "is 4 bytes, want 8 or none"},
		{"link span_id of 1 byte", request(fBytes(1, tid), fMsg(13, fBytes(2, sid[:1]))), spanPath + ".links[0]", "span_id", spanStart + 18 + 2, "is 1 bytes, want 8 or none"},
		{"start time as a varint", request(fVarint(7, 5)), spanPath, "start_time_unix_nano", spanStart, "has wire type 0, want 1"},
		{"name as a varint", request(fBytes(1, tid), fVarint(5, 5)), spanPath, "name", spanStart + 18, "has wire type 0, want 2"},
		{"flags as fixed64", request(fFixed64(16, 1)), spanPath, "flags", spanStart, "has wire type 1, want 5"},
		{"status code as a string", request(fMsg(15, fStr(3, "x"))), spanPath + ".status", "code", spanStart + 2, "has wire type 2, want 0"},
		{"attribute value as varint", request(fMsg(9, fStr(1, "k"), fVarint(2, 1))), spanPath + ".attributes[0]", "value", spanStart + 2 + 3, "has wire type 0, want 2"},
		{"resource_spans as varint", fVarint(1, 1), "", "resource_spans", 0, "has wire type 0, want 2"},
		{"overlong varint tag", overlong, "", "tag", 0, "varint longer than 10 bytes"},
		{"overlong varint kind", request(append(tag(6, protowire.VarintType), overlong...)), spanPath, "kind", spanStart, "varint longer than 10 bytes"},
		{"varint cut short", request(append(tag(6, protowire.VarintType), 0x80)), spanPath, "kind", spanStart, "truncated"},
		{"length past the end", append(tag(1, protowire.BytesType), 50, 1, 2), "", "resource_spans", 0, "truncated"},
		{"negative length", append(tag(1, protowire.BytesType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "", "resource_spans", 0, "length out of range"},
		{"field number 0", []byte{0x02, 0x00}, "", "tag", 0, "invalid field number"},
		{"wire type 7", request(fBytes(1, tid), tag(99, 7), fBytes(2, sid)), spanPath, "unknown field", spanStart + 18, "illegal wire type"},
		{"stray end group", request(tag(99, protowire.EndGroupType), fBytes(1, tid)), spanPath, "unknown field", spanStart, "end-group tag without a start-group"},
		{"fixed64 cut short", request(append(tag(8, protowire.Fixed64Type), 1, 2, 3)), spanPath, "end_time_unix_nano", spanStart, "truncated"},
		{"event attribute truncated", request(fMsg(11, fMsg(3, fStr(1, "k"), []byte{0x12, 0x05, 0x0a}))), spanPath + ".events[0].attributes[0]", "value", spanStart + 4 + 3, "truncated"},
		{"scope name as varint", fMsg(1, fMsg(2, fMsg(1, fVarint(1, 1)))), "resource_spans[0].scope_spans[0].scope", "name", 6, "has wire type 0, want 2"},
		{"resource attribute key as fixed64", fMsg(1, fMsg(1, fMsg(1, fFixed64(1, 1)))), "resource_spans[0].resource.attributes[0]", "key", 6, "has wire type 1, want 2"},
		{"second span bad", fMsg(1, fMsg(2, fMsg(2, fBytes(1, tid)), fMsg(2, fBytes(1, tid[:1])))), "resource_spans[0].scope_spans[0].spans[1]", "trace_id", 2 + 2 + 2 + 18 + 2, "is 1 bytes, want 16 or none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scanAgainstPdata(t, tt.req)
			require.Error(t, err)
			var se *Error
			require.True(t, errors.As(err, &se), "%T", err)
			assert.Equal(t, tt.path, se.Path)
			assert.Equal(t, tt.field, se.Field)
			assert.Equal(t, tt.offset, se.Offset)
			assert.Equal(t, tt.reason, se.Reason)
			t.Log(err)
		})
	}
}

// Values nest (arrays in arrays, maps in maps); pdata stops at a depth of
// 100 and so must Scan, at the same level.
func TestScanNestingLimit(t *testing.T) {
	accepted := 0
	for levels := 40; levels <= 60; levels++ {
		v := fStr(1, "leaf")
		for range levels {
			if levels%2 == 0 {
				v = fMsg(5, fMsg(1, v)) // array_value { values { ... } }
			} else {
				v = fMsg(6, fMsg(1, fStr(1, "k"), fMsg(2, v))) // kvlist_value { values { key, value { ... } } }
			}
		}
		_, err := scanAgainstPdata(t, request(fBytes(1, tid), fMsg(9, fStr(1, "deep"), fMsg(2, v))))
		if err == nil {
			accepted++
		} else {
			assert.Contains(t, err.Error(), "nested too deeply")
		}
	}
	assert.Greater(t, accepted, 0)
	assert.Less(t, accepted, 21)
}

// Every prefix of a valid request must scan without panicking, and be
// accepted exactly when pdata accepts it.
func TestScanTruncated(t *testing.T) {
	req := marshal(t, richTraces(t))
	ok := 0
	for n := range len(req) {
		r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
		err := Scan(req[:n], &r)
		_, perr := decodePdata(req[:n])
		require.Equal(t, perr == nil, err == nil, "prefix %d: Scan: %v; pdata: %v", n, err, perr)
		if err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, ErrMalformed)
		}
	}
	t.Logf("%d of %d prefixes are valid requests", ok, len(req))
}

// Byte corruptions at every offset: a cheap, deterministic sweep of what
// FuzzScan explores at random.
func TestScanCorrupted(t *testing.T) {
	req := request(
		fBytes(1, tid), fBytes(2, sid), fBytes(4, sid), fStr(5, "op"), fVarint(6, 2),
		fFixed64(7, 1), fFixed64(8, 2),
		fMsg(9, fStr(1, "http.status_code"), fMsg(2, fVarint(3, 504))),
		fMsg(9, fStr(1, "arr"), fMsg(2, fMsg(5, fMsg(1, fStr(1, "x"))))),
		fMsg(11, fStr(2, "exception"), fMsg(3, fStr(1, "error.type"), fMsg(2, fStr(1, "Timeout")))),
		fMsg(13, fBytes(1, tid), fBytes(2, sid)),
		fMsg(15, fStr(2, "deadline"), fVarint(3, 2)),
	)
	req = cat(fMsg(1, fMsg(1, fMsg(1, fStr(1, "service.name"), fMsg(2, fStr(1, "svc"))))), req)
	for i := range req {
		for _, b := range []byte{0x00, 0x01, 0x07, 0x7f, 0x80, 0xff, req[i] ^ 0x08} {
			mutated := bytes.Clone(req)
			mutated[i] = b
			scanAgainstPdata(t, mutated) //nolint:errcheck // agreement is what is tested
		}
	}
}

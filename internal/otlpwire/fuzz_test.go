package otlpwire

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// FuzzScan: Scan never panics, accepts exactly what pdata (the Collector's
// receiver path) accepts, and when it accepts, everything it extracted
// agrees with pdata and AppendRequest of all spans decodes back to pdata's
// view of the input.
func FuzzScan(f *testing.F) {
	f.Add(marshal(f, richTraces(f)))
	f.Add(request(fBytes(1, tid), fBytes(2, sid), fMsg(15, fStr(2, "deadline"), fVarint(3, 2))))
	f.Add(request(fBytes(1, tid), fBytes(2, sid), fMsg(9, fStr(1, "http.status_code"), fMsg(2, fStr(1, "504")))))
	f.Add(request(fBytes(1, tid), fMsg(11, fStr(2, "exception"), fMsg(3, fStr(1, "error.type"), fMsg(2, fStr(1, "ETIMEDOUT"))))))
	f.Add(request(fBytes(1, tid), fMsg(9, fStr(1, "a"), fMsg(2, fMsg(5, fMsg(1, fMsg(6, fMsg(1, fStr(1, "b"))))))), fMsg(13, fBytes(1, tid))))
	f.Add(fMsg(1, fMsg(1000, fMsg(2, fBytes(1, tid))), fMsg(1, fMsg(1, fStr(1, "service.name"), fMsg(2, fVarint(3, 7)))), fStr(3, "s")))
	f.Add(request(tag(103, protowire.StartGroupType), tag(103, protowire.EndGroupType), fBytes(1, tid)))
	bench := benchRequest(f)
	f.Add(bench[:2000])

	f.Fuzz(func(t *testing.T, req []byte) {
		r := Request{HostKeys: testHostKeys, Mark: timeoutRule, ResourceKeys: testResourceKeys, SpanKeys: testSpanKeys}
		err := Scan(req, &r)
		td, perr := decodePdata(req)
		if (err == nil) != (perr == nil) {
			t.Fatalf("Scan: %v; pdata: %v", err, perr)
		}
		if err != nil {
			var se *Error
			require.True(t, errors.As(err, &se))
			require.ErrorIs(t, err, ErrMalformed)
			require.True(t, se.Offset >= 0 && se.Offset <= len(req), "offset %d of %d", se.Offset, len(req))
			return
		}
		checkAgainstPdata(t, td, &r)
	})
}

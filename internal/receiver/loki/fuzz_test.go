package loki

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/golang/snappy"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/encoding/protowire"
)

// Fuzz targets of the receiver's parsers. Those of the decoders take a
// max_line_bytes of 1 to 256 from the fuzzer, so that short inputs reach
// the truncation paths, and check what must hold for any body: no panic,
// every record has a string body, every text is valid UTF-8 (the receiver
// promises to replace bad bytes), the batch statistics agree with the
// records, and a decoder reused from the pool decodes as a fresh one does.

func fuzzMaxLine(m uint8) int { return 1 + int(m) }

// decodeFn decodes one request body into ld with d.
type decodeFn func(d *decoder, body []byte, ld plog.Logs) error

// decodeChecked decodes body twice with one decoder, as the receiver's pool
// reuses them, and fails when the second run differs from the first in
// error, records or statistics. It returns the decoder (holding the second
// run's statistics), the logs and the error.
func decodeChecked(t *testing.T, maxLine int, body []byte, decode decodeFn) (*decoder, plog.Logs, error) {
	t.Helper()
	d := newDecoder(maxLine)
	run := func() (plog.Logs, []byte, error) {
		d.reset(testNowTS)
		ld := plog.NewLogs()
		err := decode(d, body, ld)
		pb, merr := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
		if merr != nil {
			t.Fatalf("marshaling the decoded logs: %v", merr)
		}
		return ld, pb, err
	}
	_, pb1, err1 := run()
	stats1 := d.stats
	ld, pb2, err2 := run()
	if errString(err1) != errString(err2) {
		t.Fatalf("reused decoder: error %v, fresh one %v", err2, err1)
	}
	if !bytes.Equal(pb1, pb2) {
		t.Fatalf("reused decoder: other records than a fresh one")
	}
	if d.stats != stats1 {
		t.Fatalf("reused decoder: statistics %+v, fresh one %+v", d.stats, stats1)
	}
	return d, ld, err2
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkDecoded checks the records and statistics of a decoded request and
// returns the number of records. Attribute keys must not be empty unless
// emptyKeys (the JSON formats can write "" as a key).
func checkDecoded(t *testing.T, d *decoder, ld plog.Logs, emptyKeys bool) int {
	t.Helper()
	checkMap := func(what string, m pcommon.Map) {
		for k, v := range m.All() {
			if k == "" && !emptyKeys {
				t.Fatalf("%s: empty key", what)
			}
			if !utf8.ValidString(k) {
				t.Fatalf("%s: key %q is not valid UTF-8", what, k)
			}
			if v.Type() != pcommon.ValueTypeStr || !utf8.ValidString(v.Str()) {
				t.Fatalf("%s %q: value %q is not a valid UTF-8 string", what, k, v.AsString())
			}
		}
	}
	n := 0
	for _, rl := range ld.ResourceLogs().All() {
		checkMap("resource attribute", rl.Resource().Attributes())
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				n++
				if lr.Body().Type() != pcommon.ValueTypeStr {
					t.Fatalf("record %d: body of type %s, want a string", n, lr.Body().Type())
				}
				if !utf8.ValidString(lr.Body().Str()) || !utf8.ValidString(lr.SeverityText()) {
					t.Fatalf("record %d: body %q or severity %q not valid UTF-8", n, lr.Body().Str(), lr.SeverityText())
				}
				if lr.Timestamp() == 0 || lr.ObservedTimestamp() != testNowTS {
					t.Fatalf("record %d: timestamp %d, observed %d", n, lr.Timestamp(), lr.ObservedTimestamp())
				}
				checkMap("record attribute", lr.Attributes())
			}
		}
	}
	st := &d.stats
	if st.truncated > int64(n) || st.invalidRecords > int64(n) {
		t.Fatalf("%d records, but %d truncated and %d invalid", n, st.truncated, st.invalidRecords)
	}
	var sum int64
	for r, c := range st.invalid {
		if c > st.invalidRecords {
			t.Fatalf("%d records invalid for %s, but %d invalid records", c, reasonNames[r], st.invalidRecords)
		}
		sum += c
	}
	if sum < st.invalidRecords {
		t.Fatalf("%d invalid records, but only %d reasons counted", st.invalidRecords, sum)
	}
	for _, ex := range st.examples {
		if !utf8.ValidString(ex) {
			t.Fatalf("warning excerpt %q is not valid UTF-8", ex)
		}
	}
	if len(d.flags) != 0 {
		t.Fatalf("%d record flags left uncounted", len(d.flags))
	}
	return n
}

// ---- protobuf push

// pushShape counts the streams and entries of a PushRequest with a plain
// protowire walk of its two outer levels, the oracle for the decoder's
// record count; ok is false when those levels are not well-formed.
func pushShape(b []byte) (streams, entries int, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, false
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return 0, 0, false
		}
		stream := b[:n]
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			continue
		}
		streams++
		stream, _ = protowire.ConsumeBytes(stream)
		for len(stream) > 0 {
			num, typ, n := protowire.ConsumeTag(stream)
			if n < 0 {
				return 0, 0, false
			}
			stream = stream[n:]
			if n = protowire.ConsumeFieldValue(num, typ, stream); n < 0 {
				return 0, 0, false
			}
			stream = stream[n:]
			if num == 2 && typ == protowire.BytesType {
				entries++
			}
		}
	}
	return streams, entries, true
}

func decodeProto(d *decoder, body []byte, ld plog.Logs) error { return d.decodePushProto(body, ld) }

// checkProto decodes raw as an uncompressed PushRequest and checks it.
func checkProto(t *testing.T, maxLine int, raw []byte) {
	t.Helper()
	d, ld, err := decodeChecked(t, maxLine, raw, decodeProto)
	if err != nil {
		var pe *protoError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v is not a protoError", err)
		}
		return
	}
	n := checkDecoded(t, d, ld, false)
	streams, entries, ok := pushShape(raw)
	if !ok || streams != ld.ResourceLogs().Len() || entries != n {
		t.Fatalf("decoded %d streams and %d records; the wire holds %d and %d (well-formed: %v)",
			ld.ResourceLogs().Len(), n, streams, entries, ok)
	}
	// As the handler does before delivering: no stream without records
	// stays, and no record goes.
	dropEmptyStreams(ld)
	for _, rl := range ld.ResourceLogs().All() {
		if rl.ScopeLogs().At(0).LogRecords().Len() == 0 {
			t.Fatalf("a stream without records is left")
		}
	}
	if ld.LogRecordCount() != n {
		t.Fatalf("dropEmptyStreams dropped records: %d of %d left", ld.LogRecordCount(), n)
	}
}

// badStreamPush is a PushRequest whose one stream holds a good entry
// (flagged: its line is not valid UTF-8) and then one cut short, so that
// decoding fails after a record of the stream was made.
func badStreamPush() []byte {
	s := protowire.AppendTag(nil, 1, protowire.BytesType)
	s = protowire.AppendString(s, `{a="b"}`)
	s = appendPBEntry(s, pbEntry{secs: 1, line: "ok \xff"})
	s = protowire.AppendTag(s, 2, protowire.BytesType)
	s = protowire.AppendBytes(s, []byte{0x0a, 0x05}) // a Timestamp of 5 bytes, none there
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), s)
}

var pushProtoSeeds = [][]byte{
	pbPush(pushStreams...),
	pbPush(pbStream{labels: `{job="varlogs", filename="/var/log/syslog"}`, entries: []pbEntry{
		{secs: 1700000000, line: "Jan  1 00:00:00 host sshd[42]: Accepted publickey for ann"},
		{noTS: true, line: "no timestamp"},
		{secs: -1, line: "before the epoch"},
		{secs: 1700000000, nanos: -5, line: "negative nanos"},
	}}),
	pbPush(pbStream{labels: `{"service.name"="api", level=` + "`warn`" + `, msg="a \"quoted\" \u00e9 \\ value",}`, entries: []pbEntry{
		{secs: 1700000000, line: "line with metadata", meta: [][2]string{{"trace_id", traceHex}, {"", "no name"}, {"level", "error"}}},
	}}),
	pbPush(pbStream{labels: `{job="x" broken`, entries: []pbEntry{{secs: 1, line: "bad labels"}}}),
	pbPush(pbStream{labels: "{level=\"warn\xff\"}", entries: []pbEntry{
		{secs: 1, line: "a level label that is not valid UTF-8"},
		{secs: 2, line: "and metadata", meta: [][2]string{{"level", "\xfeerror"}}},
	}}),
	pbPush(pbStream{labels: "{job=\"\xff\"}", entries: []pbEntry{{secs: 1, line: "bad \xff utf-8 " + strings.Repeat("long ", 60)}}}),
	pbPush(pbStream{labels: `{job="empty"}`}, pbStream{labels: ``, entries: []pbEntry{{secs: 2, line: ""}}}),
	badStreamPush(),
	// A good stream first: a decoder that keeps the failed stream's flags
	// counts them with it when reused.
	append(pbPush(pbStream{labels: `{a="b"}`, entries: []pbEntry{{secs: 1, line: "clean"}}}), badStreamPush()...),
	protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 7),
	{},
}

// FuzzDecodePushProto: a protobuf push body, taken both as an uncompressed
// PushRequest and as a snappy block (the handler's path).
func FuzzDecodePushProto(f *testing.F) {
	for i, s := range pushProtoSeeds {
		f.Add(s, uint8(255))
		f.Add(snappy.Encode(nil, s), uint8(i*16))
	}
	r := &lokiReceiver{maxBodySize: 1 << 16}
	f.Fuzz(func(t *testing.T, body []byte, maxLine uint8) {
		ml := fuzzMaxLine(maxLine)
		checkProto(t, ml, body)

		buf, raw, tooLarge, err := r.unsnappy(body)
		if err != nil || tooLarge {
			return
		}
		defer r.putSnappy(buf)
		if want, err := snappy.Decode(nil, body); err != nil || !bytes.Equal(raw, want) {
			t.Fatalf("unsnappy: %q, snappy.Decode %q (%v)", raw, want, err)
		}
		checkProto(t, ml, raw)
	})
}

// TestDecoderReuseAfterError: a request that fails inside a stream, after
// some of its records were decoded, must not leave their flags to be
// counted with the next request the pooled decoder serves (the reuse
// check of FuzzDecodePushProto and FuzzDecodePushJSON fails on it).
func TestDecoderReuseAfterError(t *testing.T) {
	bad := badStreamPush()
	good := pbPush(pbStream{labels: `{a="b"}`, entries: []pbEntry{{secs: 1, line: "clean"}}})
	for _, tt := range []struct {
		name      string
		bad, good []byte
		decode    decodeFn
	}{
		{"protobuf", bad, good, decodeProto},
		{"json", []byte("{\"streams\":[{\"stream\":{\"a\":\"b\"},\"values\":[[\"1\",\"ok \xff\"],[\"1\",\"x\",{\"k\":}]]}]}"),
			[]byte(`{"streams":[{"stream":{"a":"b"},"values":[["1","clean"]]}]}`), decodeJSONPush},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecoder(defaultMaxLineBytes)
			d.reset(testNowTS)
			if err := tt.decode(d, tt.bad, plog.NewLogs()); err == nil {
				t.Fatal("the bad request decoded")
			}
			d.reset(testNowTS)
			ld := plog.NewLogs()
			if err := tt.decode(d, tt.good, ld); err != nil {
				t.Fatal(err)
			}
			if n := checkDecoded(t, d, ld, false); n != 1 {
				t.Fatalf("%d records, want 1", n)
			}
			if d.stats != (batchStats{}) {
				t.Fatalf("a clean request after a bad one: statistics %+v", d.stats)
			}
		})
	}
}

// ---- JSON push

func decodeJSONPush(d *decoder, body []byte, ld plog.Logs) error { return d.decodePushJSON(body, ld) }

// FuzzDecodePushJSON: a Loki JSON push body.
func FuzzDecodePushJSON(f *testing.F) {
	for i, s := range []string{
		pushJSON,
		`{"streams":[{"labels":"{job=\"legacy\", level=\"info\"}","entries":[{"ts":"2026-05-01T10:00:00Z","line":"legacy entry"},{"line":"no ts"}]}]}`,
		`{"streams":[{"stream":{"job":"x","n":1,"o":{"a":null}},"values":[["1700000000000000000","l",{"level":"warn","":"empty key"}],"not an entry",[],["x"],[1700000000,{"a":1}]]}]}`,
		`{"streams":[{"stream":"oops","values":[["1","\ud83d\ude00 \udc00 \u0000"]]},{"stream":null,"values":null}],"other":[1,2]}`,
		"{\"streams\":[{\"stream\":{\"\xff\":\"\xfe\"},\"values\":[[\"1\",\"\xff\xff line\"]]}]}",
		`{"streams":[]} {}`,
		`{"streams":[{"stream":{"a":"b"},"values":[["1","x"]]},{"stream":{"a":"b"},"values":[["yesterday","x"],["2",`,
	} {
		f.Add([]byte(s), uint8(i*40))
	}
	f.Fuzz(func(t *testing.T, body []byte, maxLine uint8) {
		d, ld, err := decodeChecked(t, fuzzMaxLine(maxLine), body, decodeJSONPush)
		if err != nil {
			var se *jsonSyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a jsonSyntaxError", err)
			}
			return
		}
		if !json.Valid(body) && !deeplyNested(body) {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		checkDecoded(t, d, ld, bytes.Contains(body, []byte(`""`)))
	})
}

// deeplyNested tells, roughly, whether b may nest deeper than the reader's
// bound (where it and encoding/json part ways).
func deeplyNested(b []byte) bool {
	return bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) >= maxJSONDepth
}

// ---- lines: NDJSON and plain text

// decodeLines decodes a lines body as the handler does, into one stream.
func decodeLines(ndjson bool) decodeFn {
	return func(d *decoder, body []byte, ld plog.Logs) error {
		lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		if ndjson {
			d.decodeNDJSON(body, lrs)
		} else {
			d.decodePlain(body, lrs)
		}
		return nil
	}
}

// FuzzDecodeNDJSON: an NDJSON lines body, its objects flattened into
// attributes.
func FuzzDecodeNDJSON(f *testing.F) {
	for i, s := range []string{
		`{"time":"2026-05-01T10:00:00.123456789Z","level":"warn","message":"m1","traceId":"` + traceHex + `","spanId":"00f067aa0ba902b7","user":{"id":42,"name":"ann","tags":["a", "b"]},"ok":true,"nothing":null,"ratio":1.50,"empty":{}}`,
		`{"timestamp":1700000000,"severity":"ERROR","msg":"m2","trace_id":"bad","span_id":"00f067aa0ba902b7"}` + "\n" +
			`{"ts":1700000000123,"lvl":"debug","log":"m3\n","trace":{"id":"463ac35c9f6413ad"},"span":{"id":"b7ad6b7169203331"}}` + "\r\n" +
			"not json at all\n[1,2]\n\n" + `{"msg": "broken",`,
		`{"ts":"1700000000123456789","level":30,"msg":"pino","MSG":"second message key","a":{"b":{"c":{"d":"deep"}}}}`,
		"[\n {\"msg\": \"a\"},\n \"str\",\n {\"msg\": \"b\", \"n\": [1, {\"x\": 2}]}\n]\n",
		"{\n  \"msg\": \"one object over lines\",\n  \"level\": \"info\"\n}\n",
		`{"@timestamp":"2026-05-01 10:00:00+02:00","@l":"Information","@m":"serilog","":"empty key","a":{"":1}}`,
		"{\"\xff\":\"\xfe\",\"msg\":\"bad \xff bytes\",\"k\\u00e9\\ud83d\":\"\\ud83d\\ude00\"}",
		`{"time":1e9,"ts":-1,"timestamp":"yesterday","span_id":"00f067aa0ba902b7","x":` + strings.Repeat("1", 300) + `}`,
	} {
		f.Add([]byte(s), uint8(i*32+31))
	}
	f.Fuzz(func(t *testing.T, body []byte, maxLine uint8) {
		d, ld, _ := decodeChecked(t, fuzzMaxLine(maxLine), body, decodeLines(true))
		n := checkDecoded(t, d, ld, bytes.Contains(body, []byte(`""`)))
		if utf8.Valid(body) && d.stats.invalid[reasonInvalidUTF8] != 0 {
			t.Fatalf("valid UTF-8 in, %d records flagged invalid_utf8", d.stats.invalid[reasonInvalidUTF8])
		}
		// One line holding one JSON object is one record, read as JSON.
		if trimmed := bytes.TrimSpace(body); bytes.IndexByte(body, '\n') < 0 && len(trimmed) > 0 && trimmed[0] == '{' &&
			json.Valid(body) && !deeplyNested(body) {
			if n != 1 || d.stats.invalid[reasonNotJSON] != 0 {
				t.Fatalf("a JSON object line gave %d records, %d not JSON", n, d.stats.invalid[reasonNotJSON])
			}
		}
	})
}

// FuzzDecodePlain: a plain-text lines body, stack traces joined.
func FuzzDecodePlain(f *testing.F) {
	for i, s := range []string{
		"2026-05-01 10:00:00 INFO started\n\n  \t\nGET /health 200\r\n",
		"ERROR request failed\njava.lang.IllegalStateException: boom\n\tat com.x.Y.run(Y.java:10)\n\t... 12 more\nCaused by: java.io.IOException: gone\n    at com.x.Z\nnext record\n",
		"TypeError: x is undefined\n    at f (/app/a.js:1:2)\n    at g (/app/b.js:3:4)\n",
		"bad \xff byte\n\tat continuation\n" + strings.Repeat("x", 300) + "\nend",
		"\r\n\r\r\n\t",
	} {
		f.Add([]byte(s), uint8(i*60))
	}
	f.Fuzz(func(t *testing.T, body []byte, maxLine uint8) {
		ml := fuzzMaxLine(maxLine)
		d, ld, _ := decodeChecked(t, ml, body, decodeLines(false))
		checkDecoded(t, d, ld, false)
		var got []string
		for _, lr := range ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().All() {
			got = append(got, strings.Split(lr.Body().Str(), "\n")...)
		}
		// Every non-blank line comes out, in order, and nothing else: when
		// no line needs cutting or repairing, the records' lines are the
		// body's.
		var want []string
		fits := utf8.Valid(body)
		for _, line := range strings.Split(string(body), "\n") {
			line = strings.TrimSuffix(line, "\r")
			if strings.Trim(line, " \t\r\f\v") == "" {
				continue
			}
			fits = fits && len(line) <= ml
			want = append(want, line)
		}
		if !fits {
			return
		}
		if !slices.Equal(got, want) {
			t.Fatalf("lines %q, want %q", got, want)
		}
		if d.stats != (batchStats{}) {
			t.Fatalf("statistics %+v for lines that needed no change", d.stats)
		}
	})
}

// ---- label sets

// bareLabelName reports whether the parser reads name unquoted.
func bareLabelName(name string) bool {
	for i := range len(name) {
		c := name[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '.' || c == ':' || c == '-')) {
			return false
		}
	}
	return name != ""
}

// renderLabels writes pairs in a canonical form: names bare where the
// parser allows it, else quoted like the values, with Go's escapes.
func renderLabels(pairs []labelPair) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range pairs {
		if i > 0 {
			b.WriteString(", ")
		}
		if bareLabelName(p.name) {
			b.WriteString(p.name)
		} else {
			b.WriteString(strconv.Quote(p.name))
		}
		b.WriteByte('=')
		b.WriteString(strconv.Quote(p.value))
	}
	b.WriteByte('}')
	return b.String()
}

// FuzzParseLabels: the text of a stream's label set. What the parser
// accepts, written again in canonical form, parses to the same pairs.
func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{
		`{job="varlogs", service_name="api"}`,
		` { job = "a" , } `,
		`{}`, ``, `  `,
		"{level=`raw \\n value`, \"service.name\"=\"api\"}",
		`{msg="tab\t \"q\" \\ \u00e9 \U0001F600 \x41 \101", host.name="n-1", a:b-c="x"}`,
		`{"quoted \"name\""="v", "é"="ü"}`,
		`{job="x" broken`, `{="v"}`, `{""="v"}`, `{a=}`, `{a="\q"}`, `{a="unterminated`, `job="no braces"`,
		"{a=\"\xff\", b=\"\\n\xff\"}",
		`{a="1"}{b="2"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		keep := labelPair{"keep", "me"}
		got, err := parseLabels(s, []labelPair{keep})
		if len(got) == 0 || got[0] != keep {
			t.Fatalf("the pairs already in dst were lost: %q", got)
		}
		if err != nil {
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("error %q is not valid UTF-8", err)
			}
			return
		}
		pairs := got[1:]
		for _, p := range pairs {
			if p.name == "" {
				t.Fatalf("accepted an empty label name in %q", s)
			}
		}
		text := renderLabels(pairs)
		again, err := parseLabels(text, nil)
		if err != nil {
			t.Fatalf("%q parsed as %q, rendered as %q, which does not parse: %v", s, pairs, text, err)
		}
		if !slices.Equal(again, pairs) {
			t.Fatalf("%q parsed as %q, rendered as %q, parsed again as %q", s, pairs, text, again)
		}
	})
}

// TestInvalidUTF8Repaired: the places where the fuzz targets found invalid
// UTF-8 let through: NDJSON keys, and a severity text taken from a label or
// metadata value.
func TestInvalidUTF8Repaired(t *testing.T) {
	d := newDecoder(defaultMaxLineBytes)
	d.reset(testNowTS)
	lrs := plog.NewLogRecordSlice()
	d.decodeNDJSON([]byte("{\"k\xff\":1,\"level\":\"warn\xfe\",\"a\":{\"\\u00e9\xff\":true}}"), lrs)
	if lrs.Len() != 1 {
		t.Fatalf("%d records, want 1", lrs.Len())
	}
	lr := lrs.At(0)
	want := map[string]any{"k\uFFFD": "1", "a.\u00e9\uFFFD": "true"}
	if got := lr.Attributes().AsRaw(); !maps.Equal(got, want) {
		t.Errorf("attributes %q, want %q", got, want)
	}
	if lr.SeverityText() != "warn\uFFFD" {
		t.Errorf("severity text %q", lr.SeverityText())
	}
	if d.stats.invalid[reasonInvalidUTF8] != 1 {
		t.Errorf("%d records counted invalid_utf8, want 1", d.stats.invalid[reasonInvalidUTF8])
	}

	d.reset(testNowTS)
	ld := plog.NewLogs()
	err := d.decodePushProto(pbPush(pbStream{labels: "{level=\"warn\xff\"}", entries: []pbEntry{
		{secs: 1, line: "stream level"},
		{secs: 2, line: "metadata level", meta: [][2]string{{"level", "\xfeerror"}}},
	}}), ld)
	if err != nil {
		t.Fatal(err)
	}
	lrs = ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	if a, b := lrs.At(0).SeverityText(), lrs.At(1).SeverityText(); a != "warn\uFFFD" || b != "\uFFFDerror" {
		t.Errorf("severity texts %q and %q", a, b)
	}
}

// TestPushLegacyEntryShapes: a legacy entry without a string line is a
// record with a string body all the same, counted as a bad entry, as in
// the current format (FuzzDecodePushJSON found records without a body; its
// input is in testdata/fuzz/FuzzDecodePushJSON).
func TestPushLegacyEntryShapes(t *testing.T) {
	d := newDecoder(defaultMaxLineBytes)
	d.reset(testNowTS)
	ld := plog.NewLogs()
	body := `{"streams":[{"labels":"{job=\"old\"}","entries":[{}, {"ts":"2023-11-14T22:13:20Z","line":{"a": 1}}, {"line":null}]}]}`
	if err := d.decodePushJSON([]byte(body), ld); err != nil {
		t.Fatal(err)
	}
	if n := checkDecoded(t, d, ld, false); n != 3 {
		t.Fatalf("%d records, want 3", n)
	}
	var bodies []string
	for _, lr := range ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().All() {
		bodies = append(bodies, lr.Body().Str())
	}
	if want := []string{"", `{"a": 1}`, ""}; !slices.Equal(bodies, want) {
		t.Errorf("bodies %q, want %q", bodies, want)
	}
	if bad, ts := d.stats.invalid[reasonBadEntry], d.stats.invalid[reasonBadTimestamp]; bad != 3 || ts != 2 {
		t.Errorf("%d bad entries, %d bad timestamps; want 3 and 2", bad, ts)
	}
}

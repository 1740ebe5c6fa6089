package logsprocessor

import (
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

const (
	tid     = "4bf92f3577b34da6a3ce929d0e0e4736"
	sid     = "00f067aa0ba902b7"
	tid2    = "0af7651916cd43dd8448eb211c80319c"
	sid2    = "b7ad6b7169203331"
	tid64   = "463ac35c9f6413ad" // a 64-bit B3 trace id
	zeroTID = "00000000000000000000000000000000"
	zeroSID = "0000000000000000"
)

type recordSpec struct {
	traceID, spanID string // record fields, hex
	attrs           map[string]any
	body            any // string, or map[string]any for a map body
}

func newRecord(t testing.TB, s recordSpec) plog.LogRecord {
	t.Helper()
	lr := plog.NewLogRecord()
	if s.traceID != "" {
		var id pcommon.TraceID
		_, err := hex.Decode(id[:], []byte(s.traceID))
		require.NoError(t, err)
		lr.SetTraceID(id)
	}
	if s.spanID != "" {
		var id pcommon.SpanID
		_, err := hex.Decode(id[:], []byte(s.spanID))
		require.NoError(t, err)
		lr.SetSpanID(id)
	}
	require.NoError(t, lr.Attributes().FromRaw(s.attrs))
	switch b := s.body.(type) {
	case nil:
	case string:
		lr.Body().SetStr(b)
	case map[string]any:
		require.NoError(t, lr.Body().SetEmptyMap().FromRaw(b))
	default:
		t.Fatalf("unsupported body %T", b)
	}
	return lr
}

// idString renders an id the way the query API does; "" for the empty id.
func idString(b []byte) string {
	for _, c := range b {
		if c != 0 {
			return hex.EncodeToString(b)
		}
	}
	return ""
}

func TestLinkLogRecord(t *testing.T) {
	tests := []struct {
		name        string
		rec         recordSpec
		linker      Linker
		wantSource  string
		wantTrace   string
		wantSpan    string
		wantInvalid bool
	}{
		// The three sources.
		{
			name:       "record ids",
			rec:        recordSpec{traceID: tid, spanID: sid},
			wantSource: SourceRecord, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "record trace id without span id",
			rec:        recordSpec{traceID: tid, attrs: map[string]any{"spanId": sid2}},
			wantSource: SourceRecord, wantTrace: tid,
		},
		{
			name:       "attributes",
			rec:        recordSpec{attrs: map[string]any{"traceId": tid, "spanId": sid}},
			wantSource: SourceAttributes, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "body logback line",
			rec:        recordSpec{body: "2026-11-30 10:00:00.123 [http-nio-8080-exec-1] ERROR c.e.OrderService traceId=" + tid + " spanId=" + sid + " - payment failed"},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "body JSON line",
			rec:        recordSpec{body: `{"@timestamp":"2026-11-30T10:00:00.123Z","level":"ERROR","message":"x","traceId":"` + tid + `","spanId":"` + sid + `"}`},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},

		// Precedence.
		{
			name: "record beats attributes and body",
			rec: recordSpec{traceID: tid, spanID: sid, attrs: map[string]any{"traceId": tid2, "spanId": sid2},
				body: "traceId=" + tid2 + " spanId=" + sid2},
			wantSource: SourceRecord, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "attributes beat body",
			rec:        recordSpec{attrs: map[string]any{"trace_id": tid, "span_id": sid}, body: "traceId=" + tid2 + " spanId=" + sid2},
			wantSource: SourceAttributes, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "all-zero record trace id counts as absent",
			rec:        recordSpec{traceID: zeroTID, spanID: sid2, attrs: map[string]any{"traceId": tid, "spanId": sid}},
			wantSource: SourceAttributes, wantTrace: tid, wantSpan: sid,
		},
		{
			// A record span id alone cannot be trusted to belong to the trace
			// found elsewhere, so it is replaced.
			name:       "record span id without trace id is replaced",
			rec:        recordSpec{spanID: sid2, attrs: map[string]any{"traceId": tid}},
			wantSource: SourceAttributes, wantTrace: tid,
		},

		// Id forms.
		{
			name:       "64-bit trace id padded (attributes)",
			rec:        recordSpec{attrs: map[string]any{"X-B3-TraceId": tid64, "X-B3-SpanId": sid}},
			wantSource: SourceAttributes, wantTrace: "0000000000000000" + tid64, wantSpan: sid,
		},
		{
			name:       "64-bit trace id padded (body)",
			rec:        recordSpec{body: "traceId=" + tid64 + " spanId=" + sid},
			wantSource: SourceBody, wantTrace: "0000000000000000" + tid64, wantSpan: sid,
		},
		{
			name:       "upper case normalised",
			rec:        recordSpec{attrs: map[string]any{"traceId": strings.ToUpper(tid), "spanId": strings.ToUpper(sid)}},
			wantSource: SourceAttributes, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "upper case key and value in body",
			rec:        recordSpec{body: "TRACEID=" + strings.ToUpper(tid) + " SPAN_ID=" + strings.ToUpper(sid)},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "attribute value with blanks",
			rec:        recordSpec{attrs: map[string]any{"traceId": " " + tid + "\n"}},
			wantSource: SourceAttributes, wantTrace: tid,
		},

		// Invalid ids.
		{
			name:       "malformed attribute falls back to body",
			rec:        recordSpec{attrs: map[string]any{"traceId": "xyz"}, body: "traceId=" + tid + " spanId=" + sid},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
			wantInvalid: true,
		},
		{
			name:        "malformed attribute, nothing else",
			rec:         recordSpec{attrs: map[string]any{"traceId": "xyz"}, body: "payment failed"},
			wantInvalid: true,
		},
		{
			name:        "all-zero attribute trace id",
			rec:         recordSpec{attrs: map[string]any{"traceId": zeroTID, "spanId": sid}},
			wantInvalid: true,
		},
		{
			name:       "all-zero span id: trace linked, span not",
			rec:        recordSpec{attrs: map[string]any{"traceId": tid, "spanId": zeroSID}},
			wantSource: SourceAttributes, wantTrace: tid,
			wantInvalid: true,
		},
		{
			name:        "all-zero body ids",
			rec:         recordSpec{body: "traceId=" + zeroTID + " spanId=" + zeroSID},
			wantInvalid: true,
		},
		{
			name:        "33 hex digits is not a truncatable id",
			rec:         recordSpec{body: "traceId=" + tid + "a spanId=" + sid},
			wantInvalid: true,
		},
		{
			name:        "24 hex digits",
			rec:         recordSpec{attrs: map[string]any{"trace_id": tid[:24]}},
			wantInvalid: true,
		},
		{
			name:        "decimal datadog id",
			rec:         recordSpec{body: "dd.trace_id=1234567890123456789 dd.span_id=987654321"},
			wantInvalid: true,
		},
		{
			name:       "later valid body id after a malformed one",
			rec:        recordSpec{body: "trace_id=nope retry traceId=" + tid},
			wantSource: SourceBody, wantTrace: tid,
			wantInvalid: true,
		},
		{
			// Logback prints an empty value for MDC keys outside a request;
			// that is the normal unlinked case, not a malformed id.
			name: "empty MDC values are absent, not invalid",
			rec:  recordSpec{body: "10:00:00.123 INFO [main] traceId= spanId= - started in 2.1s"},
		},
		{
			name: "placeholders are absent, not invalid",
			rec:  recordSpec{attrs: map[string]any{"traceId": "-", "spanId": "null"}, body: `{"traceId":null,"trace_id":"NULL"}`},
		},
		{
			name: "non-string attribute ignored",
			rec:  recordSpec{attrs: map[string]any{"traceId": int64(42)}},
		},

		// Span id rules.
		{
			name: "span id without trace id links nothing (attributes)",
			rec:  recordSpec{attrs: map[string]any{"spanId": sid}},
		},
		{
			name: "span id without trace id links nothing (body)",
			rec:  recordSpec{body: "spanId=" + sid + " done"},
		},
		{
			name:       "span id is not borrowed from another source",
			rec:        recordSpec{attrs: map[string]any{"traceId": tid}, body: "spanId=" + sid},
			wantSource: SourceAttributes, wantTrace: tid,
		},
		{
			name:       "parent span id is not the span id (attributes)",
			rec:        recordSpec{attrs: map[string]any{"trace_id": tid, "parent_span_id": sid2}},
			wantSource: SourceAttributes, wantTrace: tid,
		},
		{
			name:       "parent span id is not the span id (body)",
			rec:        recordSpec{body: "traceId=" + tid + " parentSpanId=" + sid2 + " spanId=" + sid},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},

		// Realistic layouts.
		{
			name:       "log4j2 bracketed MDC",
			rec:        recordSpec{body: "2026-11-30T10:00:00,123 ERROR [order-service,traceId=" + tid + ",spanId=" + sid + "] OrderService: payment failed"},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "logback %X map",
			rec:        recordSpec{body: "10:00:00.123 WARN  {spanId=" + sid + ", traceId=" + tid + "} retrying"},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "ECS style key",
			rec:        recordSpec{body: "trace.id: " + tid + " span.id: " + sid + " message: boom"},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "JSON with spaces",
			rec:        recordSpec{body: `{ "trace_id" : "` + tid + `", "span_id" : "` + sid + `" }`},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "JSON escaped in a string",
			rec:        recordSpec{body: `forwarded: "{\"traceId\":\"` + tid + `\",\"spanId\":\"` + sid + `\"}"`},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "B3 header echoed in a line",
			rec:        recordSpec{body: "headers X-B3-TraceId: " + tid + "; X-B3-SpanId: " + sid},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "id in a URL query",
			rec:        recordSpec{body: "GET /orders?traceId=" + tid + "&spanId=" + sid + " 200"},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},
		{
			name:       "id followed by a colon",
			rec:        recordSpec{body: "traceId=" + tid + ": payment failed"},
			wantSource: SourceBody, wantTrace: tid,
		},
		{
			name: "empty value before the next key",
			rec:  recordSpec{body: "trace.id: span.id: trace_id=spanId=" + sid},
		},
		{
			name: "no key, no link",
			rec:  recordSpec{body: "payment " + tid + " failed at 10:00:00 user=42 id=" + sid},
		},
		{
			name: "similar keys are not ids",
			rec:  recordSpec{body: "traceIdentifier=" + tid + " tracing=" + tid + " trace=" + tid},
		},
		{
			name:       "map body",
			rec:        recordSpec{body: map[string]any{"message": "x", "otel.trace_id": tid, "otel.span_id": sid}},
			wantSource: SourceBody, wantTrace: tid, wantSpan: sid,
		},

		// Attribute key variants.
		{name: "key trace_id", rec: recordSpec{attrs: map[string]any{"trace_id": tid}}, wantSource: SourceAttributes, wantTrace: tid},
		{name: "key traceID", rec: recordSpec{attrs: map[string]any{"traceID": tid}}, wantSource: SourceAttributes, wantTrace: tid},
		{name: "key trace.id", rec: recordSpec{attrs: map[string]any{"trace.id": tid}}, wantSource: SourceAttributes, wantTrace: tid},
		{name: "key TraceId", rec: recordSpec{attrs: map[string]any{"TraceId": tid}}, wantSource: SourceAttributes, wantTrace: tid},
		{name: "key mdc.traceId", rec: recordSpec{attrs: map[string]any{"mdc.traceId": tid, "mdc.spanId": sid}}, wantSource: SourceAttributes, wantTrace: tid, wantSpan: sid},
		{name: "key otel.trace_id", rec: recordSpec{attrs: map[string]any{"otel.trace_id": tid, "otel.span_id": sid}}, wantSource: SourceAttributes, wantTrace: tid, wantSpan: sid},
		{name: "key traceparent is not an id", rec: recordSpec{attrs: map[string]any{"traceparent": tid}}},

		// Switches.
		{
			name:       "attributes switched off",
			rec:        recordSpec{attrs: map[string]any{"traceId": tid}, body: "traceId=" + tid2},
			linker:     Linker{NoAttributes: true},
			wantSource: SourceBody, wantTrace: tid2,
		},
		{
			name:   "body switched off",
			rec:    recordSpec{body: "traceId=" + tid2},
			linker: Linker{NoBody: true},
		},
		{
			name:       "record still used with everything off",
			rec:        recordSpec{traceID: tid},
			linker:     Linker{NoAttributes: true, NoBody: true},
			wantSource: SourceRecord, wantTrace: tid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := newRecord(t, tt.rec)
			var res LinkResult
			if tt.linker == (Linker{}) {
				res = LinkLogRecord(lr)
			} else {
				res = tt.linker.Link(lr)
			}
			assert.Equal(t, tt.wantSource, res.Source, "source")
			assert.Equal(t, tt.wantInvalid, res.InvalidID, "invalid id (key %q, value %q)", res.InvalidKey, res.InvalidValue)
			if res.InvalidID {
				assert.NotEmpty(t, res.InvalidKey)
			}
			tr, sp := lr.TraceID(), lr.SpanID()
			if tt.wantSource == "" && tt.rec.spanID == "" {
				assert.True(t, tr.IsEmpty() && sp.IsEmpty(), "unlinked record must stay untouched")
				return
			}
			assert.Equal(t, tt.wantTrace, idString(tr[:]), "trace id")
			assert.Equal(t, tt.wantSpan, idString(sp[:]), "span id")
		})
	}
}

func TestInvalidIDReportsKeyAndValue(t *testing.T) {
	res := LinkLogRecord(newRecord(t, recordSpec{attrs: map[string]any{"mdc.traceId": "xyz"}}))
	assert.Equal(t, LinkResult{InvalidID: true, InvalidKey: "mdc.traceId", InvalidValue: "xyz"}, res)

	res = LinkLogRecord(newRecord(t, recordSpec{body: "ERROR [x] otel.trace_id=12345 boom"}))
	assert.Equal(t, LinkResult{InvalidID: true, InvalidKey: "otel.trace_id", InvalidValue: "12345"}, res)

	res = LinkLogRecord(newRecord(t, recordSpec{body: `{"msg":"x", "mdc.span_id" : "00f067aa"}`}))
	assert.Equal(t, LinkResult{InvalidID: true, InvalidKey: "mdc.span_id", InvalidValue: "00f067aa"}, res)
}

func TestClassifyKey(t *testing.T) {
	for key, want := range map[string]keyKind{
		"traceId": keyTrace, "trace_id": keyTrace, "traceID": keyTrace, "trace.id": keyTrace,
		"TraceId": keyTrace, "mdc.traceId": keyTrace, "otel.trace_id": keyTrace, "X-B3-TraceId": keyTrace,
		"TRACE-ID": keyTrace, "traceid": keyTrace,
		"spanId": keySpan, "span_id": keySpan, "mdc.spanId": keySpan, "otel.span_id": keySpan, "span.id": keySpan,
		"parentSpanId": keyNone, "parent_span_id": keyNone, "x.parent.span.id": keyNone,
		"": keyNone, "id": keyNone, "trace": keyNone, "traceparent": keyNone, "traceIdx": keyNone,
		"spanid2": keyNone, "pan_id": keyNone, "ace_id": keyNone,
	} {
		assert.Equal(t, want, classifyKey(key), key)
	}
}

var hexRE = regexp.MustCompile(`^[0-9a-f]+$`)

func FuzzLinkBody(f *testing.F) {
	for _, s := range []string{
		"2026-11-30 10:00:00.123 [http-nio-8080-exec-1] ERROR c.e.OrderService traceId=" + tid + " spanId=" + sid + " - payment failed",
		`{"@timestamp":"2026-11-30T10:00:00.123Z","message":"x","traceId":"` + tid + `","spanId":"` + sid + `"}`,
		`forwarded: "{\"traceId\":\"` + tid + `\"}"`,
		"trace.id: " + tid64 + " span.id: " + sid,
		"traceId= spanId= parentSpanId=" + sid,
		"traceId=" + zeroTID, "trace_id=xyz", "TRACE_ID='", "id:", ":", "=", "spanid=\\", "traceId=\\\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m := scanText(s)
		if m.trace != "" {
			if len(m.trace) != 32 && len(m.trace) != 16 {
				t.Fatalf("trace %q has length %d", m.trace, len(m.trace))
			}
			if !hexRE.MatchString(strings.ToLower(m.trace)) || !strings.Contains(s, m.trace) {
				t.Fatalf("trace %q is not hex from the input", m.trace)
			}
		}
		if m.span != "" && (len(m.span) != 16 || !hexRE.MatchString(strings.ToLower(m.span))) {
			t.Fatalf("span %q is not 16 hex digits", m.span)
		}

		lr := plog.NewLogRecord()
		lr.Body().SetStr(s)
		res := LinkLogRecord(lr)
		tr, sp := lr.TraceID(), lr.SpanID()
		switch res.Source {
		case SourceBody:
			if got := tr.String(); len(got) != 32 || !hexRE.MatchString(got) || tr.IsEmpty() {
				t.Fatalf("linked trace id %q is not 32 lowercase hex digits", got)
			}
			if got := hex.EncodeToString(tr[:]); !strings.Contains(strings.ToLower(s), strings.TrimPrefix(got, "0000000000000000")) {
				t.Fatalf("linked trace id %s does not come from the input", got)
			}
			if !sp.IsEmpty() {
				if got := sp.String(); len(got) != 16 || !hexRE.MatchString(got) {
					t.Fatalf("linked span id %q is not 16 lowercase hex digits", got)
				}
			}
		case "":
			if !tr.IsEmpty() || !sp.IsEmpty() {
				t.Fatalf("unlinked record got ids %s/%s", tr, sp)
			}
		default:
			t.Fatalf("unexpected source %q", res.Source)
		}
	})
}

var (
	benchLogback = "2026-11-30 10:00:00.123 [http-nio-8080-exec-1] ERROR c.e.OrderService traceId=" + tid +
		" spanId=" + sid + " - payment failed: upstream inventory-service answered 503 after 3 retries (2.1s)"
	benchJSON = `{"@timestamp":"2026-11-30T10:00:00.123Z","level":"ERROR","logger":"c.e.OrderService",` +
		`"thread":"http-nio-8080-exec-1","message":"payment failed","traceId":"` + tid + `","spanId":"` + sid + `"}`
	benchNoID = "2026-11-30 10:00:00.123 [main] INFO  o.s.b.w.e.tomcat.TomcatWebServer - Tomcat started on port(s): " +
		"8080 (http) with context path '' user=admin elapsed=2131ms heap=512MiB threads=42 pool=HikariPool-1"
)

// bodyRE is what the scanner would be as a regexp; kept for the comparison
// benchmark only.
var bodyRE = regexp.MustCompile(`(?i)(parent[_.-]?)?(trace|span)[_.-]?id\\?["']?[ \t]*[=:][ \t]*(?:\\"|["'])?([0-9a-z_-]*)`)

func scanTextRegexp(s string) idMatch {
	var m idMatch
	for _, sm := range bodyRE.FindAllStringSubmatchIndex(s, -1) {
		if sm[2] >= 0 {
			continue // parent span id
		}
		kind := keyTrace
		if lower(s[sm[4]]) == 's' {
			kind = keySpan
		}
		if m.consider(kind, s[sm[0]:sm[1]], s[sm[6]:sm[7]]) {
			break
		}
	}
	return m
}

func TestScanTextRegexpAgrees(t *testing.T) {
	for _, s := range []string{benchLogback, benchJSON, benchNoID} {
		a, b := scanText(s), scanTextRegexp(s)
		assert.Equal(t, a.trace, b.trace, s)
		assert.Equal(t, a.span, b.span, s)
	}
}

func BenchmarkScanText(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"logback", benchLogback}, {"json", benchJSON}, {"no_id", benchNoID},
	} {
		b.Run("scanner/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.line)))
			for b.Loop() {
				scanText(bc.line)
			}
		})
		b.Run("regexp/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.line)))
			for b.Loop() {
				scanTextRegexp(bc.line)
			}
		})
	}
}

func BenchmarkLinkLogRecord(b *testing.B) {
	for _, bc := range []struct {
		name string
		rec  recordSpec
	}{
		{"record", recordSpec{traceID: tid, spanID: sid, body: benchLogback}},
		{"attributes", recordSpec{attrs: map[string]any{"thread": "main", "logger": "c.e.OrderService", "traceId": tid, "spanId": sid}}},
		{"body_logback", recordSpec{attrs: map[string]any{"thread": "main", "logger": "c.e.OrderService"}, body: benchLogback}},
		{"body_json", recordSpec{body: benchJSON}},
		{"unlinked", recordSpec{attrs: map[string]any{"thread": "main", "logger": "c.e.OrderService"}, body: benchNoID}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lr := newRecord(b, bc.rec)
			b.ReportAllocs()
			for b.Loop() {
				// Reset so every iteration links from scratch, not from the record.
				if bc.rec.traceID == "" {
					lr.SetTraceID(pcommon.TraceID{})
				}
				LinkLogRecord(lr)
			}
		})
	}
}

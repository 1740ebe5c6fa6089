package loki

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

func TestParseTime(t *testing.T) {
	const sec = 1700000000
	tests := []struct {
		in     string
		number bool // a JSON number, else a JSON string
		want   pcommon.Timestamp
		ok     bool
	}{
		{"1700000000", true, sec * 1e9, true},
		{"1700000000.25", true, sec*1e9 + 25e7, true},
		{"1700000000123", true, sec*1e9 + 123e6, true},
		{"1700000000123.5", true, sec*1e9 + 123e6 + 5e5, true},
		{"1700000000123456", true, sec*1e9 + 123456e3, true},
		{"1700000000123456789", true, sec*1e9 + 123456789, true},
		{"1.7e9", true, sec * 1e9, true},
		{"1.7e12", true, sec * 1e9, true},
		{"0", true, 0, false},
		{"-1700000000", true, 0, false},
		{"99999999999999999999", true, 0, false},
		{"2026-05-01T10:00:00Z", false, pcommon.NewTimestampFromTime(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)), true},
		{"2026-05-01T10:00:00.5+02:00", false, pcommon.NewTimestampFromTime(time.Date(2026, 5, 1, 8, 0, 0, 5e8, time.UTC)), true},
		{"2026-05-01 10:00:00Z", false, pcommon.NewTimestampFromTime(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)), true},
		{" 1700000000 ", false, sec * 1e9, true},
		{"1700000000.5", false, sec*1e9 + 5e8, true},
		{"2026-05-01", false, 0, false},
		{"2026-13-01T10:00:00Z", false, 0, false},
		{"1969-12-31T23:59:59Z", false, 0, false},
		{"yesterday", false, 0, false},
		{"17000000001x", false, 0, false},
		{"", false, 0, false},
	}
	for _, tt := range tests {
		var got pcommon.Timestamp
		var ok bool
		if tt.number {
			got, ok = parseTimeNumber(tt.in)
		} else {
			got, ok = parseTimeString(tt.in)
		}
		assert.Equal(t, tt.ok, ok, "%q", tt.in)
		if tt.ok {
			assert.Equal(t, tt.want, got, "%q: %v", tt.in, got.AsTime())
		}
	}

	for in, want := range map[string]bool{"1": true, "9223372036854775807": true, "9223372036854775808": false,
		"0": false, "": false, "-1": false, "1.5": false, "12345678901234567890": false} {
		_, ok := parseUnixNanos([]byte(in))
		assert.Equal(t, want, ok, "%q", in)
	}
}

func TestSeverity(t *testing.T) {
	tests := []struct {
		in       string
		wantText string
		wantNum  plog.SeverityNumber
	}{
		{"trace", "trace", plog.SeverityNumberTrace},
		{"DEBUG", "DEBUG", plog.SeverityNumberDebug},
		{"Info", "Info", plog.SeverityNumberInfo},
		{"warn", "warn", plog.SeverityNumberWarn},
		{"WARNING", "WARNING", plog.SeverityNumberWarn},
		{"error", "error", plog.SeverityNumberError},
		{"err", "err", plog.SeverityNumberError},
		{"fatal", "fatal", plog.SeverityNumberFatal},
		{"CRITICAL", "CRITICAL", plog.SeverityNumberFatal},
		{" info ", "info", plog.SeverityNumberInfo},
		{"verbose", "verbose", 0},
		{"unknown", "", 0}, // Loki's detected_level when it found none
		{"", "", 0},
		{strings.Repeat("x", 40), strings.Repeat("x", 40), 0},
	}
	for _, tt := range tests {
		lr := plog.NewLogRecord()
		setSeverity(lr, tt.in)
		assert.Equal(t, tt.wantText, lr.SeverityText(), "%q", tt.in)
		assert.Equal(t, tt.wantNum, lr.SeverityNumber(), "%q", tt.in)
	}
}

func TestText(t *testing.T) {
	d := newDecoder(8)
	tests := []struct {
		in, want  string
		wantFlags recFlags
	}{
		{"short", "short", 0},
		{"exactly8", "exactly8", 0},
		{"123456789", "12345678…[truncated 1 bytes]", flagTruncated},
		{"1234567€", "1234567…[truncated 3 bytes]", flagTruncated}, // € is 3 bytes: cut before it
		{"ab\xffcd", "ab\uFFFDcd", flagOf(reasonInvalidUTF8)},
		{"\xff\xff\xff\xff\xff\xff\xff\xffxyz", "\uFFFD…[truncated 3 bytes]", flagTruncated | flagOf(reasonInvalidUTF8)},
	}
	for _, tt := range tests {
		var f recFlags
		assert.Equal(t, tt.want, d.text([]byte(tt.in), &f), "%q", tt.in)
		assert.Equal(t, tt.wantFlags, f, "%q", tt.in)
	}
}

func TestHostOf(t *testing.T) {
	assert.Equal(t, "10.0.0.7", hostOf("10.0.0.7:9100"))
	assert.Equal(t, "::1", hostOf("[::1]:9100"))
	assert.Equal(t, "node-1", hostOf("node-1"))
	assert.Equal(t, "fe80::1", hostOf("fe80::1"))
}

func TestIsContinuation(t *testing.T) {
	for line, want := range map[string]bool{
		"\tat com.x.Y(Y.java:1)":  true,
		"    at com.x.Y":          true,
		"  ... 5 more":            true,
		"\t... 5 more":            true,
		"Caused by: x.Y: boom":    true,
		"  Caused by: x.Y":        true,
		"\tanything after a tab":  true,
		"at the start":            false,
		"  indented text":         false,
		"...":                     false,
		"":                        false,
		"2026-05-01 INFO started": false,
	} {
		assert.Equal(t, want, isContinuation([]byte(line)), "%q", line)
	}
	for line, want := range map[string]bool{
		"java.lang.IllegalStateException: boom": true,
		"java.lang.OutOfMemoryError":            true,
		"com.x.Outer$InnerException: m":         true,
		"Exception: no package":                 false,
		"ERROR com.x.FooException: logged":      false,
		"com.x.Foo: not an exception":           false,
	} {
		assert.Equal(t, want, isExceptionHeader([]byte(line)), "%q", line)
	}
}

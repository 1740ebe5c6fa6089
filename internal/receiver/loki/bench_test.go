package loki

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tracesift/tracesift/internal/testutil"

	"github.com/golang/snappy"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
)

// benchLines is the size of the benchmark requests, in log lines.
const benchLines = 1000

// benchStreams is a push of benchLines lines as Promtail ships them: 10
// streams (labels job, service_name, host, level) of 100 entries, logfmt
// lines of about 150 bytes, half of them with a trace_id as structured
// metadata.
func benchStreams() []pbStream {
	const perStream = benchLines / 10
	streams := make([]pbStream, 10)
	levels := []string{"info", "warn", "error", "debug"}
	for s := range streams {
		streams[s].labels = fmt.Sprintf(`{job="varlogs", service_name="svc-%d", host="node-%d", level=%q}`,
			s, s%3, levels[s%len(levels)])
		for i := range perStream {
			e := pbEntry{
				secs:  1_700_000_000 + int64(i),
				nanos: int32(i * 1000),
				line: fmt.Sprintf(`ts=2026-05-01T12:00:%02d.%03dZ caller=server.go:%d msg="GET /api/v1/cart/%d 200 12ms" `+
					`user_agent="Mozilla/5.0 (X11; Linux x86_64)" bytes=%d`, i%60, i, 100+i, i, 1000+i),
			}
			if i%2 == 0 {
				e.meta = [][2]string{{"trace_id", fmt.Sprintf("4bf92f3577b34da6a3ce929d0e0e%04x", i)}}
			}
			streams[s].entries = append(streams[s].entries, e)
		}
	}
	return streams
}

// benchJSON is the same push as Loki JSON.
func benchJSON(streams []pbStream) []byte {
	var b bytes.Buffer
	b.WriteString(`{"streams":[`)
	for s, st := range streams {
		if s > 0 {
			b.WriteByte(',')
		}
		labels, err := parseLabels(st.labels, nil)
		if err != nil {
			panic(err)
		}
		b.WriteString(`{"stream":{`)
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%q:%q", l.name, l.value)
		}
		b.WriteString(`},"values":[`)
		for i, e := range st.entries {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `["%d",%s`, e.secs*1e9+int64(e.nanos), strconv.Quote(e.line))
			if len(e.meta) > 0 {
				fmt.Fprintf(&b, `,{%q:%q}`, e.meta[0][0], e.meta[0][1])
			}
			b.WriteByte(']')
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// benchNDJSON is benchLines NDJSON lines as a JSON logger writes them.
func benchNDJSON() []byte {
	var b bytes.Buffer
	for i := range benchLines {
		fmt.Fprintf(&b, `{"@timestamp":"2026-05-01T12:00:%02d.%03dZ","level":"INFO","logger":"com.example.cart.CartService",`+
			`"message":"GET /api/v1/cart/%d 200 12ms","traceId":"4bf92f3577b34da6a3ce929d0e0e%04x",`+
			`"spanId":"00f067aa0ba9%04x","http":{"method":"GET","status":200},"duration_ms":12.5}`+"\n",
			i%60, i%1000, i, i, i)
	}
	return b.Bytes()
}

func reportLines(b *testing.B) {
	b.ReportMetric(float64(b.N)*benchLines/b.Elapsed().Seconds(), "lines/s")
}

// checkBench decodes once and checks the line count.
func checkBench(b *testing.B, ld plog.Logs) {
	if n := ld.LogRecordCount(); n != benchLines {
		b.Fatalf("decoded %d records, want %d", n, benchLines)
	}
}

// BenchmarkDecodePushProto: snappy block decoding and the protobuf walk of
// a 1000-line push into plog, what the handler does per request.
func BenchmarkDecodePushProto(b *testing.B) {
	body := snappy.Encode(nil, pbPush(benchStreams()...))
	d := newDecoder(defaultMaxLineBytes)
	var buf []byte
	decode := func() plog.Logs {
		n, err := snappy.DecodedLen(body)
		if err != nil {
			b.Fatal(err)
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		raw, err := snappy.Decode(buf[:cap(buf)], body)
		if err != nil {
			b.Fatal(err)
		}
		d.reset(testNowTS)
		ld := plog.NewLogs()
		if err := d.decodePushProto(raw, ld); err != nil {
			b.Fatal(err)
		}
		return ld
	}
	checkBench(b, decode())
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		decode()
	}
	reportLines(b)
}

// BenchmarkDecodePushJSON: the same push as Loki JSON.
func BenchmarkDecodePushJSON(b *testing.B) {
	body := benchJSON(benchStreams())
	d := newDecoder(defaultMaxLineBytes)
	decode := func() plog.Logs {
		d.reset(testNowTS)
		ld := plog.NewLogs()
		if err := d.decodePushJSON(body, ld); err != nil {
			b.Fatal(err)
		}
		return ld
	}
	checkBench(b, decode())
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		decode()
	}
	reportLines(b)
}

// BenchmarkDecodeLinesNDJSON: 1000 NDJSON lines of a JSON logger.
func BenchmarkDecodeLinesNDJSON(b *testing.B) {
	body := benchNDJSON()
	d := newDecoder(defaultMaxLineBytes)
	decode := func() plog.Logs {
		d.reset(testNowTS)
		ld := plog.NewLogs()
		d.decodeNDJSON(body, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords())
		return ld
	}
	checkBench(b, decode())
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		decode()
	}
	reportLines(b)
}

// BenchmarkDecodeLinesPlain: 1000 plain-text lines.
func BenchmarkDecodeLinesPlain(b *testing.B) {
	var sb strings.Builder
	for _, s := range benchStreams() {
		for _, e := range s.entries {
			sb.WriteString(e.line)
			sb.WriteByte('\n')
		}
	}
	body := []byte(sb.String())
	d := newDecoder(defaultMaxLineBytes)
	decode := func() plog.Logs {
		d.reset(testNowTS)
		ld := plog.NewLogs()
		d.decodePlain(body, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords())
		return ld
	}
	checkBench(b, decode())
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		decode()
	}
	reportLines(b)
}

// BenchmarkHandlerPushProto is the receiver's whole share of a protobuf
// push: handlePush alone (pooled body read, snappy, decoding, metrics,
// answer), no network and no confighttp chain, a no-op next consumer.
func BenchmarkHandlerPushProto(b *testing.B) {
	lr, err := NewFactory().CreateLogs(context.Background(), testSettings(), testConfig(), consumertest.NewNop())
	require.NoError(b, err)
	require.NoError(b, lr.Start(context.Background(), componenttest.NewNopHost()))
	b.Cleanup(func() { require.NoError(b, lr.Shutdown(context.Background())) })
	r := lr.(*lokiReceiver)
	body := snappy.Encode(nil, pbPush(benchStreams()...))
	rd := bytes.NewReader(body)
	req, err := http.NewRequest(http.MethodPost, pushPath, rd)
	require.NoError(b, err)
	req.Header.Set("Content-Type", pbContentType)
	w := &testutil.DiscardWriter{H: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		clear(w.H)
		r.handlePush(w, req)
		if w.Code != http.StatusNoContent {
			b.Fatalf("status %d", w.Code)
		}
	}
	reportLines(b)
}

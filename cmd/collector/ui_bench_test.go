package main

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkWebUITrace10k opens a trace of 10 000 spans (a tree four wide,
// ten services) in headless Chromium, each iteration a fresh navigation,
// and reports, in milliseconds since the navigation started, when its first
// screen was drawn and when every row was (the page's own performance
// marks), medians of the iterations, and when every row was on the first
// navigation, the browser's and the server's coldest. Run it with
// -benchtime 5x.
func BenchmarkWebUITrace10k(b *testing.B) {
	ep := startCollector(b)
	id := sendTreeTrace(b, ep, 10000)
	br := browser(b)
	var drawn, complete []float64
	b.ReportAllocs()
	for b.Loop() {
		require.NoError(b, chromedp.Do(br, chromedp.Navigate("http://"+ep.query+"/trace/"+id),
			chromedp.WaitVisible(chromedp.CSS(`.waterfall[aria-busy="false"]`))))
		require.Equal(b, 9999, eval[int](b, br, `document.querySelectorAll('.waterfall .row').length`))
		drawn = append(drawn, eval[float64](b, br, `performance.getEntriesByName('trace-drawn')[0].startTime`))
		complete = append(complete, eval[float64](b, br, `performance.getEntriesByName('trace-complete')[0].startTime`))
	}
	med := func(v []float64) float64 { s := slices.Clone(v); slices.Sort(s); return s[len(s)/2] }
	b.ReportMetric(med(drawn), "ms-first-screen")
	b.ReportMetric(med(complete), "ms-all-rows")
	b.ReportMetric(complete[0], "ms-all-rows-cold")
	b.Logf("first screen %v ms, all rows %v ms", drawn, complete)
}

// sendTreeTrace sends one failing trace of n spans (ids 1…n−1 valid: span id
// 0 is not), span i the child of span (i−1)/4, over OTLP/HTTP in requests of
// 1000 spans, one service each, and waits until it is stored.
func sendTreeTrace(tb testing.TB, ep endpoints, n int) string {
	tid := pcommon.TraceID([16]byte{0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	id8 := func(i int) pcommon.SpanID {
		return pcommon.SpanID([8]byte{5: byte(i >> 16), 6: byte(i >> 8), 7: byte(i)})
	}
	t0 := time.Now().Add(-time.Minute)
	var m ptrace.ProtoMarshaler
	for batch := 0; batch < n; batch += 1000 {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", batch/1000))
		ss := rs.ScopeSpans().AppendEmpty().Spans()
		for i := batch; i < min(batch+1000, n); i++ {
			sp := ss.AppendEmpty()
			sp.SetTraceID(tid)
			sp.SetSpanID(id8(i))
			if i > 0 {
				sp.SetParentSpanID(id8((i - 1) / 4))
			}
			sp.SetName(fmt.Sprintf("op-%d", i%50))
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i) * time.Microsecond)))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i)*time.Microsecond + time.Millisecond)))
			if i == 7 {
				sp.Status().SetCode(ptrace.StatusCodeError)
			}
		}
		body, err := m.MarshalTraces(td)
		require.NoError(tb, err)
		resp, err := http.Post("http://"+ep.http+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		require.NoError(tb, err)
		resp.Body.Close()
		require.Equal(tb, http.StatusOK, resp.StatusCode)
	}
	id := tid.String()
	eventually(tb, "the trace of 10 000 spans", func() bool {
		code, tr := getTrace(tb, ep, id)
		return code == http.StatusOK && len(tr.Spans) == n-1
	})
	return id
}

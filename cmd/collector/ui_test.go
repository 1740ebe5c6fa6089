package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// browser starts headless Chromium (Debian's chromium, which make test
// installs when it is missing) and returns a context that drives it.
func browser(t testing.TB) context.Context {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	require.NotEmpty(t, bin, "no Chromium: `make browser` installs Debian's chromium (as root)")
	// TMPDIR: Chromium's singleton socket goes in a folder of its own under
	// it, left behind when the browser is killed at the end of a test.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 900), chromedp.UserDataDir(t.TempDir()), chromedp.Env("TMPDIR="+t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// eval runs expr in the page and decodes its value.
func eval[T any](t testing.TB, b context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(b, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// screenshotDir is where the UI's screenshots go: $TRACESIFT_TEST_OUT/ui
// (make test sets it), else a temporary folder.
func screenshotDir(t *testing.T) string {
	dir := t.TempDir()
	if out := os.Getenv("TRACESIFT_TEST_OUT"); out != "" {
		dir = filepath.Join(out, "ui")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// a11yAudit lists what the page in b fails of the accessibility basics:
// text below WCAG AA contrast against its background (4.5:1, 3:1 when
// large), form fields without a label, buttons and links without a name.
const a11yAudit = `(() => {
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const bad = [];
  for (const el of document.querySelectorAll('body *')) {
    const text = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!text || !el.getClientRects().length || el.closest('.sr-only, .skip')) continue;
    const st = getComputedStyle(el);
    const [a, b] = [lum(rgb(st.color)), lum(background(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(st.fontSize), bold = Number(st.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) bad.push('contrast ' + ratio.toFixed(2) + ': ' + el.tagName + '.' + el.className + ' "' + el.textContent.trim().slice(0, 30) + '"');
  }
  for (const el of document.querySelectorAll('input, select, textarea')) {
    if (!el.labels.length && !el.getAttribute('aria-label')) bad.push('no label: ' + el.outerHTML.slice(0, 80));
  }
  for (const el of document.querySelectorAll('button, a[href]')) {
    if (!(el.textContent.trim() || el.getAttribute('aria-label') || el.title)) bad.push('no name: ' + el.outerHTML.slice(0, 80));
  }
  return bad;
})()`

// The web UI in a real browser: the trace page shows the spans in tree
// order on their timeline, the log lines under their spans and the
// findings on the right spans; the search page lists the trace; the
// waterfall answers the keyboard.
func TestWebUI(t *testing.T) {
	ep := startCollector(t)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(ep.http), otlptracehttp.WithInsecure())
	require.NoError(t, err)
	shop := tracerProvider(t, exp, "shop").Tracer("ui")
	pay := tracerProvider(t, exp, "payments").Tracer("ui")

	t0 := time.Now().Add(-10 * time.Second)
	rootCtx, root := shop.Start(ctx, "POST /checkout", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(t0))
	_, cart := shop.Start(rootCtx, "load cart", trace.WithTimestamp(t0.Add(2*time.Millisecond)))
	cart.End(trace.WithTimestamp(t0.Add(12 * time.Millisecond)))
	for i := range 3 { // three attempts at the stock, two failing: a retry
		_, stock := shop.Start(rootCtx, "GET /stock", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(t0.Add(time.Duration(3+2*i)*time.Millisecond)),
			trace.WithAttributes(attribute.String("peer.service", "inventory")))
		if i < 2 {
			stock.SetStatus(codes.Error, "503")
		}
		stock.End(trace.WithTimestamp(t0.Add(time.Duration(4+2*i) * time.Millisecond)))
	}
	callCtx, call := shop.Start(rootCtx, "call payments", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(t0.Add(15*time.Millisecond)))
	payCtx, charge := pay.Start(callCtx, "POST /charge", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(t0.Add(17*time.Millisecond)))
	charge.SetStatus(codes.Error, "card declined")
	charge.End(trace.WithTimestamp(t0.Add(95 * time.Millisecond)))
	call.SetStatus(codes.Error, "payment failed")
	call.End(trace.WithTimestamp(t0.Add(98 * time.Millisecond)))
	root.SetStatus(codes.Error, "checkout failed")
	root.End(trace.WithTimestamp(t0.Add(100 * time.Millisecond)))
	id := root.SpanContext().TraceID().String()

	logExp, err := otlploghttp.New(ctx, otlploghttp.WithEndpoint(ep.http), otlploghttp.WithInsecure())
	require.NoError(t, err)
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(logExp)),
		sdklog.WithResource(resource.NewSchemaless(semconv.ServiceName("payments"))))
	defer lp.Shutdown(ctx)
	var rec otellog.Record
	rec.SetTimestamp(t0.Add(50 * time.Millisecond))
	rec.SetBody(attribute.StringValue("acquirer said no"))
	rec.SetSeverity(otellog.SeverityError)
	rec.SetSeverityText("ERROR")
	lp.Logger("ui").Emit(payCtx, rec)

	eventually(t, "the trace with its log and findings", func() bool {
		code, tr := getTrace(t, ep, id)
		return code == http.StatusOK && len(tr.Spans) == 7 && len(tr.Logs) == 1 && len(tr.Findings) > 0
	})

	b := browser(t)
	shots := screenshotDir(t)
	base := "http://" + ep.query
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(b, steps...))
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(b, chromedp.FullScreenshot(100)) // 100: PNG
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, name), png, 0o644))
	}

	// The trace page.
	do(chromedp.Navigate(base+"/trace/"+id), chromedp.WaitVisible(chromedp.CSS(".waterfall .row")))
	names := eval[[]string](t, b, `[...document.querySelectorAll('.waterfall .row')].map(r =>
		r.querySelector('.svc').textContent + ' ' + r.querySelector('.op').textContent)`)
	badges := eval[[]string](t, b, `[...document.querySelectorAll('.waterfall .row')].flatMap(r =>
		[...r.querySelectorAll('.badge')].map(b => r.querySelector('.op').textContent + ': ' + b.textContent))`)
	// Each log row, with the span row above it.
	logAfter := eval[[]string](t, b, `[...document.querySelectorAll('.waterfall .logrow')].map(l => {
		let r = l.previousElementSibling; while (r && !r.classList.contains('row')) r = r.previousElementSibling;
		return (r ? r.querySelector('.op').textContent : '(trace)') + ' <- ' + l.querySelector('.msg').textContent })`)
	shot("trace.png")
	assert.Empty(t, eval[[]string](t, b, a11yAudit), "trace page")
	hover := eval[string](t, b, `(() => { const bar = document.querySelector('.waterfall .bar');
		bar.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})); return bar.title })()`)
	assert.Contains(t, hover, "raw ", "the raw times on hover")
	assert.Equal(t, []string{"shop POST /checkout", "shop load cart", "shop GET /stock", "shop GET /stock", "shop GET /stock",
		"shop call payments", "payments POST /charge"}, names, "spans in tree order, children by start")
	assert.Contains(t, badges, "POST /charge: error_origin", "%v", badges)
	assert.Contains(t, badges, "GET /stock: retry_fanout ×3", "the retry with its amplification: %v", badges)
	assert.Equal(t, []string{"POST /charge <- ERRORacquirer said no"}, logAfter, "the log line under its span")

	// The keyboard: the root collapses with ←, its subtree hides, → shows it again.
	hiddenRows := `[...document.querySelectorAll('.waterfall .row')].filter(r => r.hidden).length`
	do(chromedp.Focus(chromedp.CSS(".waterfall .row")), chromedp.KeyEvent(kb.ArrowLeft))
	assert.Equal(t, 6, eval[int](t, b, hiddenRows), "the root's six descendants")
	do(chromedp.KeyEvent(kb.ArrowRight))
	assert.Zero(t, eval[int](t, b, hiddenRows))
	// ↓ moves the focus to the next row, and the focus shows.
	do(chromedp.KeyEvent(kb.ArrowDown))
	assert.Equal(t, "load cart", eval[string](t, b, `document.activeElement.querySelector('.op').textContent`))
	assert.NotEqual(t, "none", eval[string](t, b, `getComputedStyle(document.activeElement).outlineStyle`), "a visible focus ring")
	do(chromedp.KeyEvent(kb.ArrowUp))
	// Enter opens the focused span's details, read from the API when opened.
	do(chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`.details[aria-busy="false"] h3`)))
	assert.Contains(t, eval[string](t, b, `document.querySelector('.details h3').textContent`), "POST /checkout")
	assert.Contains(t, eval[string](t, b, `document.querySelector('.details').textContent`), "service.nameshop", "its resource")

	// The search page: the trace, an error, with its duration.
	do(chromedp.Navigate(base+"/search?service=shop&errors=1"),
		chromedp.WaitVisible(chromedp.CSS(`table.traces tr[data-trace="`+id+`"]`)))
	found := eval[[]string](t, b, `[...document.querySelectorAll('table.traces tbody tr')].map(r => r.dataset.trace + ' ' +
		r.querySelector('td:nth-child(3)').textContent.trim())`)
	shot("search.png")
	assert.Empty(t, eval[[]string](t, b, a11yAudit), "search page")
	assert.Contains(t, found, fmt.Sprintf("%s 100 ms", id))

	// The findings page lists the trace's findings.
	do(chromedp.Navigate(base+"/findings"), chromedp.WaitVisible(chromedp.CSS("table.findings")))
	kinds := eval[[]string](t, b, `[...document.querySelectorAll('table.findings tbody tr')].map(r => r.querySelector('.badge').textContent)`)
	assert.Contains(t, kinds, "error_origin")
	shot("findings.png")
	assert.Empty(t, eval[[]string](t, b, a11yAudit), "findings page")

	// The logs page finds the line by a word, linked to its trace.
	do(chromedp.Navigate(base+"/logs?q=acquirer"), chromedp.WaitVisible(chromedp.CSS("table.logs")))
	lines := eval[[]string](t, b, `[...document.querySelectorAll('table.logs tbody tr')].map(r =>
		r.querySelector('td:nth-child(4)').textContent + ' ' + r.querySelector('a').getAttribute('href'))`)
	shot("logs.png")
	assert.Equal(t, []string{"acquirer said no /trace/" + id}, lines)
	assert.Empty(t, eval[[]string](t, b, a11yAudit), "logs page")

	// The services page: shop's operations and instances on all traffic, and what its failing requests share.
	do(chromedp.Navigate(base+"/services?service=shop"), chromedp.WaitVisible(chromedp.CSS("table.compare")))
	ops := eval[[]string](t, b, `[...document.querySelectorAll('table.red')[0].querySelectorAll('tbody tr')].map(r =>
		r.dataset.group + ' ' + r.querySelector('td:nth-child(2)').textContent + ' ' + r.querySelector('td:nth-child(4)').textContent.trim())`)
	instances := eval[[]string](t, b, `[...document.querySelectorAll('table.red')[1].querySelectorAll('tbody tr')].map(r => r.dataset.group)`)
	values := eval[[]string](t, b, `[...document.querySelectorAll('table.compare tbody tr')].map(r =>
		r.querySelector('td:nth-child(1)').textContent + '=' + r.querySelector('td:nth-child(2)').textContent)`)
	shot("services.png")
	assert.Empty(t, eval[[]string](t, b, a11yAudit), "services page")
	assert.Equal(t, []string{"POST /checkout 1 100.0 %"}, ops, "the root is shop's one entry span, and it failed")
	assert.Equal(t, []string{"shop-host"}, instances)
	assert.Contains(t, values, "operation=POST /checkout")
}

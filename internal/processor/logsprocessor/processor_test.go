package logsprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/tracesift/tracesift/internal/processor/logsprocessor/internal/metadata"
	"github.com/tracesift/tracesift/internal/testutil"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLogsProcessor(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.WarnLevel)

	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	sink := new(consumertest.LogsSink)
	f := NewFactory()
	p, err := f.CreateLogs(context.Background(), set, f.CreateDefaultConfig(), sink)
	require.NoError(t, err)
	assert.True(t, p.Capabilities().MutatesData)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })

	specs := []recordSpec{
		{traceID: tid, spanID: sid},
		{attrs: map[string]any{"traceId": tid2, "spanId": sid2}},
		{body: "ERROR traceId=" + tid + " spanId=" + sid + " - payment failed"},
		{attrs: map[string]any{"traceId": "xyz"}, body: "traceId=" + tid2},
		{attrs: map[string]any{"spanId": "nothex-nothex-00"}},
		{body: "started"},
	}
	batch := func() plog.Logs {
		ld := plog.NewLogs()
		// Two resources, to cover the nested loops.
		for i, s := range specs {
			if i%3 == 0 {
				ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
			}
			rl := ld.ResourceLogs().At(ld.ResourceLogs().Len() - 1)
			newRecord(t, s).CopyTo(rl.ScopeLogs().At(0).LogRecords().AppendEmpty())
		}
		return ld
	}
	// Fresh batches: the processor links in place, so a reused batch would
	// come back already linked from the record.
	require.NoError(t, p.ConsumeLogs(context.Background(), batch()))
	require.NoError(t, p.ConsumeLogs(context.Background(), batch()))

	require.Len(t, sink.AllLogs(), 2)
	out := sink.AllLogs()[0]
	var got []string
	for i := 0; i < out.ResourceLogs().Len(); i++ {
		lrs := out.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords()
		for j := 0; j < lrs.Len(); j++ {
			lr := lrs.At(j)
			got = append(got, lr.TraceID().String()+"/"+lr.SpanID().String())
		}
	}
	assert.Equal(t, []string{
		tid + "/" + sid, tid2 + "/" + sid2, tid + "/" + sid, tid2 + "/", "/", "/",
	}, got)

	assert.Equal(t, int64(12), testutil.MetricSum(t, tel, "otelcol_tracesift_logs_received"))
	assert.Equal(t, int64(2), testutil.MetricSum(t, tel, "otelcol_tracesift_logs_linked", attribute.String("source", SourceRecord)))
	assert.Equal(t, int64(2), testutil.MetricSum(t, tel, "otelcol_tracesift_logs_linked", attribute.String("source", SourceAttributes)))
	assert.Equal(t, int64(4), testutil.MetricSum(t, tel, "otelcol_tracesift_logs_linked", attribute.String("source", SourceBody)))
	assert.Equal(t, int64(4), testutil.MetricSum(t, tel, "otelcol_tracesift_logs_invalid_ids"))

	// Four invalid ids, one explanation.
	warns := logs.FilterMessageSnippet("malformed trace or span id").All()
	require.Len(t, warns, 1)
	assert.Equal(t, "traceId", warns[0].ContextMap()["key"])
	assert.Equal(t, "xyz", warns[0].ContextMap()["value"])
}

func TestLogsProcessorSwitches(t *testing.T) {
	sink := new(consumertest.LogsSink)
	f := NewFactory()
	cfg := &Config{FromAttributes: false, FromBody: false}
	p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)

	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	newRecord(t, recordSpec{attrs: map[string]any{"traceId": tid}, body: "traceId=" + tid}).CopyTo(lrs.AppendEmpty())
	require.NoError(t, p.ConsumeLogs(context.Background(), ld))
	lr := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.True(t, lr.TraceID().IsEmpty())
}

func TestLogsProcessorRejectsForeignConfig(t *testing.T) {
	f := NewFactory()
	_, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type),
		&struct{ component.Config }{}, new(consumertest.LogsSink))
	assert.ErrorContains(t, err, "unexpected config type")
	var _ processor.Factory = f
}

func TestLogsProcessorShutdown(t *testing.T) {
	processortest.VerifyShutdown(t, NewFactory(), createDefaultConfig())
}

func TestExplainInvalidTruncates(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	p := &logsProcessor{logger: zap.New(core)}
	long := "é" + string(make([]byte, 100)) // a multi-byte rune at the start, then padding
	p.explainInvalid(LinkResult{InvalidID: true, InvalidKey: "traceId", InvalidValue: long})
	p.explainInvalid(LinkResult{InvalidID: true, InvalidKey: "spanId", InvalidValue: "x"})
	require.Equal(t, 1, logs.Len())
	v := logs.All()[0].ContextMap()["value"].(string)
	assert.Less(t, len(v), 70)
}

func TestTextLayoutsParsed(t *testing.T) {
	p, err := newTextParser(DefaultTextPatterns)
	require.NoError(t, err)
	tests := []struct {
		line                 string
		sev                  plog.SeverityNumber
		text, thread, logger string
		time                 time.Time
	}{
		{"2026-11-30 10:00:00.123 [http-nio-8080-exec-1] ERROR c.e.shop.PaymentService - card declined traceId=4bf92f3577b34da6a3ce929d0e0e4736",
			plog.SeverityNumberError, "ERROR", "http-nio-8080-exec-1", "c.e.shop.PaymentService", time.Date(2026, 11, 30, 10, 0, 0, 123e6, time.UTC)},
		{"2026-11-30 10:00:01,500 WARN  [main] org.acme.Cart - slow\n\tat org.acme.Cart.add(Cart.java:3)",
			plog.SeverityNumberWarn, "WARN", "main", "org.acme.Cart", time.Date(2026, 11, 30, 10, 0, 1, 500e6, time.UTC)},
		{"2026-11-30T10:00:02.250+01:00  INFO 4242 --- [           main] o.s.b.w.e.tomcat.TomcatWebServer         : Tomcat started",
			plog.SeverityNumberInfo, "INFO", "           main", "o.s.b.w.e.tomcat.TomcatWebServer", time.Date(2026, 11, 30, 9, 0, 2, 250e6, time.UTC)},
	}
	for _, tt := range tests {
		lr := plog.NewLogRecord()
		lr.Body().SetStr(tt.line)
		require.True(t, p.parse(lr), tt.line)
		assert.Equal(t, tt.sev, lr.SeverityNumber())
		assert.Equal(t, tt.text, lr.SeverityText())
		assert.Equal(t, tt.time, lr.Timestamp().AsTime())
		th, _ := lr.Attributes().Get("thread.name")
		assert.Equal(t, tt.thread, th.Str())
		lg, _ := lr.Attributes().Get("code.namespace")
		assert.Equal(t, tt.logger, lg.Str())
		assert.Equal(t, tt.line, lr.Body().Str(), "the body is kept as it came")
	}

	// What is set stays; what matches nothing is left alone.
	lr := plog.NewLogRecord()
	lr.Body().SetStr("2026-11-30 10:00:00.123 [main] DEBUG a.B - x")
	lr.SetTimestamp(42)
	require.True(t, p.parse(lr))
	assert.EqualValues(t, 42, lr.Timestamp())
	other := plog.NewLogRecord()
	other.Body().SetStr("plain words, no layout")
	assert.False(t, p.parse(other))
	assert.Equal(t, plog.SeverityNumberUnspecified, other.SeverityNumber())
	assert.Zero(t, other.Attributes().Len())
}

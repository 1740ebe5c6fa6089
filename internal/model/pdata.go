package model

import (
	"encoding/hex"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// SpanFromPdata is sp in the model, with the trace id (in hex), service and
// host its caller read once for the trace and the resource. Resource and the
// scope stay empty: the analyzers, who convert every kept span, read neither.
func SpanFromPdata(sp ptrace.Span, traceID, service, host string) Span {
	s := Span{
		TraceID:       traceID,
		TraceState:    sp.TraceState().AsRaw(),
		SpanID:        spanIDHex(sp.SpanID()),
		ParentSpanID:  spanIDHex(sp.ParentSpanID()),
		Name:          sp.Name(),
		Kind:          Kind(sp.Kind()),
		Service:       service,
		Host:          host,
		StartUnixNano: uint64(sp.StartTimestamp()),
		EndUnixNano:   uint64(sp.EndTimestamp()),
		StatusCode:    StatusCode(sp.Status().Code()),
		StatusMessage: sp.Status().Message(),
		Attributes:    stringMap(sp.Attributes()),
	}
	for i := range sp.Events().Len() {
		ev := sp.Events().At(i)
		s.Events = append(s.Events, Event{Name: ev.Name(), TimeUnixNano: uint64(ev.Timestamp()),
			Attributes: stringMap(ev.Attributes())})
	}
	for i := range sp.Links().Len() {
		l := sp.Links().At(i)
		tid := l.TraceID()
		s.Links = append(s.Links, Link{TraceID: hex.EncodeToString(tid[:]), SpanID: spanIDHex(l.SpanID()),
			Attributes: stringMap(l.Attributes())})
	}
	return s
}

func spanIDHex(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return hex.EncodeToString(id[:])
}

func stringMap(m pcommon.Map) map[string]string {
	if m.Len() == 0 {
		return nil
	}
	out := make(map[string]string, m.Len())
	for k, v := range m.All() {
		out[k] = v.AsString()
	}
	return out
}

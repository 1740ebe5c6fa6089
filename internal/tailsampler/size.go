package tailsampler

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Estimated in-memory cost of buffered pdata, in bytes. pdata keeps no size,
// and computing the protobuf size would walk the data a second time, so the
// estimate adds fixed overheads (struct headers, slice and map slots, measured
// on pdata v1.71 with 10-attribute spans) to the lengths of the strings and
// byte values, which dominate real traces. It errs high: the bound is a
// promise about the process's memory.
const (
	spanOverhead     = 320
	attrOverhead     = 64
	eventOverhead    = 96
	linkOverhead     = 112
	resourceOverhead = 128
)

func spanSize(span ptrace.Span) int64 {
	n := int64(spanOverhead + len(span.Name()) + len(span.TraceState().AsRaw()) + len(span.Status().Message()))
	n += attrsSize(span.Attributes())
	events := span.Events()
	for i := 0; i < events.Len(); i++ {
		ev := events.At(i)
		n += int64(eventOverhead+len(ev.Name())) + attrsSize(ev.Attributes())
	}
	links := span.Links()
	for i := 0; i < links.Len(); i++ {
		l := links.At(i)
		n += int64(linkOverhead+len(l.TraceState().AsRaw())) + attrsSize(l.Attributes())
	}
	return n
}

// resourceSize is the cost of the Resource and Scope copied with a trace's
// first span of a ResourceSpans/ScopeSpans.
func resourceSize(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) int64 {
	return int64(resourceOverhead+len(rs.SchemaUrl())+len(ss.Scope().Name())+len(ss.Scope().Version())) +
		attrsSize(rs.Resource().Attributes()) + attrsSize(ss.Scope().Attributes())
}

func attrsSize(m pcommon.Map) int64 {
	n := int64(m.Len()) * attrOverhead
	for k, v := range m.All() {
		n += int64(len(k)) + valueSize(v)
	}
	return n
}

func valueSize(v pcommon.Value) int64 {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return int64(len(v.Str()))
	case pcommon.ValueTypeBytes:
		return int64(v.Bytes().Len())
	case pcommon.ValueTypeMap:
		return attrsSize(v.Map())
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		n := int64(s.Len()) * attrOverhead
		for i := 0; i < s.Len(); i++ {
			n += valueSize(s.At(i))
		}
		return n
	}
	return 0
}

package store

import (
	"encoding/binary"
	"encoding/hex"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
)

// The findings and clock offsets of kept traces travel with their spans:
// the sampler appends them to the traces it hands on, in a resource of their
// own marked with AnalysisResource, and WriteTraces writes them to their
// tables instead of the spans table. So they pass through the exporter's
// queue, batching, retries and backpressure as the kept spans do, and
// whatever carries the traces (a pipeline, later a Kafka topic) carries them.
// Each row is a span of that resource: "finding" or "clock_offset", with the
// trace's id and start, its fields as attributes.

// AnalysisResource is the resource attribute (true) that marks the resource
// carrying findings and clock offsets.
const AnalysisResource = "tracesift.analysis"

const (
	analysisScope   = "tracesift.analysis"
	analysisFinding = "finding"
	analysisClock   = "clock_offset"
	attrKind        = "kind"
	attrService     = "service"
	attrSubject     = "subject"
	attrSpanIDs     = "span_ids"
	attrValue       = "value"
	attrSummary     = "summary"
	attrHost        = "host"
	attrOffsetNanos = "offset_ns"
	attrSource      = "source"
)

// AppendAnalysis appends findings and clock offsets to td, in one resource
// marked with AnalysisResource; nothing when there are none.
func AppendAnalysis(td ptrace.Traces, findings []model.Finding, clocks []model.ClockOffset) {
	if len(findings)+len(clocks) == 0 {
		return
	}
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutBool(AnalysisResource, true)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(analysisScope)
	spans := ss.Spans()
	spans.EnsureCapacity(len(findings) + len(clocks))
	n := uint64(0)
	row := func(name, traceID string, at uint64) pcommon.Map {
		n++
		s := spans.AppendEmpty()
		s.SetName(name)
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], n) // unique within the resource: a span needs an id
		s.SetSpanID(sid)
		var tid pcommon.TraceID // the rows' ids are the sampler's, 32 hex digits
		if _, err := hex.Decode(tid[:], []byte(traceID)); err == nil {
			s.SetTraceID(tid)
		}
		s.SetStartTimestamp(pcommon.Timestamp(at))
		s.SetEndTimestamp(pcommon.Timestamp(at))
		return s.Attributes()
	}
	for i := range findings {
		f := &findings[i]
		a := row(analysisFinding, f.TraceID, f.TimeUnixNano)
		a.PutStr(attrKind, f.Kind)
		a.PutStr(attrService, f.Service)
		a.PutStr(attrSubject, f.Subject)
		ids := a.PutEmptySlice(attrSpanIDs)
		ids.EnsureCapacity(len(f.SpanIDs))
		for _, id := range f.SpanIDs {
			ids.AppendEmpty().SetStr(id)
		}
		a.PutDouble(attrValue, f.Value)
		a.PutStr(attrSummary, f.Summary)
	}
	for i := range clocks {
		c := &clocks[i]
		a := row(analysisClock, c.TraceID, c.TimeUnixNano)
		a.PutStr(attrHost, c.Host)
		a.PutInt(attrOffsetNanos, c.OffsetNanos)
		a.PutStr(attrSource, c.Source)
	}
}

// IsAnalysis reports whether rs carries findings and clock offsets rather
// than spans.
func IsAnalysis(rs ptrace.ResourceSpans) bool {
	v, ok := rs.Resource().Attributes().Get(AnalysisResource)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// AnalysisOf returns the findings and clock offsets that td carries.
func AnalysisOf(td ptrace.Traces) (findings []model.Finding, clocks []model.ClockOffset) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		if !IsAnalysis(rs) {
			continue
		}
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				s := spans.At(k)
				a := s.Attributes()
				traceID := s.TraceID().String()
				at := uint64(s.StartTimestamp())
				switch s.Name() {
				case analysisFinding:
					f := model.Finding{TraceID: traceID, TimeUnixNano: at, Kind: str(a, attrKind), Service: str(a, attrService),
						Subject: str(a, attrSubject), Summary: str(a, attrSummary)}
					if v, ok := a.Get(attrValue); ok {
						f.Value = v.Double()
					}
					if v, ok := a.Get(attrSpanIDs); ok && v.Type() == pcommon.ValueTypeSlice {
						for _, id := range v.Slice().All() {
							f.SpanIDs = append(f.SpanIDs, id.Str())
						}
					}
					findings = append(findings, f)
				case analysisClock:
					c := model.ClockOffset{TraceID: traceID, TimeUnixNano: at, Host: str(a, attrHost), Source: str(a, attrSource)}
					if v, ok := a.Get(attrOffsetNanos); ok {
						c.OffsetNanos = v.Int()
					}
					clocks = append(clocks, c)
				}
			}
		}
	}
	return findings, clocks
}

// str is the string attribute key of a, or "".
func str(a pcommon.Map, key string) string {
	if v, ok := a.Get(key); ok {
		return v.Str()
	}
	return ""
}

package store

import (
	"encoding/binary"
	"encoding/hex"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/tenant"
)

// The findings and clock offsets of kept traces travel with their spans, and
// the RED of all traffic with them: the sampler appends them to the traces
// it hands on, in a resource of their own marked with AnalysisResource, and
// WriteTraces writes them to their tables instead of the spans table. So
// they pass through the exporter's queue, batching, retries and backpressure
// as the kept spans do, and whatever carries the traces (a pipeline, later a
// Kafka topic) carries them. Each row is a span of that resource: "finding"
// or "clock_offset", with the trace's id and start, or "red", with the
// interval's start; its fields as attributes, its Tenant as "tenant" (none
// for the default tenant).

// AnalysisResource is the resource attribute (true) that marks the resource
// carrying findings and clock offsets.
const AnalysisResource = "tracesift.analysis"

const (
	analysisScope   = "tracesift.analysis"
	analysisFinding = "finding"
	analysisClock   = "clock_offset"
	analysisRED     = "red"
	analysisPair    = "clock_pair"
	attrKind        = "kind"
	attrService     = "service"
	attrSubject     = "subject"
	attrSpanIDs     = "span_ids"
	attrValue       = "value"
	attrSummary     = "summary"
	attrHost        = "host"
	attrOffsetNanos = "offset_ns"
	attrSource      = "source"
	attrOperation   = "operation"
	attrInstance    = "instance"
	attrDimensions  = "dimensions"
	attrRequests    = "requests"
	attrErrors      = "errors"
	attrLatency     = "latency"       // bucket, count, bucket, count, ...
	attrErrLatency  = "error_latency" // the same, of the errors
	attrHostA       = "host_a"
	attrHostB       = "host_b"
	attrSamples     = "samples"
	attrTenant      = "tenant"
)

// Analysis is what the sampler hands on besides the kept spans.
type Analysis struct {
	Findings []model.Finding
	Clocks   []model.ClockOffset
	RED      []model.RED
	Pairs    []model.ClockPair
}

// AppendAnalysis appends a to td, in one resource marked with
// AnalysisResource; nothing when a is empty.
func AppendAnalysis(td ptrace.Traces, a Analysis) {
	findings, clocks := a.Findings, a.Clocks
	if len(findings)+len(clocks)+len(a.RED)+len(a.Pairs) == 0 {
		return
	}
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutBool(AnalysisResource, true)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(analysisScope)
	spans := ss.Spans()
	spans.EnsureCapacity(len(findings) + len(clocks) + len(a.RED) + len(a.Pairs))
	n := uint64(0)
	row := func(name, traceID string, at uint64, t string) pcommon.Map {
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
		if t != "" && t != tenant.Default {
			s.Attributes().PutStr(attrTenant, t)
		}
		return s.Attributes()
	}
	for i := range findings {
		f := &findings[i]
		a := row(analysisFinding, f.TraceID, f.TimeUnixNano, f.Tenant)
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
		a := row(analysisClock, c.TraceID, c.TimeUnixNano, c.Tenant)
		a.PutStr(attrHost, c.Host)
		a.PutInt(attrOffsetNanos, c.OffsetNanos)
		a.PutStr(attrSource, c.Source)
	}
	for i := range a.RED {
		r := &a.RED[i]
		attrs := row(analysisRED, "", r.TimeUnixNano, r.Tenant)
		attrs.PutStr(attrService, r.Service)
		attrs.PutStr(attrOperation, r.Operation)
		attrs.PutStr(attrInstance, r.Instance)
		dims := attrs.PutEmptyMap(attrDimensions)
		dims.EnsureCapacity(len(r.Dimensions))
		for k, v := range r.Dimensions {
			dims.PutStr(k, v)
		}
		attrs.PutInt(attrRequests, int64(r.Requests))
		attrs.PutInt(attrErrors, int64(r.Errors))
		putBuckets(attrs, attrLatency, r.Latency)
		putBuckets(attrs, attrErrLatency, r.ErrorLatency)
	}
	for i := range a.Pairs {
		p := &a.Pairs[i]
		attrs := row(analysisPair, "", p.TimeUnixNano, p.Tenant)
		attrs.PutStr(attrHostA, p.A)
		attrs.PutStr(attrHostB, p.B)
		attrs.PutInt(attrOffsetNanos, p.OffsetNanos)
		attrs.PutInt(attrSamples, int64(p.Samples))
	}
}

// IsAnalysis reports whether rs carries findings and clock offsets rather
// than spans.
func IsAnalysis(rs ptrace.ResourceSpans) bool {
	v, ok := rs.Resource().Attributes().Get(AnalysisResource)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// AnalysisOf returns what td carries besides spans.
func AnalysisOf(td ptrace.Traces) (out Analysis) {
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
						Subject: str(a, attrSubject), Summary: str(a, attrSummary), Tenant: str(a, attrTenant)}
					if v, ok := a.Get(attrValue); ok {
						f.Value = v.Double()
					}
					if v, ok := a.Get(attrSpanIDs); ok && v.Type() == pcommon.ValueTypeSlice {
						for _, id := range v.Slice().All() {
							f.SpanIDs = append(f.SpanIDs, id.Str())
						}
					}
					out.Findings = append(out.Findings, f)
				case analysisClock:
					c := model.ClockOffset{TraceID: traceID, TimeUnixNano: at, Host: str(a, attrHost), Source: str(a, attrSource),
						Tenant: str(a, attrTenant)}
					if v, ok := a.Get(attrOffsetNanos); ok {
						c.OffsetNanos = v.Int()
					}
					out.Clocks = append(out.Clocks, c)
				case analysisRED:
					out.RED = append(out.RED, redOf(at, a))
				case analysisPair:
					p := model.ClockPair{TimeUnixNano: at, A: str(a, attrHostA), B: str(a, attrHostB), Tenant: str(a, attrTenant)}
					if v, ok := a.Get(attrOffsetNanos); ok {
						p.OffsetNanos = v.Int()
					}
					if v, ok := a.Get(attrSamples); ok {
						p.Samples = int(v.Int())
					}
					out.Pairs = append(out.Pairs, p)
				}
			}
		}
	}
	return out
}

// redOf reads a "red" row of the analysis resource.
func redOf(at uint64, a pcommon.Map) model.RED {
	r := model.RED{TimeUnixNano: at, Service: str(a, attrService), Operation: str(a, attrOperation),
		Instance: str(a, attrInstance), Dimensions: map[string]string{}, Latency: buckets(a, attrLatency),
		ErrorLatency: buckets(a, attrErrLatency), Tenant: str(a, attrTenant)}
	if v, ok := a.Get(attrDimensions); ok && v.Type() == pcommon.ValueTypeMap {
		for k, d := range v.Map().All() {
			r.Dimensions[k] = d.AsString()
		}
	}
	if v, ok := a.Get(attrRequests); ok {
		r.Requests = uint64(max(v.Int(), 0))
	}
	if v, ok := a.Get(attrErrors); ok {
		r.Errors = uint64(max(v.Int(), 0))
	}
	return r
}

// putBuckets puts a sketch's counts as the attribute key: bucket, count, ...
func putBuckets(a pcommon.Map, key string, m map[int32]uint64) {
	s := a.PutEmptySlice(key)
	s.EnsureCapacity(2 * len(m))
	for b, n := range m {
		s.AppendEmpty().SetInt(int64(b))
		s.AppendEmpty().SetInt(int64(n))
	}
}

// buckets reads what putBuckets put.
func buckets(a pcommon.Map, key string) map[int32]uint64 {
	out := map[int32]uint64{}
	if v, ok := a.Get(key); ok && v.Type() == pcommon.ValueTypeSlice {
		s := v.Slice()
		for i := 0; i+1 < s.Len(); i += 2 {
			out[int32(s.At(i).Int())] += uint64(max(s.At(i+1).Int(), 0))
		}
	}
	return out
}

// str is the string attribute key of a, or "".
func str(a pcommon.Map, key string) string {
	if v, ok := a.Get(key); ok {
		return v.Str()
	}
	return ""
}

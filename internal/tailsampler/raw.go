package tailsampler

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/ingest/otlpscan"
)

// rawSpans holds the spans of one chunk (one trace's part of one request) as
// their OTLP wire bytes, copied out of the request into one arena, with
// tables indexing it by offset. A trace is a list of them: they are never
// concatenated, since most traces are dropped. A buffered span costs
// its encoded size (~340 bytes for a 10-attribute span) plus a table entry,
// several times less than its pdata form, and nothing is decoded until a
// kept trace leaves the sampler (see encodeParts).
//
// Offsets rather than slices: the arena grows by append, and slices into an
// old backing array would keep it alive beside the new one.
type rawSpans struct {
	buf       []byte
	resources []rawResource
	scopes    []rawScope
	spans     []rawSpan
}

type blob struct{ off, n int32 }

type rawResource struct{ raw, schema blob }

type rawScope struct {
	raw, schema blob
	resource    int32
}

type rawSpan struct {
	raw   blob
	scope int32
}

// Memory accounting: the arena and tables (allocated at their exact size by
// the grouping), the rawSpans itself, and the bookkeeping of a chunk that
// becomes a trace (trace struct, map entry, list elements), refunded when the
// chunk joins a buffered trace instead.
const (
	rawSpanEntry  = 16
	rawTableEntry = 40
	rawPartSize   = 128
	chunkOverhead = 320
)

// bytes is the memory a chunk holding r accounts for.
func (r *rawSpans) bytes() int64 {
	return int64(cap(r.buf)) + int64(cap(r.spans))*rawSpanEntry +
		int64(cap(r.resources)+cap(r.scopes))*rawTableEntry + rawPartSize + chunkOverhead
}

// reserve sizes r for a chunk whose sizes the grouping has counted, so
// filling it never reallocates.
func (r *rawSpans) reserve(bufBytes, spans, scopes int) {
	r.buf = make([]byte, 0, bufBytes)
	r.spans = make([]rawSpan, 0, spans)
	r.scopes = make([]rawScope, 0, scopes)
	r.resources = make([]rawResource, 0, scopes)
}

func (r *rawSpans) put(b []byte) blob {
	off := len(r.buf)
	r.buf = append(r.buf, b...)
	return blob{off: int32(off), n: int32(len(b))}
}

func (r *rawSpans) at(b blob) []byte { return r.buf[b.off : b.off+b.n : b.off+b.n] }

func (r *rawSpans) addResource(res *otlpscan.Resource) int32 {
	r.resources = append(r.resources, rawResource{raw: r.put(res.Raw), schema: r.put(res.SchemaURL)})
	return int32(len(r.resources) - 1)
}

func (r *rawSpans) addScope(sc *otlpscan.Scope, resource int32) int32 {
	r.scopes = append(r.scopes, rawScope{raw: r.put(sc.Raw), schema: r.put(sc.SchemaURL), resource: resource})
	return int32(len(r.scopes) - 1)
}

func (r *rawSpans) addSpan(s *otlpscan.Span, scope int32) {
	r.spans = append(r.spans, rawSpan{raw: r.put(s.Raw), scope: scope})
}

// encodeParts writes the spans of parts as one OTLP request and decodes it
// into pdata for the next consumer: only kept spans ever pay for a full
// decode. The parts stay where they are; their bytes are copied once, into
// the request.
func encodeParts(parts []*rawSpans, enc *otlpscan.Encoder, scratch *rawScratch) (ptrace.Traces, error) {
	scratch.resources, scratch.scopes, scratch.spans = scratch.resources[:0], scratch.scopes[:0], scratch.spans[:0]
	for _, r := range parts {
		res0, scope0 := len(scratch.resources), len(scratch.scopes)
		for _, x := range r.resources {
			scratch.resources = append(scratch.resources, otlpscan.Resource{Raw: r.at(x.raw), SchemaURL: r.at(x.schema)})
		}
		for _, x := range r.scopes {
			scratch.scopes = append(scratch.scopes, otlpscan.Scope{Raw: r.at(x.raw), SchemaURL: r.at(x.schema), Resource: res0 + int(x.resource)})
		}
		for _, x := range r.spans {
			scratch.spans = append(scratch.spans, otlpscan.Span{Raw: r.at(x.raw), Scope: scope0 + int(x.scope),
				Resource: res0 + int(r.scopes[x.scope].resource)})
		}
	}
	scratch.out = enc.Append(scratch.out[:0], scratch.resources, scratch.scopes, scratch.spans)
	n := len(scratch.spans)
	clear(scratch.resources)
	clear(scratch.scopes)
	clear(scratch.spans)
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(scratch.out)
	if err != nil {
		// Every byte here passed Scan, which accepts exactly what pdata
		// accepts: this is a bug, not bad input.
		return ptrace.Traces{}, fmt.Errorf("decoding %d kept spans: %w", n, err)
	}
	return td, nil
}

// rawScratch is a shard's reusable space for encode.
type rawScratch struct {
	resources []otlpscan.Resource
	scopes    []otlpscan.Scope
	spans     []otlpscan.Span
	out       []byte
}

package tailsampler

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/ingest/otlpscan"
)

// rawSpans holds spans as their OTLP wire bytes, copied out of the request
// into one arena, with tables indexing it by offset. A buffered span costs
// its encoded size (~340 bytes for a 10-attribute span) plus a table entry,
// several times less than its pdata form, and nothing is decoded until a
// kept trace leaves the sampler (see encode).
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

// Memory accounting: the arena and tables at half again their length, for
// the slack append leaves when a trace's chunks are merged, plus the
// bookkeeping of a chunk that becomes a trace (trace struct, map entry, list
// elements), refunded when the chunk merges into a buffered trace instead.
const (
	rawSpanEntry  = 16
	rawTableEntry = 40
	chunkOverhead = 320
)

// bytes is the memory a chunk holding r accounts for.
func (r *rawSpans) bytes() int64 {
	n := int64(len(r.buf)) + int64(len(r.spans))*rawSpanEntry + int64(len(r.resources)+len(r.scopes))*rawTableEntry
	return n + n/2 + chunkOverhead
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

// merge appends o's spans to r, shifting o's offsets and indexes.
func (r *rawSpans) merge(o *rawSpans) {
	if len(o.spans) == 0 {
		return
	}
	off := int32(len(r.buf))
	res0, scope0 := int32(len(r.resources)), int32(len(r.scopes))
	r.buf = append(r.buf, o.buf...)
	shift := func(b blob) blob { return blob{off: b.off + off, n: b.n} }
	for _, x := range o.resources {
		r.resources = append(r.resources, rawResource{raw: shift(x.raw), schema: shift(x.schema)})
	}
	for _, x := range o.scopes {
		r.scopes = append(r.scopes, rawScope{raw: shift(x.raw), schema: shift(x.schema), resource: x.resource + res0})
	}
	for _, x := range o.spans {
		r.spans = append(r.spans, rawSpan{raw: shift(x.raw), scope: x.scope + scope0})
	}
}

// encode writes r as an OTLP request and decodes it into pdata for the next
// consumer: only kept spans ever pay for a full decode.
func (r *rawSpans) encode(enc *otlpscan.Encoder, scratch *rawScratch) (ptrace.Traces, error) {
	scratch.resources = scratch.resources[:0]
	for _, x := range r.resources {
		scratch.resources = append(scratch.resources, otlpscan.Resource{Raw: r.at(x.raw), SchemaURL: r.at(x.schema)})
	}
	scratch.scopes = scratch.scopes[:0]
	for _, x := range r.scopes {
		scratch.scopes = append(scratch.scopes, otlpscan.Scope{Raw: r.at(x.raw), SchemaURL: r.at(x.schema), Resource: int(x.resource)})
	}
	scratch.spans = scratch.spans[:0]
	for _, x := range r.spans {
		scratch.spans = append(scratch.spans, otlpscan.Span{Raw: r.at(x.raw), Scope: int(x.scope), Resource: int(r.scopes[x.scope].resource)})
	}
	scratch.out = enc.Append(scratch.out[:0], scratch.resources, scratch.scopes, scratch.spans)
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(scratch.out)
	if err != nil {
		// Every byte here passed Scan, which accepts exactly what pdata
		// accepts: this is a bug, not bad input.
		return ptrace.Traces{}, fmt.Errorf("decoding %d kept spans: %w", len(r.spans), err)
	}
	clear(scratch.resources)
	clear(scratch.scopes)
	clear(scratch.spans)
	return td, nil
}

// rawScratch is a shard's reusable space for encode.
type rawScratch struct {
	resources []otlpscan.Resource
	scopes    []otlpscan.Scope
	spans     []otlpscan.Span
	out       []byte
}

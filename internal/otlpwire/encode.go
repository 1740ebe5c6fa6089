package otlpwire

import "slices"

// Tags of the length-delimited fields the encoder writes: field 1, 2 or 3
// with wire type 2. They are the same numbers in ExportTraceServiceRequest
// (1 resource_spans), ResourceSpans (1 resource, 2 scope_spans, 3 schema_url)
// and ScopeSpans (1 scope, 2 spans, 3 schema_url).
const (
	tag1 = 1<<3 | byte(wtLen)
	tag2 = 2<<3 | byte(wtLen)
	tag3 = 3<<3 | byte(wtLen)
)

// AppendRequest appends to dst an ExportTraceServiceRequest holding spans,
// each under its resource and scope: one ResourceSpans per distinct
// Span.Resource and, within it, one ScopeSpans per distinct Span.Scope, both
// in first-seen order, spans in the order given. Span.Resource and Span.Scope
// index resources and scopes (out of range panics) and decide the grouping;
// Scope.Resource is not consulted. Raw bytes are copied, so
// pdata decodes the result to exactly those spans with their resources,
// scopes and schema URLs. It is how the spans a sampler keeps go back on the
// wire without ever being decoded. See Encoder to reuse the scratch space.
//
// Each ResourceSpans ends with its schema URL and resource, after its
// ScopeSpans: fields may come in any order on the wire and decode alike, and
// there the bytes that repeat from one call to the next for spans of the same
// resource form a tail the caller can store once (Encoder.ResourceTail).
func AppendRequest(dst []byte, resources []Resource, scopes []Scope, spans []Span) []byte {
	var e Encoder
	return e.Append(dst, resources, scopes, spans)
}

// Encoder is AppendRequest with scratch space kept between calls, so that a
// long-lived exporter encodes without allocating. The zero value is ready;
// an Encoder is not safe for concurrent use.
type Encoder struct {
	resGroupOf   []int32 // per resource index: its group + 1, 0 when not seen yet
	scopeGroupOf []int32 // per scope index: its most recent group + 1
	res          []resGroup
	scopes       []scopeGroup
	next         []int32 // per span: the next span of its scope group, -1 at the end
	tail         int     // see ResourceTail
	tailRes      int
}

// resGroup is one ResourceSpans to write.
type resGroup struct {
	res                   int
	firstScope, lastScope int32 // list of scope groups, linked by scopeGroup.next
	size                  int   // encoded ResourceSpans, without its tag and length
}

// scopeGroup is one ScopeSpans to write.
type scopeGroup struct {
	scope               int
	resGroup            int32
	next                int32 // next scope group of the same resource group
	firstSpan, lastSpan int32 // list of spans, linked by Encoder.next
	size                int   // encoded ScopeSpans, without its tag and length
}

// Append is AppendRequest, reusing e's scratch space.
func (e *Encoder) Append(dst []byte, resources []Resource, scopes []Scope, spans []Span) []byte {
	e.resGroupOf = resetInt32(e.resGroupOf, len(resources))
	e.scopeGroupOf = resetInt32(e.scopeGroupOf, len(scopes))
	e.next = resetInt32(e.next, len(spans))
	e.res, e.scopes = e.res[:0], e.scopes[:0]
	e.tail, e.tailRes = 0, -1

	for i := range spans {
		sp := &spans[i]
		rg := e.resGroupOf[sp.Resource] - 1
		if rg < 0 {
			rg = int32(len(e.res))
			e.res = append(e.res, resGroup{res: sp.Resource, firstScope: -1, lastScope: -1})
			e.resGroupOf[sp.Resource] = rg + 1
		}
		sg := e.scopeGroupOf[sp.Scope] - 1
		if sg < 0 || e.scopes[sg].resGroup != rg {
			// Only spans that disagree with their scope about the resource
			// get here with sg >= 0; look for their own group.
			sg = e.findScopeGroup(rg, sp.Scope)
			if sg < 0 {
				sg = int32(len(e.scopes))
				e.scopes = append(e.scopes, scopeGroup{scope: sp.Scope, resGroup: rg, next: -1, firstSpan: -1, lastSpan: -1})
				if g := &e.res[rg]; g.firstScope < 0 {
					g.firstScope = sg
				} else {
					e.scopes[g.lastScope].next = sg
				}
				e.res[rg].lastScope = sg
			}
			e.scopeGroupOf[sp.Scope] = sg + 1
		}
		g := &e.scopes[sg]
		if g.firstSpan < 0 {
			g.firstSpan = int32(i)
		} else {
			e.next[g.lastSpan] = int32(i)
		}
		g.lastSpan = int32(i)
		e.next[i] = -1
		g.size += fieldSize(len(sp.Raw))
	}

	// Sizes first: every message is length-prefixed, and the prefix of a
	// ResourceSpans depends on the size of all it holds.
	total := 0
	for i := range e.scopes {
		g := &e.scopes[i]
		sc := &scopes[g.scope]
		g.size += optFieldSize(len(sc.Raw)) + optFieldSize(len(sc.SchemaURL))
		e.res[g.resGroup].size += fieldSize(g.size)
	}
	for i := range e.res {
		g := &e.res[i]
		res := &resources[g.res]
		g.size += optFieldSize(len(res.Raw)) + optFieldSize(len(res.SchemaURL))
		total += fieldSize(g.size)
	}

	dst = slices.Grow(dst, total)
	for i := range e.res {
		g := &e.res[i]
		res := &resources[g.res]
		dst = appendField(dst, tag1, g.size)
		for sg := g.firstScope; sg >= 0; sg = e.scopes[sg].next {
			s := &e.scopes[sg]
			sc := &scopes[s.scope]
			dst = appendField(dst, tag2, s.size)
			dst = appendOptBytes(dst, tag1, sc.Raw)
			for sp := s.firstSpan; sp >= 0; sp = e.next[sp] {
				raw := spans[sp].Raw
				dst = appendField(dst, tag2, len(raw))
				dst = append(dst, raw...)
			}
			dst = appendOptBytes(dst, tag3, sc.SchemaURL)
		}
		dst = appendOptBytes(dst, tag3, res.SchemaURL)
		dst = appendOptBytes(dst, tag1, res.Raw)
	}
	e.tail, e.tailRes = 0, -1
	if len(e.res) == 1 {
		res := &resources[e.res[0].res]
		e.tail, e.tailRes = optFieldSize(len(res.SchemaURL))+optFieldSize(len(res.Raw)), e.res[0].res
	}
	return dst
}

// ResourceTail describes what the last Append wrote when its spans shared
// one resource: the index of that resource, and the length of the bytes
// ending the output that depend on nothing else (the resource and its schema
// URL). Every Append of spans of that resource ends with the same tail. With
// spans of several resources, or none, it returns -1 and 0.
func (e *Encoder) ResourceTail() (resource, length int) {
	return e.tailRes, e.tail
}

func (e *Encoder) findScopeGroup(rg int32, scope int) int32 {
	for sg := e.res[rg].firstScope; sg >= 0; sg = e.scopes[sg].next {
		if e.scopes[sg].scope == scope {
			return sg
		}
	}
	return -1
}

func resetInt32(s []int32, n int) []int32 {
	s = slices.Grow(s[:0], n)[:n]
	clear(s)
	return s
}

// fieldSize is the encoded size of a length-delimited field of n bytes with
// a one-byte tag.
func fieldSize(n int) int { return 1 + sizeVarint(uint64(n)) + n }

// optFieldSize is fieldSize for a field left out when empty, which decodes
// the same as an empty one.
func optFieldSize(n int) int {
	if n == 0 {
		return 0
	}
	return fieldSize(n)
}

func appendField(dst []byte, tag byte, n int) []byte {
	return appendVarint(append(dst, tag), uint64(n))
}

func appendOptBytes(dst []byte, tag byte, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	return append(appendField(dst, tag, len(b)), b...)
}

package otlpwire

import "slices"

// Span is what routing and the keep rules need from one span, plus the raw
// bytes to keep. The byte slices alias the scanned request: they are valid as
// long as the request's bytes are, and a sampler that holds a span beyond
// that copies Raw (and Name, if it needs it) first.
type Span struct {
	// TraceID, SpanID and ParentSpanID are zero when absent or empty.
	TraceID      [16]byte
	SpanID       [8]byte
	ParentSpanID [8]byte
	// Name is the span name.
	Name []byte
	// Start and End are the start and end times, unix nanoseconds.
	Start, End uint64
	// Kind is the OTLP SpanKind: 0 unspecified, 1 internal, 2 server,
	// 3 client, 4 producer, 5 consumer.
	Kind int32
	// StatusCode is the OTLP status code: 0 unset, 1 ok, 2 error.
	StatusCode int32
	// Marked reports that Request.Mark marks the span.
	Marked bool
	// Raw is the encoded Span message, without its tag and length.
	Raw []byte
	// Resource and Scope index Request.Resources and Request.Scopes.
	Resource, Scope int
}

// StatusCode values of Span.StatusCode.
const (
	StatusUnset int32 = 0
	StatusOK    int32 = 1
	StatusError int32 = 2
)

// Valid reports whether the span has a non-zero trace id and span id. OTLP
// calls spans without them invalid; Scan still returns them, so that the
// caller decides, counts and logs the drop rather than losing it silently.
func (s *Span) Valid() bool {
	return s.TraceID != [16]byte{} && s.SpanID != [8]byte{}
}

// Resource is one ResourceSpans' resource.
type Resource struct {
	// Raw is the encoded Resource message; empty when the ResourceSpans has
	// none. A ResourceSpans that repeats the field (protobuf merges the
	// occurrences) gets them concatenated, which is the same message.
	Raw []byte
	// ServiceName is the first service.name attribute rendered as pdata's
	// Value.AsString would (the tailsampler and the store key services by
	// that); empty when absent, and also when the value is an array or a
	// map, which pdata renders as JSON.
	ServiceName []byte
	// HostName names the host: the value of the first of Request.HostKeys
	// that the resource sets (the first attribute of that key, not empty),
	// rendered like ServiceName (an array or map value does not count);
	// empty when none is set.
	HostName []byte
	// Values are the resource's values of Request.ResourceKeys, in that
	// order: the first attribute of each key, rendered like ServiceName;
	// nil when the resource does not set it (or sets an array or a map).
	Values [][]byte
	// SchemaURL is the ResourceSpans' schema_url.
	SchemaURL []byte
}

// Scope is one ScopeSpans' instrumentation scope.
type Scope struct {
	// Raw is the encoded InstrumentationScope message; empty when absent.
	Raw []byte
	// SchemaURL is the ScopeSpans' schema_url.
	SchemaURL []byte
	// Resource indexes Request.Resources: the resource the scope belongs to.
	Resource int
}

// Request is a scanned ExportTraceServiceRequest: one Resource per
// ResourceSpans, one Scope per ScopeSpans and one Span per span, in request
// order. Reuse one (from a sync.Pool, say) so that scanning allocates nothing
// once its slices have grown to the size of the requests seen.
type Request struct {
	Resources []Resource
	Scopes    []Scope
	Spans     []Span

	// HostKeys are the resource attributes that name a host, best first (at
	// most maxHostKeys count), set by the caller before Scan: Resource.HostName
	// is read from them. None: HostName stays empty.
	HostKeys []string
	// Mark, set by the caller before Scan, says which spans are Marked;
	// nil marks none.
	Mark *MarkRule
	// ResourceKeys are resource attributes the caller wants the values of
	// (Resource.Values), at most maxResourceKeys, set before Scan.
	ResourceKeys []string
	// SpanKeys are span attributes the caller wants the values of
	// (SpanValues), at most maxSpanKeys, set before Scan; to change them,
	// set another slice rather than change this one in place.
	SpanKeys []string

	// spanKeysByLen are the indexes of SpanKeys by key length:
	// spanKeysByLen[byLenStart[n]:byLenStart[n+1]] are those n bytes long
	// (n < maxKeyLen), so that an attribute is compared with the keys of
	// its length only, and most with none.
	spanKeysByLen []uint8
	byLenStart    [maxKeyLen + 1]uint8
	indexed       []string // the SpanKeys they index

	// values backs the Values of every resource; spanValues holds the
	// SpanKeys values of each span, len(SpanKeys) a span.
	values, spanValues [][]byte

	// scratch holds the rare values that cannot alias the request: merged
	// repeated messages, non-string service names. Slices of it stay valid
	// when it grows, since each points into the array it was written to.
	scratch []byte
}

// Reset empties r and drops its references to the last request's bytes, so
// that a pooled Request does not keep a large request alive.
func (r *Request) Reset() {
	clear(r.Resources)
	clear(r.Scopes)
	clear(r.Spans)
	clear(r.values)
	clear(r.spanValues)
	r.Resources, r.Scopes, r.Spans, r.scratch, r.values = r.Resources[:0], r.Scopes[:0], r.Spans[:0], r.scratch[:0], r.values[:0]
	r.spanValues = r.spanValues[:0]
}

// SpanValues are the values of SpanKeys on span i of r.Spans, in that order:
// the first attribute of each key, rendered like Resource.ServiceName; nil
// when the span does not set it (or sets an array or a map). Nil when there
// are no SpanKeys.
func (r *Request) SpanValues(i int) [][]byte {
	n := r.spanKeys()
	if n == 0 {
		return nil
	}
	return r.spanValues[i*n : (i+1)*n : (i+1)*n]
}

// maxSpanKeys bounds Request.SpanKeys; maxKeyLen bounds their length.
const (
	maxSpanKeys = 16
	maxKeyLen   = 128
)

// indexSpanKeys fills spanKeysByLen and byLenStart from SpanKeys, unless
// they were filled from the same slice. A key of maxKeyLen bytes or more is
// never found.
func (r *Request) indexSpanKeys() {
	keys := r.SpanKeys[:r.spanKeys()]
	if len(keys) == len(r.indexed) && (len(keys) == 0 || &keys[0] == &r.indexed[0]) {
		return
	}
	r.indexed = keys
	r.byLenStart = [maxKeyLen + 1]uint8{}
	for _, key := range keys {
		if n := len(key); n < maxKeyLen {
			r.byLenStart[n+1]++
		}
	}
	for n := 1; n <= maxKeyLen; n++ {
		r.byLenStart[n] += r.byLenStart[n-1]
	}
	r.spanKeysByLen = append(r.spanKeysByLen[:0], make([]uint8, r.byLenStart[maxKeyLen])...)
	next := r.byLenStart
	for k, key := range keys {
		if len(key) < maxKeyLen {
			r.spanKeysByLen[next[len(key)]] = uint8(k)
			next[len(key)]++
		}
	}
}

func (r *Request) spanKeys() int { return min(len(r.SpanKeys), maxSpanKeys) }

// Scan parses req, the bytes of an OTLP ExportTraceServiceRequest, into r,
// replacing what r held. It accepts exactly what pdata's unmarshaler
// accepts; on malformed input it returns an *Error (wrapping ErrMalformed)
// that names the message, field and byte offset, and r's contents are
// unspecified. Spans from the deprecated field 1000 of ResourceSpans
// (instrumentation_library_spans) are read when the ResourceSpans has no
// scope_spans, as the Collector's receiver does.
func Scan(req []byte, r *Request) error {
	if r.Mark != nil {
		r.Mark.prepare()
	}
	r.indexSpanKeys()
	r.Resources, r.Scopes, r.Spans, r.scratch, r.values = r.Resources[:0], r.Scopes[:0], r.Spans[:0], r.scratch[:0], r.values[:0]
	r.spanValues = r.spanValues[:0]
	if err := r.scanRequest(req); err != nil {
		return err
	}
	return nil
}

func (r *Request) scanRequest(b []byte) *Error {
	n := 0
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(at, requestDesc.name(fl.num), f)
		}
		if err := requestDesc.check(fl.num, fl.wt, at); err != nil {
			return err
		}
		i = next
		if fl.num == 1 {
			if err := r.scanResourceSpans(b[fl.s:fl.e], fl.s); err != nil {
				return err.in("resource_spans", n)
			}
			n++
		}
	}
	return nil
}

// Field numbers of ResourceSpans.
const (
	fieldScopeSpans           = 2
	fieldDeprecatedScopeSpans = 1000 // instrumentation_library_spans, still read by pdata
)

// hasField reports whether message b has field num at its top level. It
// stops quietly at malformed data: the full pass reports that.
func hasField(b []byte, num int32) bool {
	for i := 0; i < len(b); {
		fl, next, f := readField(b, i)
		if f != faultNone {
			return false
		}
		if fl.num == num {
			return true
		}
		i = next
	}
	return false
}

func (r *Request) scanResourceSpans(b []byte, base int) *Error {
	ri := len(r.Resources)
	r.Resources = append(r.Resources, Resource{})
	if n := min(len(r.ResourceKeys), maxResourceKeys); n > 0 {
		start := len(r.values)
		r.values = grow(r.values, n)
		r.Resources[ri].Values = r.values[start : start+n : start+n]
	}
	// pdata's migration uses the deprecated scope spans only when there are
	// no current ones, wherever they sit in the message, hence a first look.
	hasScopeSpans := hasField(b, fieldScopeSpans)
	var nRes, nScope, nDeprecated int
	var st resourceState
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			name := resourceSpansDesc.name(fl.num)
			if fl.num == fieldDeprecatedScopeSpans {
				name = "deprecated_scope_spans"
			}
			return faultErr(base+at, name, f)
		}
		if err := resourceSpansDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		switch fl.num {
		case 1:
			raw := b[fl.s:fl.e]
			res := &r.Resources[ri]
			if nRes == 0 {
				res.Raw = raw
			} else {
				res.Raw = r.concat(res.Raw, raw)
			}
			nRes++
			if err := r.scanResource(raw, base+fl.s, ri, &st); err != nil {
				return err.in("resource", -1)
			}
		case fieldScopeSpans, fieldDeprecatedScopeSpans:
			name, idx := "scope_spans", &nScope
			if fl.num == fieldDeprecatedScopeSpans {
				name, idx = "deprecated_scope_spans", &nDeprecated
				if fl.wt != wtLen {
					return wireTypeErr(base+at, name, fl.wt, wtLen)
				}
			}
			nScopes, nSpans := len(r.Scopes), len(r.Spans)
			if err := r.scanScopeSpans(b[fl.s:fl.e], base+fl.s, ri); err != nil {
				return err.in(name, *idx)
			}
			if keep := (fl.num == fieldScopeSpans) == hasScopeSpans; !keep {
				// Validated, as pdata parses it, but superseded.
				r.Scopes, r.Spans = r.Scopes[:nScopes], r.Spans[:nSpans]
				r.spanValues = r.spanValues[:nSpans*r.spanKeys()]
			}
			*idx++
		case 3:
			r.Resources[ri].SchemaURL = b[fl.s:fl.e]
		}
	}
	return nil
}

// concat returns a followed by b in r.scratch: protobuf merges repeated
// occurrences of a singular message field, and concatenating their bytes
// encodes that merge.
func (r *Request) concat(a, b []byte) []byte {
	start := len(r.scratch)
	r.scratch = append(r.scratch, a...)
	r.scratch = append(r.scratch, b...)
	return r.scratch[start:len(r.scratch):len(r.scratch)]
}

// resourceState is what scanResource has found so far in a ResourceSpans
// (whose resource field may repeat).
type resourceState struct {
	foundService bool
	valueSeen    uint32                // bit k: ResourceKeys[k] seen
	hostRank     int                   // rank (hostKeyRank) of the attribute HostName came from; 0: none yet
	hostSeen     [maxHostKeys + 1]bool // by rank: only the first attribute of a key counts, as with pdata's Map.Get
}

// maxHostKeys bounds Request.HostKeys.
const maxHostKeys = 4

// hostKeyRank ranks key among r.HostKeys, the best highest; 0 when it is
// not one of them.
func (r *Request) hostKeyRank(key []byte) int {
	for i, k := range r.HostKeys[:min(len(r.HostKeys), maxHostKeys)] {
		if string(key) == k {
			return maxHostKeys - i
		}
	}
	return 0
}

// grow extends s by n nil values, allocating only when its capacity is
// short (append of a made slice allocates under the race detector).
func grow(s [][]byte, n int) [][]byte {
	start := len(s)
	s = slices.Grow(s, n)[:start+n]
	clear(s[start:])
	return s
}

// maxResourceKeys bounds Request.ResourceKeys.
const maxResourceKeys = 16

// resourceKeyIndex is key's index in r.ResourceKeys, -1 when it is not one.
func (r *Request) resourceKeyIndex(key []byte) int {
	for k, want := range r.ResourceKeys[:min(len(r.ResourceKeys), maxResourceKeys)] {
		if string(key) == want {
			return k
		}
	}
	return -1
}

func (r *Request) scanResource(b []byte, base, ri int, st *resourceState) *Error {
	var nAttr, nRefs int
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, resourceDesc.name(fl.num), f)
		}
		if err := resourceDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		switch fl.num {
		case 1:
			var kv keyValue
			if err := parseKeyValue(b[fl.s:fl.e], base+fl.s, 0, &kv); err != nil {
				return err.in("attributes", nAttr)
			}
			if !st.foundService && string(kv.key) == serviceNameKey {
				st.foundService = true
				r.Resources[ri].ServiceName = r.asString(&kv.val)
			} else if rank := r.hostKeyRank(kv.key); rank > 0 && !st.hostSeen[rank] {
				st.hostSeen[rank] = true
				// An empty value does not name the host.
				if v := r.asString(&kv.val); len(v) > 0 && rank > st.hostRank {
					st.hostRank = rank
					r.Resources[ri].HostName = v
				}
			}
			if k := r.resourceKeyIndex(kv.key); k >= 0 && st.valueSeen&(1<<k) == 0 {
				st.valueSeen |= 1 << k
				r.Resources[ri].Values[k] = r.asString(&kv.val)
			}
			nAttr++
		case 3:
			if err := validate(b[fl.s:fl.e], base+fl.s, entityRefDesc); err != nil {
				return err.in("entity_refs", nRefs)
			}
			nRefs++
		}
	}
	return nil
}

// asString renders v as pdata's Value.AsString would, nil when that would be
// JSON (arrays, maps).
func (r *Request) asString(v *anyValue) []byte {
	if v.typ == valStr {
		return v.raw
	}
	start := len(r.scratch)
	var ok bool
	r.scratch, ok = appendAsString(r.scratch, v)
	if !ok {
		r.scratch = r.scratch[:start]
		return nil
	}
	return r.scratch[start:len(r.scratch):len(r.scratch)]
}

// validate checks the wire types of a message none of whose fields is a
// message (EntityRef).
func validate(b []byte, base int, desc *msgDesc) *Error {
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, desc.name(fl.num), f)
		}
		if err := desc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
	}
	return nil
}

func (r *Request) scanScopeSpans(b []byte, base, ri int) *Error {
	si := len(r.Scopes)
	r.Scopes = append(r.Scopes, Scope{Resource: ri})
	var nScope, nSpans int
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, scopeSpansDesc.name(fl.num), f)
		}
		if err := scopeSpansDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		switch fl.num {
		case 1:
			raw := b[fl.s:fl.e]
			sc := &r.Scopes[si]
			if nScope == 0 {
				sc.Raw = raw
			} else {
				sc.Raw = r.concat(sc.Raw, raw)
			}
			nScope++
			if err := scanScope(raw, base+fl.s); err != nil {
				return err.in("scope", -1)
			}
		case 2:
			raw := b[fl.s:fl.e]
			r.Spans = append(r.Spans, Span{Raw: raw, Resource: ri, Scope: si})
			var vals [][]byte
			if n := r.spanKeys(); n > 0 {
				start := len(r.spanValues)
				r.spanValues = grow(r.spanValues, n)
				vals = r.spanValues[start : start+n : start+n]
			}
			if err := r.scanSpan(raw, base+fl.s, &r.Spans[len(r.Spans)-1], vals); err != nil {
				return err.in("spans", nSpans)
			}
			nSpans++
		case 3:
			r.Scopes[si].SchemaURL = b[fl.s:fl.e]
		}
	}
	return nil
}

// scanScope validates an InstrumentationScope.
func scanScope(b []byte, base int) *Error {
	nAttr := 0
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, scopeDesc.name(fl.num), f)
		}
		if err := scopeDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		if fl.num == 3 {
			var kv keyValue
			if err := parseKeyValue(b[fl.s:fl.e], base+fl.s, 0, &kv); err != nil {
				return err.in("attributes", nAttr)
			}
			nAttr++
		}
	}
	return nil
}

// scanSpan reads one Span message into sp (which holds Raw, Resource and
// Scope already), marking it by r.Mark (nil: never), and the values of
// r.SpanKeys into vals. It is the hot loop: one pass, no allocation.
func (r *Request) scanSpan(b []byte, base int, sp *Span, vals [][]byte) *Error {
	var (
		statusMsg          []byte
		marked             bool
		nAttr, nEv, nLinks int
		valueSeen          uint16 // bit k: SpanKeys[k] seen
	)
	mark := r.Mark
	for i := 0; i < len(b); {
		at := i
		var fl field
		// Most span fields are short length-delimited ones (attributes,
		// ids, name): read those here rather than in a call.
		if c := b[i]; c&7 == byte(wtLen) && c >= 8 && c < 0x80 && len(b)-i >= 2 && b[i+1] < 0x80 && i+2+int(b[i+1]) <= len(b) {
			fl = field{num: int32(c >> 3), wt: wtLen, s: i + 2, e: i + 2 + int(b[i+1])}
			i = fl.e
		} else {
			var f fault
			if fl, i, f = readField(b, i); f != faultNone {
				return faultErr(base+at, spanDesc.name(fl.num), f)
			}
		}
		if spanDesc.bad(fl.num, fl.wt) {
			return spanDesc.check(fl.num, fl.wt, base+at)
		}
		switch fl.num {
		case 1:
			switch fl.e - fl.s {
			case 16:
				sp.TraceID = [16]byte(b[fl.s:fl.e])
			case 0:
				sp.TraceID = [16]byte{}
			default:
				return idLenErr(base+at, "trace_id", fl.e-fl.s, 16)
			}
		case 2, 4:
			id := &sp.SpanID
			if fl.num == 4 {
				id = &sp.ParentSpanID
			}
			switch fl.e - fl.s {
			case 8:
				*id = [8]byte(b[fl.s:fl.e])
			case 0:
				*id = [8]byte{}
			default:
				return idLenErr(base+at, spanDesc.names[fl.num], fl.e-fl.s, 8)
			}
		case 5:
			sp.Name = b[fl.s:fl.e]
		case 6:
			sp.Kind = int32(fl.v)
		case 7:
			sp.Start = fl.v
		case 8:
			sp.End = fl.v
		case 9:
			var kv keyValue
			if err := parseKeyValue(b[fl.s:fl.e], base+fl.s, 0, &kv); err != nil {
				return err.in("attributes", nAttr)
			}
			if !marked && mark != nil && mayMark(mark.spanLens, kv.key) {
				marked = mark.spanAttr(&kv)
			}
			if n := len(kv.key); n < maxKeyLen && r.byLenStart[n] < r.byLenStart[n+1] {
				for _, k := range r.spanKeysByLen[r.byLenStart[n]:r.byLenStart[n+1]] {
					if valueSeen&(1<<k) == 0 && string(kv.key) == r.SpanKeys[k] {
						valueSeen |= 1 << k
						vals[k] = r.asString(&kv.val)
					}
				}
			}
			nAttr++
		case 11:
			m, err := scanEvent(b[fl.s:fl.e], base+fl.s, mark)
			if err != nil {
				return err.in("events", nEv)
			}
			marked = marked || m
			nEv++
		case 13:
			if err := scanLink(b[fl.s:fl.e], base+fl.s); err != nil {
				return err.in("links", nLinks)
			}
			nLinks++
		case 15:
			// A repeated status merges into the one before, as in pdata.
			if err := scanStatus(b[fl.s:fl.e], base+fl.s, sp, &statusMsg); err != nil {
				return err.in("status", -1)
			}
		}
	}
	sp.Marked = marked || mark != nil && mark.names(statusMsg)
	return nil
}

func scanStatus(b []byte, base int, sp *Span, msg *[]byte) *Error {
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, statusDesc.name(fl.num), f)
		}
		if err := statusDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		switch fl.num {
		case 2:
			*msg = b[fl.s:fl.e]
		case 3:
			sp.StatusCode = int32(fl.v)
		}
	}
	return nil
}

// scanEvent validates an Event and reports whether it marks its span: it is
// named mark.EventName and one of its attributes marks (mark.eventAttr).
func scanEvent(b []byte, base int, mark *MarkRule) (bool, *Error) {
	var (
		name   []byte
		marked bool
		nAttr  int
	)
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return false, faultErr(base+at, eventDesc.name(fl.num), f)
		}
		if err := eventDesc.check(fl.num, fl.wt, base+at); err != nil {
			return false, err
		}
		i = next
		switch fl.num {
		case 2:
			name = b[fl.s:fl.e]
		case 3:
			var kv keyValue
			if err := parseKeyValue(b[fl.s:fl.e], base+fl.s, 0, &kv); err != nil {
				return false, err.in("attributes", nAttr)
			}
			marked = marked || mark != nil && mark.eventAttr(&kv)
			nAttr++
		}
	}
	// The name may come after the attributes, so it is checked last.
	return marked && string(name) == mark.EventName, nil
}

// scanLink validates a Link: nothing in it matters to the rules, but its ids
// must have the sizes pdata requires.
func scanLink(b []byte, base int) *Error {
	nAttr := 0
	for i := 0; i < len(b); {
		at := i
		fl, next, f := readField(b, i)
		if f != faultNone {
			return faultErr(base+at, linkDesc.name(fl.num), f)
		}
		if err := linkDesc.check(fl.num, fl.wt, base+at); err != nil {
			return err
		}
		i = next
		switch fl.num {
		case 1, 2:
			want := 16
			if fl.num == 2 {
				want = 8
			}
			if n := fl.e - fl.s; n != 0 && n != want {
				return idLenErr(base+at, linkDesc.names[fl.num], n, want)
			}
		case 4:
			var kv keyValue
			if err := parseKeyValue(b[fl.s:fl.e], base+fl.s, 0, &kv); err != nil {
				return err.in("attributes", nAttr)
			}
			nAttr++
		}
	}
	return nil
}

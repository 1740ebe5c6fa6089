// Package otlpwire reads OTLP trace export requests without decoding them.
//
// The OpenTelemetry Collector's OTLP receiver unmarshals every request into
// pdata, allocating for every span, and a tail sampler then drops nearly all
// of those spans, so nearly all of that work is thrown away
// (docs/benchmarks.md has the figures). Scan instead walks the protobuf wire
// format once, reads only what routing, the keep rules and RED need (ids,
// times, status, service.name, the host, the values of the attributes the
// caller names, whether the caller's MarkRule marks the span) and keeps each
// span as a slice of the request's own bytes: no allocation per span, and the
// raw span is several times smaller to buffer than its pdata form. The spans a sampler keeps are
// written back as a request with AppendRequest (or an Encoder), copying bytes;
// only those are ever decoded in full, downstream.
//
// Scan accepts exactly the requests that pdata v1.71 accepts (the
// Collector's receiver path, ptraceotlp.ExportRequest.UnmarshalProto): it
// validates wire types, lengths and id sizes of every field pdata knows,
// including the ones it does not extract, down to nested attribute values.
// That equivalence, checked by FuzzScan, is what makes forwarding raw bytes
// safe: whatever Scan let in, the exporter's full decode will read back, and
// a request the Collector would reject with 400 is rejected here too.
//
// The caller says which resource attributes name a host (Request.HostKeys)
// and which spans to mark (Request.Mark): the sampler marks timeouts by the
// rule of internal/model, and the tests hold the marks to that rule's answers
// on decoded spans.
package otlpwire

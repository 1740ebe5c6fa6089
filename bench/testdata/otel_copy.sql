-- Loads the spans BenchmarkStore wrote through tracesift's writer into the
-- exporter's table as its exporter would have written them: the same span,
-- resource and scope fields, span kinds and status codes spelled as it
-- spells them (traceutil.SpanKindStr, StatusCodeStr: Server, Error, …), no
-- events or links (the load has none). The lookup table fills through its
-- materialized view, as with the exporter's own inserts.
INSERT INTO ${otel}.otel_traces
    (Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName,
     ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage)
SELECT
    timestamp, trace_id, span_id, parent_span_id, trace_state, name, initcap(kind), service,
    resource, scope_name, scope_version, attributes, duration_ns, initcap(lower(status_code)), status_message
FROM ${db}.spans

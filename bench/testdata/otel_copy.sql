-- Loads the spans BenchmarkStore wrote through tracesift's writer into the
-- exporter's table as its exporter would have written them: the same span,
-- resource and scope fields, span kinds and status codes spelled as it
-- spells them (traceutil.SpanKindStr, StatusCodeStr: Server, Error, …), no
-- events or links (the load has none), span and parent ids in hex (the
-- halves of tracesift's ids). Each span's resource is tracesift's
-- resources row that the span names. The lookup table fills through its
-- materialized view, as with the exporter's own inserts.
INSERT INTO ${otel}.otel_traces
    (Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName,
     ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage)
SELECT
    timestamp, trace_id, lower(hex(substring(ids, 1, 8))),
    if(substring(ids, 9, 8) = unhex('0000000000000000'), '', lower(hex(substring(ids, 9, 8)))), trace_state, name, initcap(kind), service,
    if(s.resource_id = 0, s.resource, r.attributes), scope_name, scope_version, s.attributes, duration_ns,
    initcap(lower(status_code)), status_message
FROM ${db}.spans AS s
LEFT JOIN
(
    SELECT resource_id, any(attributes) AS attributes FROM ${db}.resources GROUP BY resource_id
) AS r ON s.resource_id = r.resource_id

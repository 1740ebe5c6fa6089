-- The exporter's documented trace-by-id query (its README, "Find traces with
-- traceID"): the trace's window from the lookup table, then its spans by the
-- TraceId bloom filter inside that window.
WITH
    {trace_id:String} AS trace_id,
    (SELECT min(Start) FROM ${db}.otel_traces_trace_id_ts WHERE TraceId = trace_id) AS start,
    (SELECT max(End) + 1 FROM ${db}.otel_traces_trace_id_ts WHERE TraceId = trace_id) AS end
SELECT
    Timestamp,
    TraceId,
    SpanId,
    ParentSpanId,
    SpanName,
    SpanKind,
    ServiceName,
    Duration,
    StatusCode,
    StatusMessage,
    toString(SpanAttributes),
    toString(ResourceAttributes),
    toString(Events.Name),
    toString(Links.TraceId)
FROM ${db}.otel_traces
WHERE TraceId = trace_id
  AND Timestamp >= start
  AND Timestamp <= end
LIMIT 100

-- A trace's spans, each once, in time order. Rows are sorted by trace id, so
-- a part has one granule the trace can be in, and the bloom filter of trace
-- ids (schema 009) skips the parts whose granule does not hold it: the read
-- needs no time window. (Bounding it by the window from trace_index cost 3 of
-- its 7 ms on a settled store.) The reader bounds the trace's other reads by
-- its spans' times. Columns keep their table names (decoded into the writer's
-- row type); ORDER BY names spans.timestamp because the select list shadows
-- it with its integer form.
SELECT
    toInt64(toUnixTimestamp64Nano(timestamp)) AS timestamp,
    trace_id, span_id, parent_span_id, trace_state, name, kind, service, host, duration_ns,
    status_code, status_message, attributes, resource, resource_id, scope_name, scope_version, events, links
FROM ${db}.spans
WHERE trace_id = {trace_id:String}
ORDER BY spans.timestamp, span_id
LIMIT 1 BY span_id

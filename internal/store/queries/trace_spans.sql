-- A trace's spans, each once, in time order. Rows are sorted by trace id, so
-- a part has one granule the trace can be in, and the bloom filter of trace
-- ids (schema 009) skips the parts whose granule does not hold it: the read
-- needs no time window. (Bounding it by the trace's window, from the
-- trace_index of schemas before 010, cost 3 of its 7 ms on a settled store.)
-- The reader bounds the trace's other reads by its spans' times. Columns
-- keep their table names (decoded into the writer's row type); ORDER BY names
-- spans.timestamp because the select list shadows it with its integer form.
-- The span's and its parent's ids are the halves of ids (schema 010), in
-- hex; a parent of zeros is none. At most {max_spans} spans, the earliest:
-- the reader asks for one more than it returns, to say the trace was cut.
-- Another tenant's spans of the same id are not the trace's: the tenant is
-- a condition on the rows the trace id finds.
SELECT
    toInt64(toUnixTimestamp64Nano(timestamp)) AS timestamp,
    trace_id,
    lower(hex(substring(ids, 1, 8))) AS span_id,
    if(substring(ids, 9, 8) = unhex('0000000000000000'), '', lower(hex(substring(ids, 9, 8)))) AS parent_span_id,
    trace_state, name, kind, service, host, duration_ns,
    status_code, status_message, attributes, resource, resource_id, scope_name, scope_version, events, links
FROM ${db}.spans
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
ORDER BY spans.timestamp, span_id
LIMIT 1 BY span_id
LIMIT {max_spans:UInt64}

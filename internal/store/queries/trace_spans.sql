-- A trace's spans: the first statement of Reader.GetTrace. Rows are sorted
-- by trace id and the bloom filter of trace ids (schema 009) skips the parts
-- without it: no time window needed. ids (schema 010: the span's id, then
-- its parent's, zeros for none) comes as hex that the reader splits. At most
-- {max_spans}: the reader asks for one more than it returns, to say the
-- trace was cut. The tenant confines the rows the trace id finds.
-- The reader reads first without the lines marked "ordered" and sorts and
-- deduplicates the rows itself (the engine's sort costs more); only when
-- the limit is reached does it read again as written, for the earliest
-- spans, each once (spans.*: the select list shadows both).
-- The settings: for a read of a few rows, moving the trace id to PREWHERE
-- (a pass over it, then the other columns) costs CPU and saves little; the
-- bloom filter of trace ids already skips the granules without the trace.
-- Each part's index is checked in this statement's thread: a point lookup
-- checks one granule's key and filter a part, less work than handing the
-- part to another thread (docs/benchmarks.md).
SELECT
    toUnixTimestamp64Nano(timestamp) AS timestamp, trace_id, hex(ids) AS ids, trace_state, name, kind, service, host,
    duration_ns, status_code, status_message, attributes, resource, resource_id, scope_name, scope_version, events, links
FROM ${db}.spans
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
ORDER BY spans.timestamp, spans.ids -- ordered
LIMIT 1 BY substring(spans.ids, 1, 8) -- ordered
LIMIT {max_spans:UInt64}
SETTINGS optimize_move_to_prewhere = 0, max_threads_for_indexes = 1

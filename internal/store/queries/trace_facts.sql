-- What a trace has besides its spans, in one table sorted by trace id
-- (trace_facts, schemas 020 and 023): Reader.GetTrace runs it at the same
-- time as trace_spans.sql. part says what a row is (the numbers of
-- trace_window.sql); the other parts' columns are at their defaults. The
-- reader deduplicates (rows may be stored twice after a sampler crash) and
-- orders. Confined to the tenant.
--   0 a log line, {max_logs} at most, its resource by id (resource_id; 0
--     for lines that carry theirs). The reader reads first without the line
--     marked "ordered"; only when the limit is reached does it read again as
--     written, for the earliest.
--   1 a finding (its summary in body)
--   2 a host's clock offset (host, offset_ns)
-- LIMIT BY caps the lines alone: every other row is a group of its own.
-- The setting as in trace_spans.sql.
SELECT multiIf(fact = 'line', 0, fact = 'finding', 1, 2) AS part, toUnixTimestamp64Nano(timestamp) AS timestamp,
    toUnixTimestamp64Nano(trace_facts.timestamp) + observed_after_ns AS observed_timestamp,
    trace_id, span_id, severity_text, severity_number, service, host, if(fact = 'finding', summary, body) AS body,
    attributes, resource, scope_name, resource_id, kind, span_ids, subject, value, offset_ns
FROM ${db}.trace_facts
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
ORDER BY part, trace_facts.timestamp, observed_timestamp -- ordered
LIMIT {max_logs:UInt64} BY part, if(part = 0, 0, rowNumberInAllBlocks())
SETTINGS optimize_move_to_prewhere = 0

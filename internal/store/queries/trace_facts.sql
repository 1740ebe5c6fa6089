-- What a trace has besides its spans that its id alone finds (both tables
-- are sorted by trace id): Reader.GetTrace runs it at the same time as
-- trace_spans.sql. part says what a row is (the numbers of trace_window.sql);
-- the other parts' columns are at their defaults. The reader deduplicates
-- (rows may be stored twice after a sampler crash) and orders. Each table
-- read is confined to the tenant.
--   0 a log line (trace_logs, schema 019), {max_logs} at most, its
--     resource by id (resource_id; 0 for lines that carry theirs). The
--     reader reads first without the line marked "ordered"; only when the
--     limit is reached does it read again as written, for the earliest.
--   1 a finding (trace_facts, schema 020; its summary in body)
--   2 a host's clock offset (trace_facts; host, offset_ns)
-- The setting (of the whole statement) as in trace_spans.sql.
SELECT 0 AS part, toUnixTimestamp64Nano(timestamp) AS timestamp,
    toUnixTimestamp64Nano(trace_logs.timestamp) + observed_after_ns AS observed_timestamp,
    trace_id, span_id, severity_text, severity_number, service, host, body, attributes, resource, scope_name,
    resource_id, '' AS kind, [] AS span_ids, '' AS subject, 0 AS value, 0 AS offset_ns
FROM ${db}.trace_logs
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
ORDER BY trace_logs.timestamp, observed_timestamp -- ordered
LIMIT {max_logs:UInt64}
UNION ALL
SELECT if(fact = 'finding', 1, 2), 0, 0, '', '', '', 0, service, host, summary, map(), map(), '', 0, kind, span_ids,
    subject, value, offset_ns
FROM ${db}.trace_facts
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
SETTINGS optimize_move_to_prewhere = 0

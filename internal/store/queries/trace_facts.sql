-- What a trace has besides its spans, in one table sorted by trace id
-- (trace_facts, schemas 020, 023 and 025): Reader.GetTrace runs it at the
-- same time as trace_spans.sql. part says what a row is (the numbers of
-- trace_window.sql); fields holds the rest of it (schema 025), a finding's
-- value too where this version wrote it (findings.go). Each column costs a
-- read of the disk when its block is not cached, so the reader reads first
-- without the line marked "full", and again with it only when a finding
-- lacks its value. The reader deduplicates (rows may be stored twice after a
-- sampler crash) and orders. Confined to the tenant.
--   0 a log line, {max_logs} at most, its resource by id (resource_id; 0
--     for lines that carry theirs). The reader reads first without the line
--     marked "ordered"; only when the limit is reached does it read again as
--     written, for the earliest.
--   1 a finding
--   2 a host's clock offset
-- LIMIT BY caps the lines alone: every other row is a group of its own.
-- The settings as in trace_spans.sql.
SELECT multiIf(fact = 'line', 0, fact = 'finding', 1, 2) AS part, toUnixTimestamp64Nano(timestamp) AS timestamp,
    value, -- full
    fields
FROM ${db}.trace_facts
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
ORDER BY part, trace_facts.timestamp, JSONExtractInt(fields, 'observed_after_ns') -- ordered
LIMIT {max_logs:UInt64} BY part, if(part = 0, 0, rowNumberInAllBlocks())
SETTINGS optimize_move_to_prewhere = 0, max_threads_for_indexes = 1

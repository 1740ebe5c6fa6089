-- A trace's findings and clock offsets, by its id alone (both tables are
-- sorted by trace id): Reader.GetTrace runs it at the same time as
-- trace_spans.sql, as it needs nothing the spans give. part says what a row
-- is (the numbers of trace_window.sql); the other part's columns are at
-- their defaults. The reader deduplicates (rows may be stored twice after a
-- sampler crash) and orders. Each table read is confined to the tenant.
--   1 a finding (its summary in body)
--   2 a host's clock offset (host, offset_ns)
SELECT 1 AS part, service, summary AS body, kind, span_ids, subject, value, '' AS host, 0 AS offset_ns
FROM ${db}.findings
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
UNION ALL
SELECT 2, '', '', '', [], '', 0, host, offset_ns
FROM ${db}.trace_clock
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}

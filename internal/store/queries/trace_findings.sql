-- A trace's findings and clock offsets, in one read (each read of a table
-- costs a millisecond or more, rows or none): a row is a finding (clock =
-- 0), or a host's clock offset (clock = 1: host and offset_ns).
SELECT clock, kind, span_ids, service, subject, value, summary, host, offset_ns
FROM
(
    SELECT 0 AS clock, toString(kind) AS kind, span_ids, toString(service) AS service,
        toString(subject) AS subject, value, summary, '' AS host, toInt64(0) AS offset_ns
    FROM ${db}.findings
    WHERE trace_id = {trace_id:String}
      AND timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
      AND timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})
    UNION ALL
    SELECT 1, '', [], '', '', 0, '', toString(host), offset_ns
    FROM ${db}.trace_clock
    WHERE trace_id = {trace_id:String}
      AND timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
      AND timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})
)
ORDER BY clock, kind, value DESC

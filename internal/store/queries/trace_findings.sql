-- A trace's findings and clock offsets, in one read (each read of a table
-- costs a millisecond or more, rows or none): a row is a finding (clock =
-- 0), or a host's clock offset (clock = 1: host and offset_ns).
-- Rows with clock = 2 are the latest estimate, in the window, of each host
-- pair among the trace's hosts ({hosts}, one a line) that was skewed
-- (host and host_b, offset_ns): the reader keeps those the trace crosses.
-- Findings and offsets are each read once: a trace read again after a
-- sampler crash (distributed mode) may have them inserted twice, alike.
SELECT clock, kind, span_ids, service, subject, value, summary, host, host_b, offset_ns, samples
FROM
(
    SELECT DISTINCT 0 AS clock, toString(kind) AS kind, span_ids, toString(service) AS service,
        toString(subject) AS subject, value, summary, '' AS host, '' AS host_b, toInt64(0) AS offset_ns,
        toUInt32(0) AS samples
    FROM ${db}.findings
    WHERE trace_id = {trace_id:String}
      AND tenant = {tenant:String}
      AND timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
      AND timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})
    UNION ALL
    SELECT DISTINCT 1, '', [], '', '', 0, '', toString(host), '', offset_ns, toUInt32(0)
    FROM ${db}.trace_clock
    WHERE trace_id = {trace_id:String}
      AND tenant = {tenant:String}
      AND timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
      AND timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})
    UNION ALL
    SELECT 2, '', [], '', '', 0, '', toString(host_a), toString(host_b), argMax(offset_ns, timestamp),
        argMax(samples, timestamp)
    FROM ${db}.clock_pairs
    WHERE tenant = {tenant:String}
      AND has(splitByChar('\n', {hosts:String}), toString(host_a))
      AND has(splitByChar('\n', {hosts:String}), toString(host_b))
      AND timestamp >= toDateTime(intDiv({from_ns:Int64}, 1000000000))
      AND timestamp <= toDateTime(intDiv({to_ns:Int64}, 1000000000))
    GROUP BY host_a, host_b
)
ORDER BY clock, kind, value DESC

-- What a trace's window holds besides its spans, in one statement: the
-- second of Reader.GetTrace, once the spans gave the window ({from_ns},
-- {to_ns}, widened by the log window) and hosts ({hosts}, one a line).
-- Each part costs planning time whether it reads rows or not, so the parts
-- are plain and the reader orders. part says what a row is; the other
-- parts' columns are at their defaults (1 and 2, findings and clock offsets,
-- are trace_facts.sql's, read beside the spans):
--   0 a log line, {max_logs} at most, its resource by id (resource_id; 0 for
--     lines that carry theirs, written before schema 017). Unordered: the
--     reader asks for one line more than it keeps, and only for a trace with
--     more reads its earliest again, ordered in the slot before LIMIT
--     (ordering cost every read ~4 ms).
--   3 a skewed pair of the trace's hosts, the latest in the window (host, host_b)
--   4 a resource the reader has not cached (fragments/trace_resources.sql)
-- Each table read is confined to the tenant.
SELECT 0 AS part, toUnixTimestamp64Nano(timestamp) AS timestamp, toUnixTimestamp64Nano(observed_timestamp) AS observed_timestamp,
    trace_id, span_id, severity_text, severity_number, service, host, body, attributes, resource, scope_name,
    '' AS host_b, 0 AS offset_ns, 0 AS samples, resource_id
FROM ${db}.logs
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
  AND logs.timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
  AND logs.timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})
${logs_order}LIMIT {max_logs:UInt64}
${resources}UNION ALL
SELECT 3, 0, 0, '', '', '', 0, '', host_a, '', map(), map(), '', host_b, argMax(offset_ns, timestamp),
    argMax(samples, timestamp), 0
FROM ${db}.clock_pairs
WHERE tenant = {tenant:String}
  AND has(splitByChar('\n', {hosts:String}), host_a)
  AND has(splitByChar('\n', {hosts:String}), host_b)
  AND timestamp >= toDateTime(intDiv({from_ns:Int64}, 1000000000))
  AND timestamp <= toDateTime(intDiv({to_ns:Int64}, 1000000000))
GROUP BY host_a, host_b

-- What a trace's window holds besides its spans and lines: the second
-- statement of Reader.GetTrace, once the spans gave the window ({from_ns},
-- {to_ns}) and hosts ({hosts}, one a line), while trace_facts.sql may still
-- run. part says what a row is; the other part's columns are at their
-- defaults (0 to 2 are trace_facts.sql's):
--   3 a skewed pair of the trace's hosts, the latest in the window (host, host_b)
--   4 a resource the reader has not cached (fragments/trace_resources.sql)
-- Each table read is confined to the tenant.
SELECT 3 AS part, host_a AS host, host_b, argMax(offset_ns, clock_pairs.timestamp) AS offset_ns,
    argMax(samples, clock_pairs.timestamp) AS samples, CAST(map(), 'Map(String, String)') AS attributes,
    toUInt64(0) AS resource_id
FROM ${db}.clock_pairs
WHERE tenant = {tenant:String}
  AND has(splitByChar('\n', {hosts:String}), host_a)
  AND has(splitByChar('\n', {hosts:String}), host_b)
  AND clock_pairs.timestamp >= toDateTime(intDiv({from_ns:Int64}, 1000000000))
  AND clock_pairs.timestamp <= toDateTime(intDiv({to_ns:Int64}, 1000000000))
GROUP BY host_a, host_b
${resources}

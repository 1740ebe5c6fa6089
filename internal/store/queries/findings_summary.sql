-- Findings across traces, one row per (kind, service, subject): how often,
-- how bad, and the trace ids of the worst ones (among the first 1000 seen;
-- findings about no one trace, such as instance_outlier, give none). traces
-- is exact up to 65 536 a row and within about 1 % beyond (uniq): counting
-- millions of trace ids exactly took 2.5 s of the 4.5 s that a month of
-- findings at 100 M spans took.
SELECT
    toString(kind) AS kind,
    toString(service) AS service,
    toString(subject) AS subject,
    count() AS count,
    uniqIf(trace_id, trace_id != '') AS traces,
    avg(value) AS avg_value,
    quantileExact(0.5)(value) AS p50_value,
    max(value) AS max_value,
    arrayMap(x -> x.2, arraySlice(arrayReverseSort(groupArrayIf(1000)((value, trace_id), trace_id != '')), 1, 5)) AS example_trace_ids,
    toInt64(toUnixTimestamp64Nano(max(timestamp))) AS last_seen_ns
FROM ${db}.trace_facts
WHERE fact = 'finding'
  AND tenant = {tenant:String}
  AND timestamp >= fromUnixTimestamp64Nano({start_ns:Int64})
  AND timestamp <= fromUnixTimestamp64Nano({end_ns:Int64})
  AND ({kind:String} = '' OR kind = {kind:String})
  AND ({service:String} = '' OR service = {service:String})
GROUP BY kind, service, subject
ORDER BY count DESC, max_value DESC, kind, service, subject
LIMIT {limit:Int64}

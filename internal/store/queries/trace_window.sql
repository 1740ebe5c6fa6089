SELECT
    toInt64(toUnixTimestamp64Nano(min(start))) AS start_ns,
    toInt64(toUnixTimestamp64Nano(max(end))) AS end_ns
FROM ${db}.trace_index
WHERE trace_id = {trace_id:String}
GROUP BY trace_id

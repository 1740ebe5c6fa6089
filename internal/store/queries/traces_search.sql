-- Trace search from the per-trace index, newest first in a stable order: no
-- span is read. A trace belongs to the window when it started in it.
-- service matches any service the trace crosses, operation its root span's
-- name; durations are end − start in nanoseconds, inclusive. The attrs slot
-- below becomes one `AND trace_id IN (spans with attributes[<key N>] =
-- <value N> in the window)` per attribute filter, keys and values bound as
-- parameters.
SELECT
    trace_id,
    root_service,
    root_name,
    toInt64(toUnixTimestamp64Nano(start)) AS start_ns,
    toInt64(toUnixTimestamp64Nano(end)) - toInt64(toUnixTimestamp64Nano(start)) AS duration_ns,
    span_count,
    error_count,
    arraySort(services) AS services
FROM
(
    SELECT
        trace_id,
        min(start) AS start,
        max(end) AS end,
        max(root_service) AS root_service,
        max(root_name) AS root_name,
        sum(span_count) AS span_count,
        sum(error_count) AS error_count,
        groupUniqArrayArray(services) AS services
    FROM ${db}.trace_index
    GROUP BY trace_id
)
WHERE start >= fromUnixTimestamp64Nano({start_ns:Int64})
  AND start <= fromUnixTimestamp64Nano({end_ns:Int64})
  AND ({service:String} = '' OR has(services, {service:String}))
  AND ({operation:String} = '' OR root_name = {operation:String})
  AND toInt64(toUnixTimestamp64Nano(end)) - toInt64(toUnixTimestamp64Nano(start)) >= {min_duration_ns:Int64}
  AND ({max_duration_ns:Int64} = 0 OR toInt64(toUnixTimestamp64Nano(end)) - toInt64(toUnixTimestamp64Nano(start)) <= {max_duration_ns:Int64})
  AND ({errors_only:Int64} = 0 OR error_count > 0)
  ${attrs}
ORDER BY start DESC, trace_id
LIMIT {limit:Int64} OFFSET {offset:Int64}

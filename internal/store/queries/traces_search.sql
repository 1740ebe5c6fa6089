-- Trace search, newest first in a stable order, without reading spans (but
-- for attribute filters). Two steps:
--  1. candidates from trace_summaries, ordered by start: the newest rows in
--     the window that pass each filter row by row. A row is a trace, or part
--     of one when spans of it came in a later insert. Each filter is one that
--     the trace passes when a part does (the root's row carries the operation
--     and the whole duration; a row without the root may belong to a longer
--     trace, so it passes minDuration); maxDuration excludes a trace when a
--     part is longer.
--  2. the exact summary of each candidate from trace_index (merged per trace
--     id), filtered again, ordered and paged.
-- service matches any service the trace crosses, operation its root span's
-- name; durations are end − start in nanoseconds, inclusive. The attrs slot
-- becomes one `AND trace_id IN (spans with attributes[<key N>] = <value N> in
-- the window)` per attribute filter, keys and values bound as parameters.
SELECT
    trace_id,
    root_service,
    root_name,
    start_ns,
    duration_ns,
    span_count,
    error_count,
    services
FROM
(
    SELECT
        trace_id,
        toInt64(toUnixTimestamp64Nano(min(start))) AS start_ns,
        toInt64(toUnixTimestamp64Nano(max(end))) - start_ns AS duration_ns,
        max(root_service) AS root_service,
        max(root_name) AS root_name,
        sum(span_count) AS span_count,
        sum(error_count) AS error_count,
        arraySort(groupUniqArrayArray(services)) AS services
    FROM ${db}.trace_index
    WHERE trace_id IN
    (
        SELECT trace_id
        FROM ${db}.trace_summaries
        WHERE start >= fromUnixTimestamp64Nano({start_ns:Int64})
          AND start <= fromUnixTimestamp64Nano({end_ns:Int64})
          AND ({service:String} = '' OR has(services, {service:String}))
          AND ({operation:String} = '' OR root_name = {operation:String})
          AND (duration_ns >= {min_duration_ns:Int64} OR root_name = '')
          AND ({max_duration_ns:Int64} = 0 OR duration_ns <= {max_duration_ns:Int64})
          AND ({errors_only:Int64} = 0 OR error_count > 0)
          ${attrs}
        ORDER BY start DESC, trace_id DESC
        LIMIT {candidates:Int64}
    )
    GROUP BY trace_id
)
WHERE start_ns >= {start_ns:Int64}
  AND start_ns <= {end_ns:Int64}
  AND ({service:String} = '' OR has(services, {service:String}))
  AND ({operation:String} = '' OR root_name = {operation:String})
  AND duration_ns >= {min_duration_ns:Int64}
  AND ({max_duration_ns:Int64} = 0 OR duration_ns <= {max_duration_ns:Int64})
  AND ({errors_only:Int64} = 0 OR error_count > 0)
ORDER BY start_ns DESC, trace_id DESC
LIMIT {limit:Int64} OFFSET {offset:Int64}

-- RED of one service over a window by group, the group being the value of
-- {group} (instance, operation, or a dimension's key), summed over the
-- series and flushes in it: a row for the whole window with the merged
-- latency sketch (t = -1), and a row per step with the sketch's p99 bucket
-- alone (red.Sketch.Quantile's rank), which keeps the answer small.
SELECT
    value,
    if(whole, -1, point) AS t,
    requests,
    errors,
    if(whole, m, map()) AS latency,
    if(whole OR requests = 0, 0, mapKeys(m)[arrayFirstIndex(c -> c > 0.99 * toFloat64(requests - 1), arrayCumSum(mapValues(m)))])
        AS p99_bucket
FROM (
    SELECT value, point, grouping(point) = 1 AS whole,
           sum(requests) AS requests, sum(errors) AS errors, sumMap(latency) AS m
    FROM (
        SELECT
            multiIf({group:String} = 'instance', toString(instance),
                    {group:String} = 'operation', toString(operation),
                    dimensions[{group:String}]) AS value,
            toInt64(toUnixTimestamp(toStartOfInterval(timestamp, toIntervalSecond({step_s:UInt32})))) AS point,
            requests, errors, latency
        FROM ${red_rows}
    )
    GROUP BY GROUPING SETS ((value, point), (value))
)
ORDER BY value, t
LIMIT 100000

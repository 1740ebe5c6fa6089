-- The requests of each series of a service (and operation) over a window,
-- for comparing failing with healthy ones: slow counts those that did not
-- fail and took longer than a threshold, from its sketch bucket
-- {slow_bucket} on (red.Tally does the same on sketches in memory). Summing
-- counts rather than merging sketches keeps a long window cheap.
SELECT
    toString(instance) AS instance,
    toString(operation) AS operation,
    dimensions,
    sum(requests) AS requests,
    sum(errors) AS errors,
    sum(arraySum((k, n) -> if(k >= {slow_bucket:Int64}, n, 0), mapKeys(latency), mapValues(latency))) AS slow_all,
    sum(arraySum((k, n) -> if(k >= {slow_bucket:Int64}, n, 0), mapKeys(error_latency), mapValues(error_latency)))
        AS slow_errors
FROM ${red_rows}
GROUP BY instance, operation, dimensions
LIMIT 100000

-- The RED of each series of a service (and operation) summed over a window,
-- for comparing failing with healthy requests along every dimension.
SELECT
    toString(instance) AS instance,
    toString(operation) AS operation,
    dimensions,
    sum(requests) AS requests,
    sum(errors) AS errors,
    sumMap(latency) AS latency,
    sumMap(error_latency) AS error_latency
FROM ${db}.red
WHERE service = {service:String}
  AND ({operation:String} = '' OR operation = {operation:String})
  AND timestamp >= toDateTime({start_s:Int64})
  AND timestamp <= toDateTime({end_s:Int64})
GROUP BY instance, operation, dimensions
LIMIT 100000

-- RED of one service over a window, a row per group and step: the group is
-- the value of {group} (instance, operation, or a dimension's key), summed
-- over the series and flushes in it; latency merges the sketches. Operations
-- other than {operation} are left out when it is set.
SELECT
    multiIf({group:String} = 'instance', toString(instance),
            {group:String} = 'operation', toString(operation),
            dimensions[{group:String}]) AS value,
    toInt64(toUnixTimestamp(toStartOfInterval(timestamp, toIntervalSecond({step_s:UInt32})))) AS t,
    sum(requests) AS requests,
    sum(errors) AS errors,
    sumMap(latency) AS latency
FROM ${db}.red
WHERE service = {service:String}
  AND ({operation:String} = '' OR operation = {operation:String})
  AND timestamp >= toDateTime({start_s:Int64})
  AND timestamp <= toDateTime({end_s:Int64})
GROUP BY value, t
ORDER BY value, t
LIMIT 100000

-- Calls from one service to another in the traces kept in the window (Jaeger's
-- dependencies, the service graph's edges): a span whose parent is a span of
-- another service, counted by the parent's service and its own, with how many
-- of those spans failed (status ERROR) and their p99 duration. Each trace's
-- spans are grouped (rows are sorted by trace id, so the grouping streams) and
-- every span finds its parent among them; a parent outside the window is not
-- found, so a call counts when both ends started in it.
SELECT parent, child, count() AS calls, countIf(c.4 = 'ERROR') AS errors,
    toUInt64(quantileExact(0.99)(c.5)) AS p99_ns
FROM
(
    SELECT groupArray(tuple(substring(ids, 1, 8), substring(ids, 9, 8), toString(service), toString(status_code),
        duration_ns)) AS s
    FROM ${db}.spans
    WHERE tenant = {tenant:String}
      AND timestamp >= fromUnixTimestamp64Nano({start_ns:Int64})
      AND timestamp <= fromUnixTimestamp64Nano({end_ns:Int64})
    GROUP BY trace_id
)
ARRAY JOIN s AS c
WHERE c.2 != unhex('0000000000000000')
  AND (arrayFirst(x -> x.1 = c.2, s).3 AS parent) != ''
  AND parent != c.3
GROUP BY parent, c.3 AS child
ORDER BY parent, child
LIMIT 10000
SETTINGS optimize_aggregation_in_order = 1

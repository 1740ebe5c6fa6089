-- Services seen in the traces that started in the window or up to an hour
-- before it and ended in it, by name.
SELECT DISTINCT arrayJoin(services) AS service
FROM ${db}.trace_summaries
WHERE tenant = {tenant:String}
  AND start >= fromUnixTimestamp64Nano({start_ns:Int64}) - INTERVAL 1 HOUR
  AND start <= fromUnixTimestamp64Nano({end_ns:Int64})
  AND addNanoseconds(start, duration_ns) >= fromUnixTimestamp64Nano({start_ns:Int64})
ORDER BY service
LIMIT 10000

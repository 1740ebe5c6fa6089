-- Services seen in the window's traces, by name.
SELECT DISTINCT arrayJoin(services) AS service
FROM ${db}.trace_index
WHERE end >= fromUnixTimestamp64Nano({start_ns:Int64})
  AND start <= fromUnixTimestamp64Nano({end_ns:Int64})
ORDER BY service
LIMIT 10000

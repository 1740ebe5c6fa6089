-- The span names of a service in the window, by name.
SELECT DISTINCT toString(name) AS name
FROM ${db}.spans
WHERE tenant = {tenant:String}
  AND service = {service:String}
  AND timestamp >= fromUnixTimestamp64Nano({start_ns:Int64})
  AND timestamp <= fromUnixTimestamp64Nano({end_ns:Int64})
ORDER BY name
LIMIT 10000

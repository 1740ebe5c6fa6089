SELECT
    toInt64(toUnixTimestamp64Nano(timestamp)) AS time_ns,
    toInt64(toUnixTimestamp64Nano(observed_timestamp)) AS observed_ns,
    toString(severity_text) AS severity_text, toInt64(severity_number) AS severity_number, body, trace_id, span_id,
    toString(service) AS service, toString(host) AS host,
    CAST(attributes, 'Map(String, String)') AS attributes, CAST(resource, 'Map(String, String)') AS resource
FROM ${db}.logs
WHERE trace_id = {trace_id:String}
  AND timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
  AND timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})
ORDER BY timestamp, observed_timestamp
LIMIT {limit:UInt64}

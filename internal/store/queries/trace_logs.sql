-- Columns keep their table names, as in trace_spans.sql.
SELECT
    toInt64(toUnixTimestamp64Nano(timestamp)) AS timestamp,
    toInt64(toUnixTimestamp64Nano(observed_timestamp)) AS observed_timestamp,
    toString(severity_text) AS severity_text, severity_number, body, trace_id, span_id,
    toString(service) AS service, toString(host) AS host,
    CAST(attributes, 'Map(String, String)') AS attributes, CAST(resource, 'Map(String, String)') AS resource,
    toString(scope_name) AS scope_name
FROM ${db}.logs
WHERE trace_id = {trace_id:String}
  AND tenant = {tenant:String}
  AND logs.timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
  AND logs.timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})
ORDER BY logs.timestamp, logs.observed_timestamp
LIMIT {limit:UInt64}

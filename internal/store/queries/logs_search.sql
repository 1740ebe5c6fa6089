-- Log search, newest first. The conditions slot below is replaced by one
-- `AND hasToken(lower(body), <word N>)` per search word (the token index
-- on lower(body) skips granules without them), then one `AND (attributes[<key
-- N>] = <value N> OR resource[<key N>] = <value N> OR resource_id IN (the
-- tenant's resources with the value))` per attribute filter: lines name
-- their resource by id (schema 017), older lines carry it. Every value is a
-- bound parameter. The reader adds the page's resources afterwards, and asks
-- whether each line's trace is stored (logs_kept.sql): the engine runs a
-- WITH subquery again at every reference, so asking it here ran the search
-- twice.
SELECT
    toInt64(toUnixTimestamp64Nano(timestamp)) AS timestamp,
    toInt64(toUnixTimestamp64Nano(observed_timestamp)) AS observed_timestamp,
    toString(severity_text) AS severity_text, severity_number, body, trace_id, span_id,
    toString(service) AS service, toString(host) AS host,
    CAST(attributes, 'Map(String, String)') AS attributes, CAST(resource, 'Map(String, String)') AS resource,
    toString(scope_name) AS scope_name, resource_id
FROM ${db}.logs
WHERE logs.tenant = {tenant:String}
  AND logs.timestamp >= fromUnixTimestamp64Nano({start_ns:Int64})
  AND logs.timestamp <= fromUnixTimestamp64Nano({end_ns:Int64})
  AND ({service:String} = '' OR logs.service = {service:String})
  AND ({severity:String} = '' OR lower(logs.severity_text) = lower({severity:String}))
  AND ({trace_id:String} = '' OR logs.trace_id = {trace_id:String})
  ${conditions}
ORDER BY logs.timestamp DESC, logs.service, logs.trace_id, logs.span_id, cityHash64(logs.body)
LIMIT {limit:Int64}

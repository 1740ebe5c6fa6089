-- Columns keep their table names (decoded into the writer's row type); the
-- WHERE and ORDER BY clauses name spans.timestamp because the select list
-- shadows it with its integer form.
SELECT
    toInt64(toUnixTimestamp64Nano(timestamp)) AS timestamp,
    trace_id, span_id, parent_span_id, trace_state, toString(name) AS name, toString(kind) AS kind,
    toString(service) AS service, toString(host) AS host, duration_ns,
    toString(status_code) AS status_code, status_message,
    CAST(attributes, 'Map(String, String)') AS attributes, CAST(resource, 'Map(String, String)') AS resource, resource_id,
    toString(scope_name) AS scope_name, toString(scope_version) AS scope_version, events, links
FROM ${db}.spans
WHERE trace_id = {trace_id:String}
  AND spans.timestamp >= fromUnixTimestamp64Nano({start_ns:Int64})
  AND spans.timestamp <= fromUnixTimestamp64Nano({end_ns:Int64})
ORDER BY spans.timestamp, span_id
LIMIT 1 BY span_id

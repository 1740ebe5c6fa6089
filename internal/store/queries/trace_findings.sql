SELECT toString(kind) AS kind, span_ids AS spanIds, toString(service) AS service, toString(subject) AS subject, value, summary
FROM ${db}.findings
WHERE trace_id = {trace_id:String}
  AND timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
  AND timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})
ORDER BY kind, value DESC

SELECT host, offset_ns
FROM ${db}.trace_clock
WHERE trace_id = {trace_id:String}
  AND timestamp >= fromUnixTimestamp64Nano({from_ns:Int64})
  AND timestamp <= fromUnixTimestamp64Nano({to_ns:Int64})

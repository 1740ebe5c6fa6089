(
    -- The RED rows of {service} (and {operation}) in a window, each part of
    -- it read from the coarsest tier of red_rollup whose buckets lie wholly
    -- inside it (hours, then five minutes and minutes at the edges), the
    -- rest from the 10 s rows of red. Each tier gets two ranges [lo, hi) of
    -- Unix seconds, empty when lo = hi (store/red.go, redWindow). Of the
    -- caller's {tenant} alone, whose series the rollup keeps apart.
    SELECT timestamp, operation, instance, dimensions, requests, errors, latency, error_latency
    FROM ${db}.red
    WHERE tenant = {tenant:String}
      AND service = {service:String}
      AND ({operation:String} = '' OR operation = {operation:String})
      AND (timestamp >= toDateTime({t0_lo:Int64}) AND timestamp < toDateTime({t0_hi:Int64})
        OR timestamp >= toDateTime({t0_lo2:Int64}) AND timestamp < toDateTime({t0_hi2:Int64}))
    UNION ALL
    SELECT timestamp, operation, instance, dimensions, toUInt64(requests), toUInt64(errors),
           CAST(latency, 'Map(Int32, UInt64)'), CAST(error_latency, 'Map(Int32, UInt64)')
    FROM ${db}.red_rollup
    WHERE tenant = {tenant:String}
      AND service = {service:String}
      AND ({operation:String} = '' OR operation = {operation:String})
      AND (tier = 60 AND (timestamp >= toDateTime({t1_lo:Int64}) AND timestamp < toDateTime({t1_hi:Int64})
                      OR timestamp >= toDateTime({t1_lo2:Int64}) AND timestamp < toDateTime({t1_hi2:Int64}))
        OR tier = 300 AND (timestamp >= toDateTime({t2_lo:Int64}) AND timestamp < toDateTime({t2_hi:Int64})
                      OR timestamp >= toDateTime({t2_lo2:Int64}) AND timestamp < toDateTime({t2_hi2:Int64}))
        OR tier = 3600 AND (timestamp >= toDateTime({t3_lo:Int64}) AND timestamp < toDateTime({t3_hi:Int64})
                      OR timestamp >= toDateTime({t3_lo2:Int64}) AND timestamp < toDateTime({t3_hi2:Int64})))
)

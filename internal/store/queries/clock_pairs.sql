-- The clock offsets of skewed host pairs over a window, as the sampler's
-- estimator recorded them (about a row a pair and minute while skewed), by
-- pair and time; offset_ns is clock(host_b) − clock(host_a). Of the
-- caller's tenant, as every read (store/reader.go).
SELECT
    toInt64(toUnixTimestamp(timestamp)) * 1000000000 AS time_ns,
    toString(host_a) AS host_a,
    toString(host_b) AS host_b,
    offset_ns,
    samples
FROM ${db}.clock_pairs
WHERE tenant = {tenant:String}
  AND timestamp >= toDateTime(intDiv({start_ns:Int64}, 1000000000))
  AND timestamp <= toDateTime(intDiv({end_ns:Int64}, 1000000000))
ORDER BY host_a, host_b, timestamp
LIMIT 1 BY host_a, host_b, timestamp
LIMIT 100000

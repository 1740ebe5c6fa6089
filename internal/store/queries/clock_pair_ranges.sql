-- The skewed host pairs the tenant's clock_pairs holds, each with the time of
-- its first and last estimate (seconds): the reader keeps them a few seconds
-- (skewedhosts.go) to skip trace_window.sql for traces whose hosts have no
-- skewed pair in their window, as most have. The reader asks for one pair
-- more than it keeps: a tenant with more has every trace's window read.
SELECT
    toString(host_a) AS host_a,
    toString(host_b) AS host_b,
    toInt64(toUnixTimestamp(min(timestamp))) AS first_s,
    toInt64(toUnixTimestamp(max(timestamp))) AS last_s
FROM ${db}.clock_pairs
WHERE tenant = {tenant:String}
GROUP BY host_a, host_b
LIMIT {max_pairs:UInt64}

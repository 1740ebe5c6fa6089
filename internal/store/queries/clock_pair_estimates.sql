-- The skewed host pairs the tenant's clock_pairs holds, each with the time of
-- its first and last estimate (seconds) and, while the tenant has at most
-- max_estimates estimates in all, every estimate (time, offset, samples;
-- in no order): the reader keeps them a few seconds (skewedhosts.go) and
-- finds a trace's skewed pairs in them, or, with the first and last alone,
-- skips trace_window.sql for traces whose hosts have no skewed pair in their
-- window. The reader asks for one pair more than it keeps: a tenant with
-- more has every trace's window read.
WITH (SELECT count() FROM ${db}.clock_pairs WHERE tenant = {tenant:String}) AS estimates
SELECT
    toString(host_a) AS host_a,
    toString(host_b) AS host_b,
    toInt64(toUnixTimestamp(min(timestamp))) AS first_s,
    toInt64(toUnixTimestamp(max(timestamp))) AS last_s,
    groupArrayIf(toInt64(toUnixTimestamp(timestamp)), estimates <= {max_estimates:UInt64}) AS at_s,
    groupArrayIf(offset_ns, estimates <= {max_estimates:UInt64}) AS offsets_ns,
    groupArrayIf(samples, estimates <= {max_estimates:UInt64}) AS samples
FROM ${db}.clock_pairs
WHERE tenant = {tenant:String}
GROUP BY host_a, host_b
LIMIT {max_pairs:UInt64}

-- Host pairs whose clocks disagree by the skew threshold or more, as the
-- sampler's estimator saw them over time (a row a pair about once a minute
-- while skewed): a trace read later carries the clock_skew finding for a
-- pair it crosses although it was decided before the estimate had its
-- samples. a < b; offset_ns is clock(b) − clock(a).
CREATE TABLE IF NOT EXISTS ${db}.clock_pairs
(
    timestamp  DateTime CODEC(DoubleDelta, ZSTD(1)),
    host_a     LowCardinality(String),
    host_b     LowCardinality(String),
    offset_ns  Int64,
    samples    UInt32
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (host_a, host_b, timestamp)
SETTINGS non_replicated_deduplication_window = 1000;

-- RED: the requests, errors and durations of every entry span received,
-- counted by the sampler before it decides (internal/red), a row per series
-- (service, operation, instance, dimension values) and 10 s interval and
-- flush. Rows of one series and interval from several flushes add up when
-- read. latency counts durations by the buckets of red.Sketch (a bucket
-- grows by 1.0408: quantiles within 2 %), error_latency those of the errors
-- alone (the rest are the healthy requests, for comparisons). Ordered for the
-- reads of one service (and operation) over a window.
CREATE TABLE IF NOT EXISTS ${db}.red
(
    timestamp   DateTime CODEC(DoubleDelta, ZSTD(1)),
    service     LowCardinality(String),
    operation   LowCardinality(String),
    instance    LowCardinality(String),
    dimensions  Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    requests    UInt64 CODEC(T64, ZSTD(1)),
    errors      UInt64 CODEC(T64, ZSTD(1)),
    latency     Map(Int32, UInt64) CODEC(ZSTD(1)),
    error_latency Map(Int32, UInt64) CODEC(ZSTD(1))
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (service, operation, timestamp, instance)
SETTINGS index_granularity = 256, non_replicated_deduplication_window = 1000;

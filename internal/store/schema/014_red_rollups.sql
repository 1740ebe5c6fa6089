-- RED rolled up by the minute, five minutes and hour (tier: the bucket's
-- width in seconds), so that a read over hours sums a few rows a series
-- rather than one per 10 s flush (make bench-red: 24 hours of a service's
-- 100 series are 864 000 rows in red, 2 400 of its hours here). Each insert
-- into red also goes, through the view, into the three tiers, under each
-- bucket's start; rows of one series and bucket add up as parts merge, and
-- reads sum them anyway. series is a hash of the instance and dimensions,
-- so that the sort key tells series apart (a Map cannot be in it). The
-- deduplication of a repeated insert covers the view's table too
-- (deduplicate_blocks_in_dependent_materialized_views, store.go). A read
-- takes each part of its window from the coarsest tier whose buckets lie
-- wholly inside it, the rest from red (queries/fragments/red_rows.sql).
-- Small granules: a window's edges read a few rows, not 8192.
CREATE TABLE IF NOT EXISTS ${db}.red_rollup
(
    tier          UInt16,
    timestamp     DateTime CODEC(DoubleDelta, ZSTD(1)),
    service       LowCardinality(String),
    operation     LowCardinality(String),
    instance      LowCardinality(String),
    series        UInt64,
    dimensions    Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    requests      SimpleAggregateFunction(sum, UInt64) CODEC(T64, ZSTD(1)),
    errors        SimpleAggregateFunction(sum, UInt64) CODEC(T64, ZSTD(1)),
    latency       SimpleAggregateFunction(sumMap, Map(Int32, UInt64)) CODEC(ZSTD(1)),
    error_latency SimpleAggregateFunction(sumMap, Map(Int32, UInt64)) CODEC(ZSTD(1))
)
ENGINE = AggregatingMergeTree
PARTITION BY toDate(timestamp)
ORDER BY (service, operation, tier, timestamp, instance, series)
SETTINGS index_granularity = 256, non_replicated_deduplication_window = 1000;

-- A store that had RED before this schema gets its rows rolled up once:
-- while the rollup is empty (the first start of this release, before the
-- view exists and before any insert).
INSERT INTO ${db}.red_rollup
SELECT tier, toDateTime(intDiv(toUInt32(timestamp), tier) * tier), service, operation, instance,
       cityHash64(instance, dimensions), dimensions, requests, errors, latency, error_latency
FROM ${db}.red
ARRAY JOIN [60, 300, 3600] AS tier
WHERE (SELECT count() FROM ${db}.red_rollup) = 0;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.red_rollup_mv TO ${db}.red_rollup AS
SELECT tier, toDateTime(intDiv(toUInt32(timestamp), tier) * tier) AS timestamp, service, operation, instance,
       cityHash64(instance, dimensions) AS series, dimensions, requests, errors, latency, error_latency
FROM ${db}.red
ARRAY JOIN [60, 300, 3600] AS tier;

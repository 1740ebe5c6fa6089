-- What trace searches read: one row per trace and insert (a kept trace is
-- inserted whole, so nearly always one row per trace), ordered by the trace's
-- start so that "newest first" reads the newest granules and stops. Rows are
-- not merged per trace (trace_index is); a search takes candidates from here
-- and the exact summary of each from trace_index.
CREATE TABLE IF NOT EXISTS ${db}.trace_summaries
(
    start         DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    trace_id      String CODEC(ZSTD(1)),
    duration_ns   UInt64 CODEC(T64, ZSTD(1)),
    root_service  LowCardinality(String),
    root_name     LowCardinality(String),
    span_count    UInt32,
    error_count   UInt32,
    services      Array(LowCardinality(String))
)
ENGINE = MergeTree
PARTITION BY toDate(start)
ORDER BY (start, trace_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.trace_summaries_mv TO ${db}.trace_summaries AS
SELECT
    min(timestamp) AS start,
    trace_id,
    toUInt64(toUnixTimestamp64Nano(max(addNanoseconds(timestamp, duration_ns)))
        - toUnixTimestamp64Nano(min(timestamp))) AS duration_ns,
    maxIf(toString(service), parent_span_id = '') AS root_service,
    maxIf(toString(name), parent_span_id = '') AS root_name,
    toUInt32(count()) AS span_count,
    toUInt32(countIf(status_code = 'ERROR')) AS error_count,
    groupUniqArray(toString(service)) AS services
FROM ${db}.spans
GROUP BY trace_id;

-- Traces stored before this table existed: copied once from trace_index,
-- when the table is still empty (so this statement is safe on every start).
INSERT INTO ${db}.trace_summaries
SELECT
    first,
    trace_id,
    toUInt64(toUnixTimestamp64Nano(last) - toUnixTimestamp64Nano(first)),
    root_service,
    root_name,
    toUInt32(spans),
    toUInt32(errors),
    services
FROM
(
    SELECT
        trace_id,
        min(start) AS first,
        max(end) AS last,
        max(root_service) AS root_service,
        max(root_name) AS root_name,
        sum(span_count) AS spans,
        sum(error_count) AS errors,
        groupUniqArrayArray(services) AS services
    FROM ${db}.trace_index
    WHERE (SELECT count() FROM ${db}.trace_summaries) = 0
    GROUP BY trace_id
);

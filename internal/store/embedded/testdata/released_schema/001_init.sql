-- tracesift schema, version 1. Every statement is idempotent: the schema is
-- applied on every start, on chDB and on a ClickHouse server alike.
-- ${db} is replaced by the configured database name (validated identifier).

CREATE DATABASE IF NOT EXISTS ${db};

-- Spans of kept traces. Ordered by trace id so that a trace is a contiguous
-- range; partitioned by day so a read bounded by the trace's own time window
-- touches one or two partitions.
CREATE TABLE IF NOT EXISTS ${db}.spans
(
    timestamp       DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    trace_id        String CODEC(ZSTD(1)),
    span_id         String CODEC(ZSTD(1)),
    parent_span_id  String CODEC(ZSTD(1)),
    trace_state     String CODEC(ZSTD(1)),
    name            LowCardinality(String) CODEC(ZSTD(1)),
    kind            LowCardinality(String) CODEC(ZSTD(1)),
    service         LowCardinality(String) CODEC(ZSTD(1)),
    host            LowCardinality(String) CODEC(ZSTD(1)),
    duration_ns     UInt64 CODEC(T64, ZSTD(1)),
    status_code     LowCardinality(String) CODEC(ZSTD(1)),
    status_message  String CODEC(ZSTD(1)),
    attributes      Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    resource        Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    scope_name      LowCardinality(String) CODEC(ZSTD(1)),
    scope_version   LowCardinality(String) CODEC(ZSTD(1)),
    events          String CODEC(ZSTD(1)),
    links           String CODEC(ZSTD(1))
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (trace_id, timestamp);

-- One row per trace (after merges): its time window, for bounded reads, and a
-- summary for search.
CREATE TABLE IF NOT EXISTS ${db}.trace_index
(
    trace_id      String CODEC(ZSTD(1)),
    start         SimpleAggregateFunction(min, DateTime64(9)),
    end           SimpleAggregateFunction(max, DateTime64(9)),
    root_service  SimpleAggregateFunction(max, String),
    root_name     SimpleAggregateFunction(max, String),
    span_count    SimpleAggregateFunction(sum, UInt64),
    error_count   SimpleAggregateFunction(sum, UInt64),
    services      SimpleAggregateFunction(groupUniqArrayArray, Array(String))
)
ENGINE = AggregatingMergeTree
ORDER BY trace_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.trace_index_mv TO ${db}.trace_index AS
SELECT
    trace_id,
    min(timestamp) AS start,
    max(addNanoseconds(timestamp, duration_ns)) AS end,
    maxIf(toString(service), parent_span_id = '') AS root_service,
    maxIf(toString(name), parent_span_id = '') AS root_name,
    toUInt64(count()) AS span_count,
    toUInt64(countIf(status_code = 'ERROR')) AS error_count,
    groupUniqArray(toString(service)) AS services
FROM ${db}.spans
GROUP BY trace_id;

-- All logs (logs are not sampled). Ordered for time-range scans per service;
-- a bloom filter finds a trace's lines, a token index serves word search.
CREATE TABLE IF NOT EXISTS ${db}.logs
(
    timestamp           DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    observed_timestamp  DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    trace_id            String CODEC(ZSTD(1)),
    span_id             String CODEC(ZSTD(1)),
    severity_text       LowCardinality(String) CODEC(ZSTD(1)),
    severity_number     UInt8,
    service             LowCardinality(String) CODEC(ZSTD(1)),
    host                LowCardinality(String) CODEC(ZSTD(1)),
    body                String CODEC(ZSTD(1)),
    attributes          Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    resource            Map(LowCardinality(String), String) CODEC(ZSTD(1)),
    scope_name          LowCardinality(String) CODEC(ZSTD(1)),
    INDEX idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_body lower(body) TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (service, timestamp);

-- Analyzer findings, one row per finding, keyed by trace.
CREATE TABLE IF NOT EXISTS ${db}.findings
(
    timestamp  DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    trace_id   String CODEC(ZSTD(1)),
    kind       LowCardinality(String),
    service    LowCardinality(String),
    span_ids   Array(String) CODEC(ZSTD(1)),
    value      Float64,
    summary    String CODEC(ZSTD(1))
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (trace_id, kind);

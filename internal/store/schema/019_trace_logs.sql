-- A copy of every log line that carries a trace id, sorted by trace id, for
-- the trace by id. logs is sorted by service and time for searches, so a
-- trace's lines were found by the trace id's bloom filter over every granule
-- of a window around the trace, a read that had to wait for the spans to
-- give that window and cost twice the spans' own. Here they are one range of
-- the sorting key, read beside the spans (queries/trace_facts.sql). The copy
-- costs about 32 bytes a traced line. Searches still read logs.
--
-- observed_after_ns is the line's observed time less its time: in this order
-- neighbouring lines are of other traces, so the observed time itself would
-- take as much room as the time.
CREATE TABLE IF NOT EXISTS ${db}.trace_logs
(
    tenant             LowCardinality(String) CODEC(ZSTD(1)),
    trace_id           String CODEC(ZSTD(1)),
    timestamp          DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    observed_after_ns  Int64 CODEC(T64, ZSTD(1)),
    span_id            String CODEC(ZSTD(1)),
    severity_text      LowCardinality(String) CODEC(ZSTD(1)),
    severity_number    UInt8,
    service            LowCardinality(String) CODEC(ZSTD(1)),
    host               LowCardinality(String) CODEC(ZSTD(1)),
    body               String CODEC(ZSTD(1)),
    attributes         Map(String, String) CODEC(ZSTD(3)),
    resource           Map(String, String) CODEC(ZSTD(3)),
    resource_id        UInt64 CODEC(ZSTD(1)),
    scope_name         LowCardinality(String) CODEC(ZSTD(1))
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (tenant, trace_id, timestamp)
SETTINGS index_granularity = 1024, non_replicated_deduplication_window = 1000;

-- Every insert into logs from now on, with its deduplication (store.go).
CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.trace_logs_mv TO ${db}.trace_logs AS
SELECT tenant, trace_id, timestamp,
    toUnixTimestamp64Nano(observed_timestamp) - toUnixTimestamp64Nano(timestamp) AS observed_after_ns,
    span_id, severity_text, severity_number, service, host, body, attributes, resource, resource_id, scope_name
FROM ${db}.logs
WHERE trace_id != '';

-- The lines stored before, once: after the view, so that no line written
-- meanwhile (by another collector against the same server) is missed. A line
-- written between the two statements is copied twice; the reader shows a
-- trace's identical lines once. Guarded by this file's record rather than by
-- an empty table, which the view may already have written to.
INSERT INTO ${db}.trace_logs
SELECT tenant, trace_id, timestamp,
    toUnixTimestamp64Nano(observed_timestamp) - toUnixTimestamp64Nano(timestamp) AS observed_after_ns,
    span_id, severity_text, severity_number, service, host, body, attributes, resource, resource_id, scope_name
FROM ${db}.logs
WHERE trace_id != ''
  AND (SELECT count() FROM ${db}.schema_migrations WHERE version = 19) = 0;

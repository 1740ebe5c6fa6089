-- A trace's findings and clock offsets in one table, sorted by trace id, for
-- the trace by id: each table a statement reads costs about 2 ms of the
-- engine's time however few its rows (queries/trace_facts.sql read findings
-- and trace_clock apart, beside trace_logs). fact says what a row is; the
-- other fact's columns are at their defaults. Compact parts of 1 024 rows:
-- a lookup decompresses one small block instead of one a column. The
-- writer writes here from now on; findings across traces read it too
-- (queries/findings_summary.sql).
CREATE TABLE IF NOT EXISTS ${db}.trace_facts
(
    tenant     LowCardinality(String) CODEC(ZSTD(1)),
    trace_id   String CODEC(ZSTD(1)),
    fact       Enum8('finding' = 1, 'clock_offset' = 2),
    timestamp  DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    kind       LowCardinality(String),
    service    LowCardinality(String),
    subject    LowCardinality(String),
    span_ids   Array(String) CODEC(ZSTD(1)),
    value      Float64,
    summary    String CODEC(ZSTD(1)),
    host       LowCardinality(String),
    offset_ns  Int64,
    source     LowCardinality(String)
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (tenant, trace_id, fact)
SETTINGS index_granularity = 1024, min_bytes_for_wide_part = 1099511627776, non_replicated_deduplication_window = 1000;

-- findings and trace_clock are no longer written but by collectors of an
-- earlier version sharing the store (a rolling upgrade): their rows come
-- here too.
CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.trace_facts_findings_mv TO ${db}.trace_facts AS
SELECT tenant, trace_id, 'finding' AS fact, timestamp, kind, service, subject, span_ids, value, summary
FROM ${db}.findings;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.trace_facts_clock_mv TO ${db}.trace_facts AS
SELECT tenant, trace_id, 'clock_offset' AS fact, timestamp, host, offset_ns, source
FROM ${db}.trace_clock;

-- The rows stored before, once: after the views, so that none written
-- meanwhile is missed (one written between is copied twice; the reader shows
-- a trace's identical rows once). Guarded by this file's record, as 019.
INSERT INTO ${db}.trace_facts (tenant, trace_id, fact, timestamp, kind, service, subject, span_ids, value, summary)
SELECT tenant, trace_id, 'finding', timestamp, kind, service, subject, span_ids, value, summary
FROM ${db}.findings
WHERE (SELECT count() FROM ${db}.schema_migrations WHERE version = 20) = 0;

INSERT INTO ${db}.trace_facts (tenant, trace_id, fact, timestamp, host, offset_ns, source)
SELECT tenant, trace_id, 'clock_offset', timestamp, host, offset_ns, source
FROM ${db}.trace_clock
WHERE (SELECT count() FROM ${db}.schema_migrations WHERE version = 20) = 0;

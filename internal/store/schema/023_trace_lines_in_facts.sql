-- A trace's log lines join its findings and clock offsets in trace_facts,
-- so that a trace by id reads two tables, spans and trace_facts, instead of
-- three: a table read costs the engine about 3 ms of CPU however few its
-- rows. The copy of traced lines (schema 019) moves here; lines keep the
-- logs' retention and facts the traces' (retention.go).
--
-- Parts of 10 MiB and more are wide again (the engine's default): findings
-- across traces (findings_summary.sql) read a few columns of every row, and
-- in compact parts, with three times the rows, took 2.6 times as long. The
-- deduplication window takes the view's blocks of lines as well.
ALTER TABLE ${db}.trace_facts MODIFY COLUMN IF EXISTS fact Enum8('finding' = 1, 'clock_offset' = 2, 'line' = 3);

ALTER TABLE ${db}.trace_facts
    ADD COLUMN IF NOT EXISTS observed_after_ns Int64 CODEC(T64, ZSTD(1)),
    ADD COLUMN IF NOT EXISTS span_id String CODEC(ZSTD(1)),
    ADD COLUMN IF NOT EXISTS severity_text LowCardinality(String) CODEC(ZSTD(1)),
    ADD COLUMN IF NOT EXISTS severity_number UInt8,
    ADD COLUMN IF NOT EXISTS body String CODEC(ZSTD(1)),
    ADD COLUMN IF NOT EXISTS attributes Map(String, String) CODEC(ZSTD(3)),
    ADD COLUMN IF NOT EXISTS resource Map(String, String) CODEC(ZSTD(3)),
    ADD COLUMN IF NOT EXISTS resource_id UInt64 CODEC(ZSTD(1)),
    ADD COLUMN IF NOT EXISTS scope_name LowCardinality(String) CODEC(ZSTD(1));

ALTER TABLE ${db}.trace_facts MODIFY SETTING min_bytes_for_wide_part = 10485760, non_replicated_deduplication_window = 2000;

-- Every insert into logs from now on, with its deduplication (store.go).
CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.trace_facts_lines_mv TO ${db}.trace_facts AS
SELECT tenant, trace_id, 'line' AS fact, timestamp,
    toUnixTimestamp64Nano(observed_timestamp) - toUnixTimestamp64Nano(timestamp) AS observed_after_ns,
    span_id, severity_text, severity_number, service, host, body, attributes, resource, resource_id, scope_name
FROM ${db}.logs
WHERE trace_id != '';

DROP VIEW IF EXISTS ${db}.trace_logs_mv;

-- The lines of trace_logs, once: after the views changed, so that no line
-- written meanwhile is missed (one written between is copied twice; the
-- reader shows a trace's identical lines once). Guarded by this file's
-- record, as 019.
INSERT INTO ${db}.trace_facts (tenant, trace_id, fact, timestamp, observed_after_ns, span_id, severity_text,
    severity_number, service, host, body, attributes, resource, resource_id, scope_name)
SELECT tenant, trace_id, 'line', timestamp, observed_after_ns, span_id, severity_text, severity_number, service, host,
    body, attributes, resource, resource_id, scope_name
FROM ${db}.trace_logs
WHERE (SELECT count() FROM ${db}.schema_migrations WHERE version = 23) = 0;

-- Emptied rather than dropped, so that this file's copy can run again (a
-- start cut short before its record, two collectors starting together).
TRUNCATE TABLE IF EXISTS ${db}.trace_logs;

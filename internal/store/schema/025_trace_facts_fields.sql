-- A trace by id pays about a quarter of a millisecond for each column of
-- trace_facts it reads, however few its rows (docs/benchmarks.md): it read 21.
-- What only a trace by id reads moves into one column, fields, a JSON object
-- keyed as the reader's rows: a line's span_id, severity, service, host,
-- body, attributes, resource, scope_name, resource_id and observed_after_ns;
-- a finding's kind, service, subject, span_ids and summary; a clock offset's
-- host and offset_ns. 64-bit integers come as numbers or as text, as the
-- session's output_format_json_quote_64bit_integers says. A finding's kind,
-- service, subject and value, which findings across traces read, stay
-- columns too; the other columns are no longer written.
--
-- Rows written before have no fields: a read computes it from their columns
-- (the default below), and a merge stores it. So do inserts that leave it out,
-- such as a collector of an earlier version writing during a rolling upgrade.
-- That collector, reading, shows the lines written from now on without their
-- text until it is upgraded.
ALTER TABLE ${db}.trace_facts ADD COLUMN IF NOT EXISTS fields String DEFAULT multiIf(
    fact = 'line', formatRowNoNewline('JSONEachRow', span_id, severity_text, severity_number, service, host, body,
        attributes, resource, scope_name, resource_id, observed_after_ns),
    fact = 'finding', formatRowNoNewline('JSONEachRow', kind, service, subject, span_ids, summary),
    formatRowNoNewline('JSONEachRow', host, offset_ns)) CODEC(ZSTD(1));

-- The lines' view writes fields alone: the new view first, then the old one
-- dropped, so that no line is missed. One written between is copied twice,
-- with the same fields (the same expression), and the reader shows it once.
CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.trace_facts_fields_mv TO ${db}.trace_facts AS
SELECT tenant, trace_id, 'line' AS fact, timestamp,
    formatRowNoNewline('JSONEachRow', span_id, severity_text, severity_number, service, host, body, attributes,
        resource, scope_name, resource_id,
        toUnixTimestamp64Nano(observed_timestamp) - toUnixTimestamp64Nano(timestamp) AS observed_after_ns) AS fields
FROM ${db}.logs
WHERE trace_id != '';

DROP VIEW IF EXISTS ${db}.trace_facts_lines_mv;

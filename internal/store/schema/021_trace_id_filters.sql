-- A trace by id reads trace_logs and trace_facts by their sorting key, which
-- in every part points at the one granule where the trace id would be, there
-- or not: as loaded, most of those reads find nothing. A bloom filter of each
-- granule's trace ids (about 2 bytes a trace each, as on spans, schema 009)
-- lets the read skip the parts without the trace. Parts written before get
-- the filters from the MATERIALIZE mutations, in the background.
ALTER TABLE ${db}.trace_logs ADD INDEX IF NOT EXISTS idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 1;
ALTER TABLE ${db}.trace_logs MATERIALIZE INDEX idx_trace_id;
ALTER TABLE ${db}.trace_facts ADD INDEX IF NOT EXISTS idx_trace_id trace_id TYPE bloom_filter(0.001) GRANULARITY 1;
ALTER TABLE ${db}.trace_facts MATERIALIZE INDEX idx_trace_id;

-- A trace by id reads one 1 024-row granule of every column of trace_facts,
-- but decompresses the whole block that holds it: at least 64 KiB, 2 to 8
-- granules of the columns below. Blocks of at least 8 KiB instead, for the
-- columns that only a trace by id reads, cut its facts statement by about
-- 8 % for 3 % more bytes (docs/benchmarks.md). The columns that findings
-- across traces read (findings_summary.sql) keep 64 KiB: with small blocks
-- that scan took 30–45 % longer. Parts written before keep their blocks
-- until merged.
ALTER TABLE ${db}.trace_facts MODIFY COLUMN body MODIFY SETTING min_compress_block_size = 8192;
ALTER TABLE ${db}.trace_facts MODIFY COLUMN span_id MODIFY SETTING min_compress_block_size = 8192;
ALTER TABLE ${db}.trace_facts MODIFY COLUMN span_ids MODIFY SETTING min_compress_block_size = 8192;
ALTER TABLE ${db}.trace_facts MODIFY COLUMN summary MODIFY SETTING min_compress_block_size = 8192;
ALTER TABLE ${db}.trace_facts MODIFY COLUMN offset_ns MODIFY SETTING min_compress_block_size = 8192;

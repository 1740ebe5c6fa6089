-- The spans' larger columns are compressed by the engine's configuration
-- (CODEC(Default); the embedded store's engine.xml, a server's
-- config.d): LZ4 in the parts inserts write, ZSTD(6) in the parts merges
-- make of 16 MiB or more. Most of an insert's CPU went into compressing
-- the same rows with ZSTD(6) (attributes) or ZSTD(1) on insert and again at
-- each merge; now a row is compressed hard about once, in a large part.
-- make bench-store at 10 M: 366 000 spans/s instead of 293 000, 37.7 bytes
-- a span instead of 39.9 (docs/benchmarks.md). Changing a codec rewrites no
-- part: parts written before keep theirs until merged.
ALTER TABLE ${db}.spans MODIFY COLUMN IF EXISTS attributes CODEC(Default);
ALTER TABLE ${db}.spans MODIFY COLUMN IF EXISTS resource CODEC(Default);
ALTER TABLE ${db}.spans MODIFY COLUMN IF EXISTS trace_id CODEC(Default);
ALTER TABLE ${db}.spans MODIFY COLUMN IF EXISTS ids CODEC(Default);
ALTER TABLE ${db}.spans MODIFY COLUMN IF EXISTS timestamp CODEC(Delta(8), Default);
ALTER TABLE ${db}.spans MODIFY COLUMN IF EXISTS duration_ns CODEC(T64, Default);
ALTER TABLE ${db}.spans MODIFY COLUMN IF EXISTS resource_id CODEC(Default);

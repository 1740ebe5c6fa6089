-- Log lines name their resource by id, as spans do (schema 008): a service
-- instance's attributes, the same on every line it exports, took 13.4 of a
-- line's bytes on disk and 82 % of its bytes uncompressed. A trace's lines
-- are read a granule at a time, and the resource maps were most of what a
-- trace by id decompressed. Lines written before keep their resource map
-- (resource_id 0); new lines leave the map empty. Resources referenced by
-- logs are kept as long as the logs (retention.go).
ALTER TABLE ${db}.logs ADD COLUMN IF NOT EXISTS resource_id UInt64 CODEC(ZSTD(1)) AFTER resource;

-- What a finding is about (an operation, a call edge, a host pair): the key
-- GET /api/v1/findings aggregates by. ADD COLUMN IF NOT EXISTS makes this safe
-- on every start, on a database created before the column existed too.
ALTER TABLE ${db}.findings ADD COLUMN IF NOT EXISTS subject LowCardinality(String) AFTER service;

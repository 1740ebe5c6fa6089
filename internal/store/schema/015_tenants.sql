-- Tenants (internal/tenant): every row carries whose it is, and every read
-- is confined to one tenant (queries/*.sql: tenant = {tenant}). Rows stored
-- before this schema are the default tenant's: parts written before a
-- column existed read its default.
ALTER TABLE ${db}.spans ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));
ALTER TABLE ${db}.logs ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));
ALTER TABLE ${db}.findings ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));
ALTER TABLE ${db}.trace_clock ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));
ALTER TABLE ${db}.trace_summaries ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));
ALTER TABLE ${db}.red ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));
ALTER TABLE ${db}.clock_pairs ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));

-- resources (ReplacingMergeTree) and red_rollup (AggregatingMergeTree)
-- merge the rows of one sorting key: the tenant joins their keys, so that
-- two tenants' resources or RED series alike are never merged into one. A
-- column joins a key only in the ALTER that adds it, and only without a
-- default expression; its default is set next (a constant: the parts
-- written before, read as 'default', stay sorted).
ALTER TABLE ${db}.resources ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) CODEC(ZSTD(1)),
    MODIFY ORDER BY (resource_id, tenant);
ALTER TABLE ${db}.resources MODIFY COLUMN IF EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));
ALTER TABLE ${db}.red_rollup ADD COLUMN IF NOT EXISTS tenant LowCardinality(String) CODEC(ZSTD(1)),
    MODIFY ORDER BY (service, operation, tier, timestamp, instance, series, tenant);
ALTER TABLE ${db}.red_rollup MODIFY COLUMN IF EXISTS tenant LowCardinality(String) DEFAULT 'default' CODEC(ZSTD(1));

-- The view rolls each tenant's RED up apart. MODIFY QUERY swaps its query
-- in place: no insert into red goes without its rollup meanwhile.
ALTER TABLE ${db}.red_rollup_mv MODIFY QUERY
SELECT tier, toDateTime(intDiv(toUInt32(timestamp), tier) * tier) AS timestamp, service, operation, instance,
       cityHash64(instance, dimensions) AS series, dimensions, requests, errors, latency, error_latency, tenant
FROM ${db}.red
ARRAY JOIN [60, 300, 3600] AS tier;

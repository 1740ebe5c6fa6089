-- Trace searches by attribute (attr.KEY=VALUE) look for the value among the
-- spans of the window; a bloom filter over each granule's attribute values
-- lets them skip the granules without it, so a rare value (an order id, a
-- user) is found without reading every span. Parts written before this
-- index are read whole.
ALTER TABLE ${db}.spans ADD INDEX IF NOT EXISTS idx_attr_values mapValues(attributes) TYPE bloom_filter(0.01) GRANULARITY 1;

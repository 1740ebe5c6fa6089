-- Clock offsets of a kept trace's hosts, as the sampler's per-host-pair skew
-- estimate (over many traces) put them when the trace was kept: clock(host) −
-- clock(the trace's reference host, its root's). Only hosts with an offset get
-- a row. The query API adjusts span and log times with them; raw times are
-- never rewritten.
CREATE TABLE IF NOT EXISTS ${db}.trace_clock
(
    timestamp  DateTime64(9) CODEC(Delta(8), ZSTD(1)),
    trace_id   String CODEC(ZSTD(1)),
    host       LowCardinality(String),
    offset_ns  Int64,
    source     LowCardinality(String)
)
ENGINE = MergeTree
PARTITION BY toDate(timestamp)
ORDER BY (trace_id, host);

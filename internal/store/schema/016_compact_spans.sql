-- Parts of spans stay compact (every column of a granule side by side in one
-- file) at any size, not only up to 256 MiB (schema 011). A trace by id reads
-- one granule of every column: from a wide part that is a read in each of
-- about 46 column files, from a compact part one. On 10 M spans after OPTIMIZE
-- FINAL the spans statement took 6.5–6.8 ms p50 instead of 8.1–9.7 warm, and
-- 7.8–8.0 / 14.4–15.2 ms p50 / p99 instead of 10.2–10.9 / 18.6–29.1 with the
-- page cache dropped, for 0.6 more bytes a span (small columns compress per
-- granule). Wide parts written before become compact when next merged.
ALTER TABLE ${db}.spans MODIFY SETTING min_bytes_for_wide_part = 1099511627776;

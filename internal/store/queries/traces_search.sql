-- Trace search, without reading spans (but for attribute filters). Two steps
-- over trace_summaries, which holds a row per trace and insert (a kept trace
-- is inserted whole, so nearly always one):
--  1. candidates, ordered by start: the newest rows in the window that pass
--     each filter row by row. Each filter is one that the trace passes when
--     a row does (the root's row carries the operation and the whole
--     duration; a row without the root may belong to a longer trace, so it
--     passes minDuration); maxDuration excludes a trace when a row is longer.
--  2. the exact summary of each candidate, summed up from all its rows
--     (found by the bloom filter of trace ids, schema 010, among those that
--     start within an hour of the window, near_start_ns to near_end_ns, as
--     a trace's spans do), and how many of its rows pass step 1's filters in
--     the window (passing_rows; columns named by their table where the
--     select list shadows them).
-- The reader filters the summaries again, orders them newest first and pages
-- them: as two more levels of this statement, that work on the candidates
-- alone cost the engine more to analyse and plan than to do. The passing
-- rows of all candidates are as many as step 1 took, or more when the window
-- held more; fewer than it asked for means the window held no more. The
-- reader fills two slots with the filters that are set and nothing of those
-- that are not (the engine analyses each expression of the text anew for
-- every search, one that is not set as much as one that is):
-- candidate_filters with step 1's row filters, then one `AND trace_id IN
-- (spans with attributes[<key N>] = <value N> near the window)` per
-- attribute filter and one for the span name; row_filters with the same row
-- filters, for passing_rows. Values are bound as parameters. Every read is of
-- the caller's {tenant}: another tenant's rows of the same trace id are not
-- the trace's.
SELECT
    trace_id,
    toInt64(toUnixTimestamp64Nano(min(start))) AS start_ns,
    max(toInt64(toUnixTimestamp64Nano(start)) + toInt64(duration_ns)) - start_ns AS duration_ns,
    max(root_service) AS root_service,
    max(root_name) AS root_name,
    sum(span_count) AS span_count,
    sum(error_count) AS error_count,
    arraySort(groupUniqArrayArray(services)) AS services,
    countIf(start >= fromUnixTimestamp64Nano({start_ns:Int64})
        AND start <= fromUnixTimestamp64Nano({end_ns:Int64})
        ${row_filters}) AS passing_rows
FROM
(
    -- Each distinct row once: a kept trace read again after a sampler
    -- crash (distributed mode) may be inserted a second time, alike.
    SELECT DISTINCT trace_id, start, duration_ns, root_service, root_name, span_count, error_count, services
    FROM ${db}.trace_summaries
    WHERE tenant = {tenant:String}
      AND start >= fromUnixTimestamp64Nano({near_start_ns:Int64})
      AND start <= fromUnixTimestamp64Nano({near_end_ns:Int64})
      AND trace_id IN
    (
        SELECT trace_id
        FROM ${db}.trace_summaries
        WHERE tenant = {tenant:String}
          AND start >= fromUnixTimestamp64Nano({start_ns:Int64})
          AND start <= fromUnixTimestamp64Nano({end_ns:Int64})
          ${candidate_filters}
        ORDER BY start DESC, trace_id DESC
        LIMIT {candidates:Int64}
    )
) AS trace_summaries
GROUP BY trace_id

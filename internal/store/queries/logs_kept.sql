-- Which of the trace ids of a page of logs (comma-separated) are stored.
SELECT DISTINCT trace_id
FROM ${db}.trace_index
WHERE trace_id IN (SELECT arrayJoin(splitByChar(',', {trace_ids:String})))

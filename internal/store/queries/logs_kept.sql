-- Which of the trace ids of a page of logs (comma-separated) are stored:
-- those with spans, found by the spans' sorting key (trace id first).
SELECT DISTINCT trace_id
FROM ${db}.spans
WHERE trace_id IN (SELECT arrayJoin(splitByChar(',', {trace_ids:String})))
  AND tenant = {tenant:String}

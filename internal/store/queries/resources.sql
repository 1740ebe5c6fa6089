-- The resources {resource_ids} (decimal ids joined by commas) of the tenant,
-- each its latest row: those of log lines that the reader has not cached.
SELECT resource_id, attributes
FROM ${db}.resources
WHERE resource_id IN (SELECT toUInt64(arrayJoin(splitByChar(',', {resource_ids:String}))))
  AND tenant = {tenant:String}
ORDER BY resource_id, last_seen DESC
LIMIT 1 BY resource_id

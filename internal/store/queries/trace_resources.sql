-- The resources named by a trace's spans (schema 008), each once: the
-- {ids} are decimal resource ids joined by commas, of the trace's tenant.
SELECT resource_id, CAST(attributes, 'Map(String, String)') AS attributes
FROM ${db}.resources
WHERE resource_id IN (SELECT toUInt64(arrayJoin(splitByChar(',', {ids:String}))))
  AND tenant = {tenant:String}
ORDER BY resource_id, last_seen DESC
LIMIT 1 BY resource_id

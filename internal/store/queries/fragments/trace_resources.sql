-- Part 4 of trace_window.sql: the resources {resource_ids} (decimal ids joined
-- by commas) of the tenant, each its latest row.
UNION ALL
(
    SELECT 4, '', '', 0, 0, attributes, resource_id
    FROM ${db}.resources
    WHERE resource_id IN (SELECT toUInt64(arrayJoin(splitByChar(',', {resource_ids:String}))))
      AND tenant = {tenant:String}
    ORDER BY resource_id, last_seen DESC
    LIMIT 1 BY resource_id
)

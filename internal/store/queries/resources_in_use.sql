-- The tenant's resources in use, each its latest row, the newest
-- {max_resources:UInt64}: those with a row of the last two hours (the writer
-- writes a resource's row again at most hourly while its spans come,
-- tracerows.go). A lookup reads them into the reader's cache once a minute,
-- beside its own statements (resourcecache.go), so that the cache seldom
-- lacks a resource a trace's spans name.
SELECT resource_id, attributes
FROM ${db}.resources
WHERE tenant = {tenant:String} AND last_seen >= now() - INTERVAL 2 HOUR
ORDER BY last_seen DESC
LIMIT 1 BY resource_id
LIMIT {max_resources:UInt64}

#!/bin/bash
# The query service's ClickHouse user: SELECT on tracesift's database and
# nothing else. readonly=2 refuses every write and DDL yet lets a query set its
# own limits (max_execution_time, max_memory_usage), as tracesift-query's do.
# Run once by the ClickHouse image, on an empty data directory.
set -euo pipefail
clickhouse client --user "${CLICKHOUSE_USER}" --password "${CLICKHOUSE_PASSWORD}" --multiquery <<SQL
CREATE USER IF NOT EXISTS tracesift_query IDENTIFIED WITH sha256_password BY '${TRACESIFT_QUERY_CLICKHOUSE_PASSWORD}'
    SETTINGS readonly = 2;
GRANT SELECT ON tracesift.* TO tracesift_query;
SQL

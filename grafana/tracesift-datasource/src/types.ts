import type { DataSourceJsonData } from '@grafana/data';
import type { DataQuery } from '@grafana/schema';

// The query types the backend answers (pkg/plugin/query.go).
export type QueryType = 'trace' | 'search' | 'logs' | 'findings' | 'serviceGraph' | 'red' | 'compare' | 'clockSkew';

// TracesiftQuery is the query model the backend reads (queryModel in
// pkg/plugin/query.go); each query type reads its own fields.
export interface TracesiftQuery extends DataQuery {
  queryType?: QueryType;
  traceId?: string;
  service?: string;
  operation?: string;
  minDuration?: string; // search; compare: slower than this counts as failing
  maxDuration?: string;
  errorsOnly?: boolean;
  attributes?: string; // key=value pairs separated by spaces
  words?: string;
  severity?: string;
  kind?: string;
  groupBy?: string;
  limit?: number;
}

export type TracesiftOptions = DataSourceJsonData;

// The secure settings: the query API's bearer token, when it requires one.
export interface TracesiftSecureOptions {
  token?: string;
}

export const findingKinds = [
  'slowest_hop',
  'critical_path',
  'retry_fanout',
  'timeout',
  'error_origin',
  'broken_propagation',
  'clock_skew',
  'throttled',
  'fast_fail',
  'fallback',
  'pool_exhausted',
  'retry_budget',
  'instance_outlier',
];

import { CoreApp, DataSourceInstanceSettings, ScopedVars } from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';

import { TracesiftOptions, TracesiftQuery } from './types';

// Fields that may hold template variables ($service, …).
const templated = ['traceId', 'service', 'operation', 'attributes', 'words', 'severity', 'kind', 'groupBy'] as const;

// DataSource sends queries to the backend (pkg/plugin), which calls
// tracesift's query API.
export class DataSource extends DataSourceWithBackend<TracesiftQuery, TracesiftOptions> {
  constructor(settings: DataSourceInstanceSettings<TracesiftOptions>) {
    super(settings);
  }

  getDefaultQuery(_app: CoreApp): Partial<TracesiftQuery> {
    return { queryType: 'search', limit: 20 };
  }

  applyTemplateVariables(query: TracesiftQuery, scoped: ScopedVars): TracesiftQuery {
    const srv = getTemplateSrv();
    const out: TracesiftQuery = { ...query };
    for (const key of templated) {
      const v = query[key];
      if (typeof v === 'string' && v !== '') {
        out[key] = srv.replace(v, scoped);
      }
    }
    return out;
  }

  filterQuery(query: TracesiftQuery): boolean {
    return !query.hide;
  }

  // The services of the last day, for the query editor.
  async services(): Promise<string[]> {
    const r = await this.getResource<{ services: string[] }>('services');
    return r.services ?? [];
  }

  // A service's operations of the last day.
  async operations(service: string): Promise<string[]> {
    const r = await this.getResource<{ operations: string[] }>(`services/${encodeURIComponent(service)}/operations`);
    return r.operations ?? [];
  }
}

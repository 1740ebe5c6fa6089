import { CoreApp, DataSourceInstanceSettings, MetricFindValue, ScopedVars } from '@grafana/data';
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

  // The instances that served a service in the last hour, busiest first.
  async instances(service: string): Promise<string[]> {
    const r = await this.getResource<{ instances: string[] }>(`services/${encodeURIComponent(service)}/instances`);
    return r.instances ?? [];
  }

  // metricFindQuery answers dashboard variables: services(),
  // operations(<service>), instances(<service>); the service may be a
  // variable ($service).
  async metricFindQuery(query: string, options?: { scopedVars?: ScopedVars }): Promise<MetricFindValue[]> {
    const q = getTemplateSrv().replace(query ?? '', options?.scopedVars).trim();
    const m = /^(services|operations|instances)\((.*)\)$/.exec(q);
    if (!m || (m[1] === 'services') !== (m[2].trim() === '')) {
      throw new Error(`variable query ${JSON.stringify(q)}: want services(), operations(<service>) or instances(<service>)`);
    }
    const arg = m[2].trim();
    const names =
      m[1] === 'services' ? await this.services() : m[1] === 'operations' ? await this.operations(arg) : await this.instances(arg);
    return names.map((text) => ({ text }));
  }

  // A service's operations of the last day.
  async operations(service: string): Promise<string[]> {
    const r = await this.getResource<{ operations: string[] }>(`services/${encodeURIComponent(service)}/operations`);
    return r.operations ?? [];
  }
}

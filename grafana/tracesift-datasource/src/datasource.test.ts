import { DataSourceInstanceSettings, DataSourcePluginMeta } from '@grafana/data';
import { setTemplateSrv, TemplateSrv } from '@grafana/runtime';

import { DataSource } from './datasource';
import { TracesiftOptions } from './types';

const settings: DataSourceInstanceSettings<TracesiftOptions> = {
  id: 1,
  uid: 'ts',
  type: 'tracesift-datasource',
  name: 'tracesift',
  access: 'proxy',
  readOnly: false,
  jsonData: {},
  meta: {} as DataSourcePluginMeta,
};

describe('DataSource', () => {
  beforeEach(() => {
    const vars: Record<string, string> = { $service: 'checkout', $instance: 'cat-4' };
    setTemplateSrv({
      replace: (s?: string) => (s ?? '').replace(/\$[a-z]+/g, (v) => vars[v] ?? v),
    } as unknown as TemplateSrv);
  });

  it('replaces template variables in the fields that take them', () => {
    const ds = new DataSource(settings);
    const q = ds.applyTemplateVariables(
      { refId: 'A', queryType: 'search', service: '$service', attributes: 'host.name=$instance', limit: 20 },
      {}
    );
    expect(q).toEqual({ refId: 'A', queryType: 'search', service: 'checkout', attributes: 'host.name=cat-4', limit: 20 });
  });

  it('defaults to a search of 20 traces', () => {
    expect(new DataSource(settings).getDefaultQuery('explore' as never)).toEqual({ queryType: 'search', limit: 20 });
  });

  it('reads the services and operations from the backend resources', async () => {
    const ds = new DataSource(settings);
    const get = jest.spyOn(ds, 'getResource').mockImplementation(async (path: string) =>
      path === 'services' ? { services: ['shop', 'shop-db'] } : { operations: ['GET /cart'] }
    );
    expect(await ds.services()).toEqual(['shop', 'shop-db']);
    expect(await ds.operations('shop/v2')).toEqual(['GET /cart']);
    expect(get).toHaveBeenLastCalledWith('services/shop%2Fv2/operations');
  });

  it('answers dashboard variables', async () => {
    const ds = new DataSource(settings);
    const get = jest.spyOn(ds, 'getResource').mockImplementation(async (path: string) => {
      if (path === 'services') {
        return { services: ['checkout'] };
      }
      return path.endsWith('/instances') ? { instances: ['cat-4'] } : { operations: ['GET /cart'] };
    });
    expect(await ds.metricFindQuery('services()')).toEqual([{ text: 'checkout' }]);
    expect(await ds.metricFindQuery(' operations($service) ')).toEqual([{ text: 'GET /cart' }]);
    expect(get).toHaveBeenLastCalledWith('services/checkout/operations');
    expect(await ds.metricFindQuery('instances(checkout)')).toEqual([{ text: 'cat-4' }]);
    expect(get).toHaveBeenLastCalledWith('services/checkout/instances');
    await expect(ds.metricFindQuery('everything')).rejects.toThrow('want services()');
    await expect(ds.metricFindQuery('operations()')).rejects.toThrow('want services()');
  });

  it('skips hidden queries', () => {
    const ds = new DataSource(settings);
    expect(ds.filterQuery({ refId: 'A', hide: true })).toBe(false);
    expect(ds.filterQuery({ refId: 'A' })).toBe(true);
  });
});

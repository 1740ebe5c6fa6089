import React from 'react';
import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';

import { DataSource } from '../datasource';
import { TracesiftQuery } from '../types';
import { ConfigEditor } from './ConfigEditor';
import { QueryEditor } from './QueryEditor';

const fakeDatasource = () =>
  ({
    services: jest.fn().mockResolvedValue(['shop', 'shop-db']),
    operations: jest.fn().mockResolvedValue(['GET /cart']),
  }) as unknown as DataSource;

function renderQuery(query: TracesiftQuery, ds = fakeDatasource()) {
  const onChange = jest.fn();
  const onRunQuery = jest.fn();
  render(<QueryEditor query={query} onChange={onChange} onRunQuery={onRunQuery} datasource={ds} />);
  return { onChange, onRunQuery, ds };
}

describe('QueryEditor', () => {
  it('shows the fields of the query type', async () => {
    const { ds } = renderQuery({ refId: 'A', queryType: 'search', service: 'shop' });
    expect(screen.getByLabelText('Min duration')).toBeInTheDocument();
    expect(screen.getByLabelText('Attributes')).toBeInTheDocument();
    expect(screen.queryByLabelText('Trace ID')).not.toBeInTheDocument();
    await waitFor(() => expect(ds.operations).toHaveBeenCalledWith('shop'));
    expect(ds.services).toHaveBeenCalled();
  });

  it('asks a comparison for a service and what is slow', async () => {
    const { ds } = renderQuery({ refId: 'A', queryType: 'compare', service: 'cat' });
    expect(screen.getByLabelText('Slow above')).toBeInTheDocument();
    await waitFor(() => expect(ds.operations).toHaveBeenCalledWith('cat'));
  });

  it('asks a clock skew query for nothing', () => {
    const { ds } = renderQuery({ refId: 'A', queryType: 'clockSkew' });
    expect(screen.queryByLabelText('Service')).not.toBeInTheDocument();
    expect(ds.services).not.toHaveBeenCalled();
  });

  it('asks a trace query for its id only', () => {
    const { ds } = renderQuery({ refId: 'A', queryType: 'trace' });
    expect(screen.getByLabelText('Trace ID')).toBeInTheDocument();
    expect(screen.queryByLabelText('Service')).not.toBeInTheDocument();
    expect(ds.services).not.toHaveBeenCalled();
  });

  it('changes the query type and runs the query', async () => {
    const { onChange, onRunQuery } = renderQuery({ refId: 'A', queryType: 'search' });
    await userEvent.click(screen.getByLabelText('Logs'));
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', queryType: 'logs' });
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('runs a text field when it is left, not as it is typed', async () => {
    const { onChange, onRunQuery } = renderQuery({ refId: 'A', queryType: 'trace' });
    await userEvent.type(screen.getByLabelText('Trace ID'), 'a');
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', queryType: 'trace', traceId: 'a' });
    expect(onRunQuery).not.toHaveBeenCalled();
    await userEvent.tab();
    expect(onRunQuery).toHaveBeenCalled();
  });

  it('turns on errors only', async () => {
    const { onChange } = renderQuery({ refId: 'A', queryType: 'search' });
    await userEvent.click(screen.getByLabelText('Errors only'));
    expect(onChange).toHaveBeenLastCalledWith({ refId: 'A', queryType: 'search', errorsOnly: true });
  });
});

describe('ConfigEditor', () => {
  const options = {
    id: 1,
    uid: 'ts',
    orgId: 1,
    name: 'tracesift',
    type: 'tracesift-datasource',
    typeName: 'tracesift',
    typeLogoUrl: '',
    access: 'proxy',
    url: '',
    user: '',
    database: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    jsonData: {},
    secureJsonFields: {},
    readOnly: false,
    withCredentials: false,
  };

  it('sets the URL', async () => {
    const onOptionsChange = jest.fn();
    render(<ConfigEditor options={options as never} onOptionsChange={onOptionsChange} />);
    await userEvent.type(screen.getByLabelText('URL'), 'h');
    expect(onOptionsChange).toHaveBeenLastCalledWith(expect.objectContaining({ url: 'h' }));
  });

  it('keeps the token secret: set, then reset', async () => {
    const onOptionsChange = jest.fn();
    const { rerender } = render(<ConfigEditor options={options as never} onOptionsChange={onOptionsChange} />);
    await userEvent.type(screen.getByLabelText('Token'), 's');
    expect(onOptionsChange).toHaveBeenLastCalledWith(expect.objectContaining({ secureJsonData: { token: 's' } }));

    rerender(
      <ConfigEditor
        options={{ ...options, secureJsonFields: { token: true } } as never}
        onOptionsChange={onOptionsChange}
      />
    );
    expect(screen.getByDisplayValue('configured')).toBeInTheDocument();
    await userEvent.click(screen.getByRole('button', { name: 'Reset' }));
    expect(onOptionsChange).toHaveBeenLastCalledWith(
      expect.objectContaining({ secureJsonFields: { token: false }, secureJsonData: { token: '' } })
    );
  });
});

import React from 'react';
import {
  DataSourcePluginOptionsEditorProps,
  onUpdateDatasourceSecureJsonDataOption,
  updateDatasourcePluginResetOption,
} from '@grafana/data';
import { InlineField, Input, SecretInput } from '@grafana/ui';

import { TracesiftOptions, TracesiftSecureOptions } from '../types';

type Props = DataSourcePluginOptionsEditorProps<TracesiftOptions, TracesiftSecureOptions>;

// ConfigEditor sets the query API's URL and, when the API requires one, its
// bearer token (kept in Grafana's secure settings).
export function ConfigEditor(props: Props) {
  const { options, onOptionsChange } = props;
  return (
    <>
      <InlineField
        label="URL"
        labelWidth={16}
        tooltip="tracesift's query API: the collector's query port, or tracesift-query"
      >
        <Input
          id="tracesift-url"
          aria-label="URL"
          width={50}
          placeholder="http://localhost:16686"
          value={options.url}
          onChange={(e) => onOptionsChange({ ...options, url: e.currentTarget.value })}
        />
      </InlineField>
      <InlineField label="Token" labelWidth={16} tooltip="Sent as Authorization: Bearer, when the API requires tokens">
        <SecretInput
          id="tracesift-token"
          aria-label="Token"
          width={50}
          isConfigured={Boolean(options.secureJsonFields?.token)}
          value={options.secureJsonData?.token ?? ''}
          onChange={onUpdateDatasourceSecureJsonDataOption(props, 'token')}
          onReset={() => updateDatasourcePluginResetOption(props, 'token')}
        />
      </InlineField>
    </>
  );
}

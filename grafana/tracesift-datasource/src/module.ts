import { DataSourcePlugin } from '@grafana/data';

import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { DataSource } from './datasource';
import { TracesiftOptions, TracesiftQuery, TracesiftSecureOptions } from './types';

export const plugin = new DataSourcePlugin<DataSource, TracesiftQuery, TracesiftOptions, TracesiftSecureOptions>(
  DataSource
)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor);

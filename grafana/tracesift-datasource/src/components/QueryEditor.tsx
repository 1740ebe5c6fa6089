import React, { useEffect, useState } from 'react';
import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, InlineSwitch, Input, RadioButtonGroup, Select } from '@grafana/ui';

import { DataSource } from '../datasource';
import { findingKinds, QueryType, TracesiftOptions, TracesiftQuery } from '../types';

type Props = QueryEditorProps<DataSource, TracesiftQuery, TracesiftOptions>;

const queryTypes: Array<SelectableValue<QueryType>> = [
  { label: 'Trace', value: 'trace', description: 'One trace by id, with its logs and findings' },
  { label: 'Search', value: 'search', description: 'Traces by service, operation, duration, attributes' },
  { label: 'Logs', value: 'logs', description: 'Log lines, each linked to its trace' },
  { label: 'Findings', value: 'findings', description: 'What went wrong, across traces' },
  { label: 'Service graph', value: 'serviceGraph', description: 'Calls between services' },
  { label: 'RED', value: 'red', description: 'Requests, errors and p99 on all traffic' },
  { label: 'Failing vs healthy', value: 'compare', description: 'What failing requests have in common' },
  { label: 'Clock skew', value: 'clockSkew', description: 'Host pairs whose clocks disagree, over time' },
];

const severities = ['', 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'].map((s) => ({ label: s || 'any', value: s }));
const groupings = ['operation', 'instance', 'version'].map((g) => ({ label: g, value: g }));
const options = (names: string[]) => names.map((n) => ({ label: n, value: n }));

const width = 30;

// QueryEditor edits one query: its type, then the fields that type reads.
export function QueryEditor({ query, onChange, onRunQuery, datasource }: Props) {
  const type = query.queryType ?? 'search';
  const [services, setServices] = useState<string[]>([]);
  const [operations, setOperations] = useState<string[]>([]);
  const needsServices = type !== 'trace' && type !== 'serviceGraph' && type !== 'clockSkew';

  useEffect(() => {
    if (!needsServices) {
      return;
    }
    let live = true;
    datasource.services().then(
      (s) => live && setServices(s),
      () => live && setServices([])
    );
    return () => {
      live = false;
    };
  }, [datasource, needsServices]);

  useEffect(() => {
    if (!query.service || (type !== 'search' && type !== 'red' && type !== 'compare')) {
      setOperations([]);
      return;
    }
    let live = true;
    datasource.operations(query.service).then(
      (o) => live && setOperations(o),
      () => live && setOperations([])
    );
    return () => {
      live = false;
    };
  }, [datasource, query.service, type]);

  const set = (patch: Partial<TracesiftQuery>, run = true) => {
    onChange({ ...query, ...patch });
    if (run) {
      onRunQuery();
    }
  };
  // Text fields change as typed and run when left.
  const text = (key: keyof TracesiftQuery, label: string, placeholder: string, tooltip?: string) => (
    <InlineField label={label} labelWidth={14} tooltip={tooltip}>
      <Input
        aria-label={label}
        width={width}
        placeholder={placeholder}
        value={(query[key] as string | undefined) ?? ''}
        onChange={(e) => set({ [key]: e.currentTarget.value }, false)}
        onBlur={onRunQuery}
      />
    </InlineField>
  );
  const pick = (key: 'service' | 'operation', label: string, names: string[]) => (
    <InlineField label={label} labelWidth={14}>
      <Select
        aria-label={label}
        width={width}
        isClearable
        allowCustomValue
        placeholder="any"
        options={options(names)}
        value={query[key] ? { label: query[key], value: query[key] } : null}
        onChange={(v) => set(key === 'service' ? { service: v?.value, operation: undefined } : { operation: v?.value })}
      />
    </InlineField>
  );
  const limit = (
    <InlineField label="Limit" labelWidth={14}>
      <Input
        aria-label="Limit"
        type="number"
        width={10}
        value={query.limit ?? ''}
        onChange={(e) => set({ limit: e.currentTarget.value ? Number(e.currentTarget.value) : undefined }, false)}
        onBlur={onRunQuery}
      />
    </InlineField>
  );

  return (
    <>
      <InlineFieldRow>
        <InlineField label="Query type" labelWidth={14}>
          <RadioButtonGroup<QueryType> options={queryTypes} value={type} onChange={(v) => set({ queryType: v })} />
        </InlineField>
      </InlineFieldRow>
      {type === 'trace' && <InlineFieldRow>{text('traceId', 'Trace ID', '4bf92f3577b34da6a3ce929d0e0e4736')}</InlineFieldRow>}
      {type === 'search' && (
        <>
          <InlineFieldRow>
            {pick('service', 'Service', services)}
            {pick('operation', 'Operation', operations)}
          </InlineFieldRow>
          <InlineFieldRow>
            {text('minDuration', 'Min duration', '100ms')}
            {text('maxDuration', 'Max duration', '5s')}
            <InlineField label="Errors only" labelWidth={14}>
              <InlineSwitch
                aria-label="Errors only"
                value={Boolean(query.errorsOnly)}
                onChange={(e) => set({ errorsOnly: e.currentTarget.checked })}
              />
            </InlineField>
          </InlineFieldRow>
          <InlineFieldRow>
            {text('attributes', 'Attributes', 'http.route=/cart user.tier=gold', 'key=value, on some span; at most 4')}
            {limit}
          </InlineFieldRow>
        </>
      )}
      {type === 'logs' && (
        <>
          <InlineFieldRow>
            {pick('service', 'Service', services)}
            {text('words', 'Words', 'payment declined', 'Every word, as a whole word, any case')}
            <InlineField label="Severity" labelWidth={14}>
              <Select
                aria-label="Severity"
                width={16}
                options={severities}
                value={query.severity ?? ''}
                onChange={(v) => set({ severity: v.value || undefined })}
              />
            </InlineField>
          </InlineFieldRow>
          <InlineFieldRow>
            {text('traceId', 'Trace ID', 'any')}
            {text('attributes', 'Attributes', 'thread.name=main', 'key=value, on the line or its resource')}
            {limit}
          </InlineFieldRow>
        </>
      )}
      {type === 'findings' && (
        <InlineFieldRow>
          <InlineField label="Kind" labelWidth={14}>
            <Select
              aria-label="Kind"
              width={width}
              isClearable
              placeholder="any"
              options={options(findingKinds)}
              value={query.kind ? { label: query.kind, value: query.kind } : null}
              onChange={(v) => set({ kind: v?.value })}
            />
          </InlineField>
          {pick('service', 'Service', services)}
          {limit}
        </InlineFieldRow>
      )}
      {type === 'red' && (
        <InlineFieldRow>
          {pick('service', 'Service', services)}
          {pick('operation', 'Operation', operations)}
          <InlineField label="Group by" labelWidth={14} tooltip="operation, instance, version or a configured dimension">
            <Select
              aria-label="Group by"
              width={20}
              allowCustomValue
              options={groupings}
              value={{ label: query.groupBy ?? 'operation', value: query.groupBy ?? 'operation' }}
              onChange={(v) => set({ groupBy: v.value })}
            />
          </InlineField>
          {limit}
        </InlineFieldRow>
      )}
      {type === 'compare' && (
        <InlineFieldRow>
          {pick('service', 'Service', services)}
          {pick('operation', 'Operation', operations)}
          {text('minDuration', 'Slow above', '1s', 'A request slower than this fails (1s by default)')}
          {limit}
        </InlineFieldRow>
      )}
    </>
  );
}

// tracesift's web UI: pages rendered in the browser from the query API's
// JSON (/api/v1). No framework: a router, a few pages, DOM built from
// escaped template strings.
'use strict';

const main = () => document.getElementById('main');

// esc makes any value safe inside HTML text and attributes.
function esc(v) {
  return String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// With tenants configured the API wants a bearer token: asked for once on
// the first 401, kept for the browser tab (sessionStorage), dropped when refused.
const tokenKey = 'tracesift.token';
let asking = null;
function askToken() {
  asking ??= Promise.resolve().then(() => {
    const t = window.prompt('This tracesift needs the token of your tenant:');
    if (t) sessionStorage.setItem(tokenKey, t.trim());
    asking = null;
    return Boolean(t);
  });
  return asking;
}

async function api(path, params, retried) {
  const q = params ? '?' + new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '' && v != null)) : '';
  const headers = { Accept: 'application/json' };
  const token = sessionStorage.getItem(tokenKey);
  if (token) headers.Authorization = 'Bearer ' + token;
  const r = await fetch('/api/v1' + path + q, { headers });
  if (r.status === 401 && !retried) {
    // Another request may have got a new token meanwhile: then just retry.
    const stale = sessionStorage.getItem(tokenKey) === token;
    if (stale) sessionStorage.removeItem(tokenKey);
    if (!stale || await askToken()) return api(path, params, true);
  }
  const body = await r.json().catch(() => ({}));
  if (!r.ok) {
    throw new Error(body.error || `${r.status} ${r.statusText}`);
  }
  return body;
}

// ms renders a duration in nanoseconds for a person: 930 ms, 1.52 s, 420 µs.
function ms(ns) {
  const v = Number(ns) / 1e6;
  if (v >= 1000) return (v / 1000).toFixed(v >= 10000 ? 1 : 2) + ' s';
  if (v >= 1) return (v >= 100 ? v.toFixed(0) : v.toFixed(1)) + ' ms';
  return (v * 1000).toFixed(0) + ' µs';
}

// when renders Unix nanoseconds (a string) as local time, to the
// millisecond (one formatter: making one per call costs more than the rest
// of a row).
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium', hour12: false });
function when(ns) {
  const d = new Date(Number(BigInt(ns) / 1000000n));
  return dateFormat.format(d) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

const ranges = { '15m': 15, '1h': 60, '6h': 360, '24h': 1440, '7d': 10080 };
function windowParams(range) {
  const minutes = ranges[range] || 60;
  const end = BigInt(Date.now()) * 1000000n;
  return { start: String(end - BigInt(minutes) * 60000000000n), end: String(end) };
}

function fail(err) {
  main().innerHTML = `<p class="error" role="alert">${esc(err.message || err)}</p>`;
}

// ---- Router ---------------------------------------------------------------

const pages = [
  [/^\/$/, () => go('/search', true)],
  [/^\/search$/, searchPage],
  [/^\/trace\/([0-9a-fA-F]+)$/, (m) => tracePage(m[1].toLowerCase())],
  [/^\/logs$/, logsPage],
  [/^\/findings$/, findingsPage],
  [/^\/services$/, servicesPage],
];

function route() {
  const path = location.pathname;
  for (const a of document.querySelectorAll('nav a')) {
    if (path.startsWith(a.getAttribute('href'))) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  for (const [re, page] of pages) {
    const m = re.exec(path);
    if (m) {
      Promise.resolve(page(m)).catch(fail);
      return;
    }
  }
  main().innerHTML = '<p class="error" role="alert">No such page.</p>';
}

function go(url, replace) {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  route();
}

document.addEventListener('click', (e) => {
  const a = e.target.closest('a[data-link]');
  if (a && !e.ctrlKey && !e.metaKey && !e.shiftKey && e.button === 0) {
    e.preventDefault();
    go(a.getAttribute('href'));
  }
});
window.addEventListener('popstate', route);
document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('goto').addEventListener('submit', (e) => {
    e.preventDefault();
    const id = new FormData(e.target).get('id').trim();
    if (id) go('/trace/' + encodeURIComponent(id));
  });
  route();
});

// ---- Search ---------------------------------------------------------------

// A form whose fields live in the URL, so that a search can be shared.
function filtersForm(fields, params) {
  return `<form class="filters" id="filters">${fields
    .map(([name, label, kind, opts]) => {
      const v = params.get(name) ?? (name === 'range' ? '1h' : '');
      if (kind === 'select') {
        return `<label>${esc(label)}<select name="${name}">${opts
          .map(([val, text]) => `<option value="${esc(val)}"${val === v ? ' selected' : ''}>${esc(text)}</option>`)
          .join('')}</select></label>`;
      }
      if (kind === 'check') {
        return `<label class="check"><input type="checkbox" name="${name}" value="1"${v ? ' checked' : ''}>${esc(label)}</label>`;
      }
      return `<label>${esc(label)}<input name="${name}" value="${esc(v)}" placeholder="${esc(opts || '')}"></label>`;
    })
    .join('')}<button type="submit">Search</button></form>`;
}

function bindFilters(base) {
  document.getElementById('filters').addEventListener('submit', (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const [k, v] of new FormData(e.target)) if (v !== '') p.set(k, v);
    go(base + (p.toString() ? '?' + p : ''));
  });
}

const rangeOptions = Object.keys(ranges).map((r) => [r, 'last ' + r]);

async function searchPage() {
  const params = new URLSearchParams(location.search);
  const services = (await api('/services').catch(() => ({ services: [] }))).services;
  const service = params.get('service') ?? '';
  const operations = service ? (await api('/services/' + encodeURIComponent(service) + '/operations').catch(() => ({ operations: [] }))).operations : [];
  main().innerHTML =
    `<h1 class="sr-only">Search traces</h1>` +
    filtersForm(
      [
        ['service', 'Service', 'select', [['', 'any'], ...services.map((s) => [s, s])]],
        ['operation', 'Root operation', 'select', [['', 'any'], ...operations.map((s) => [s, s])]],
        ['minDuration', 'Min duration', 'text', '100ms'],
        ['maxDuration', 'Max duration', 'text', '5s'],
        ['attrs', 'Attributes', 'text', 'http.route=/cart'],
        ['range', 'Time', 'select', rangeOptions],
        ['errors', 'Errors only', 'check'],
      ],
      params
    ) +
    `<div id="results" aria-live="polite"><p class="muted">Searching…</p></div>`;
  bindFilters('/search');
  document.querySelector('#filters select[name=service]').addEventListener('change', (e) => e.target.form.requestSubmit());

  const limit = 20;
  const offset = Number(params.get('offset') || 0);
  const q = { service, operation: params.get('operation') ?? '', minDuration: params.get('minDuration') ?? '',
    maxDuration: params.get('maxDuration') ?? '', status: params.get('errors') ? 'error' : '', limit, offset,
    ...windowParams(params.get('range')) };
  for (const kv of (params.get('attrs') || '').split(/\s+/).filter(Boolean)) {
    const i = kv.indexOf('=');
    if (i > 0) q['attr.' + kv.slice(0, i)] = kv.slice(i + 1);
  }
  const results = document.getElementById('results');
  let traces;
  try {
    traces = (await api('/traces', q)).traces;
  } catch (err) {
    results.innerHTML = `<p class="error" role="alert">${esc(err.message)}</p>`;
    return;
  }
  if (!traces.length) {
    results.innerHTML = '<p class="muted">No trace matches in this window.</p>';
    return;
  }
  const longest = Math.max(...traces.map((t) => t.durationNano), 1);
  results.innerHTML = `<table class="traces"><caption class="sr-only">Traces, newest first</caption>
    <thead><tr><th>Started</th><th>Trace</th><th>Duration</th><th class="num">Spans</th><th class="num">Errors</th><th>Services</th></tr></thead><tbody>${traces
      .map(
        (t) => `<tr class="${t.errorCount > 0 ? 'failed' : ''}" data-trace="${esc(t.traceId)}">
        <td>${esc(when(t.startTimeUnixNano))}</td>
        <td><a href="/trace/${esc(t.traceId)}" data-link>${esc(t.rootService)}: ${esc(t.rootName || '(no root)')}</a>
          <div class="mono muted">${esc(t.traceId)}</div></td>
        <td><div class="dur"><div class="track"><div class="fill" style="width:${((100 * t.durationNano) / longest).toFixed(1)}%"></div></div>${esc(ms(t.durationNano))}</div></td>
        <td class="num">${t.spanCount}</td><td class="num ${t.errorCount ? 'error' : ''}">${t.errorCount}</td>
        <td>${esc(t.services.join(', '))}</td></tr>`
      )
      .join('')}</tbody></table>
    <div class="more">${offset > 0 ? `<a href="${pageURL(params, offset - limit)}" data-link>← Newer</a> ` : ''}${
      traces.length === limit ? `<a href="${pageURL(params, offset + limit)}" data-link>Older →</a>` : ''
    }</div>`;
}

function pageURL(params, offset) {
  const p = new URLSearchParams(params);
  if (offset > 0) p.set('offset', offset);
  else p.delete('offset');
  return location.pathname + (p.toString() ? '?' + p : '');
}

// ---- Trace ----------------------------------------------------------------

async function tracePage(id) {
  main().innerHTML = '<p class="muted">Loading the trace…</p>';
  // Brief spans: the details of one are read when it is opened.
  const t = await api('/traces/' + encodeURIComponent(id), { brief: true });
  performance.mark('trace-fetched');
  const spans = t.spans;
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const children = new Map();
  const roots = [];
  for (const s of spans) {
    if (s.parentSpanId && byId.has(s.parentSpanId)) {
      if (!children.has(s.parentSpanId)) children.set(s.parentSpanId, []);
      children.get(s.parentSpanId).push(s);
    } else {
      roots.push(s); // a root, or a span whose parent was not received
    }
  }
  // Times parsed once a span, from the API's strings.
  for (const s of spans) {
    s._start = BigInt(s.adjustedStartTimeUnixNano);
    s._end = BigInt(s.adjustedEndTimeUnixNano);
  }
  const byStart = (a, b) => (a._start < b._start ? -1 : a._start > b._start ? 1 : 0);
  roots.sort(byStart);
  for (const c of children.values()) c.sort(byStart);
  const t0 = spans.reduce((m, s) => (s._start < m ? s._start : m), spans[0]._start);
  const t1 = spans.reduce((m, s) => (s._end > m ? s._end : m), 0n);
  const total = Number(t1 - t0) || 1;

  // Findings on their spans; those about no span of the trace on the trace.
  const findingsOf = new Map();
  const traceFindings = [];
  const critical = new Set();
  for (const f of t.findings) {
    const on = (f.spanIds || []).filter((sid) => byId.has(sid));
    if (f.kind === 'critical_path') on.forEach((sid) => critical.add(sid));
    if (!on.length) traceFindings.push(f);
    for (const sid of f.kind === 'critical_path' ? on.slice(-1) : on) {
      if (!findingsOf.has(sid)) findingsOf.set(sid, []);
      findingsOf.get(sid).push(f);
    }
  }
  const logsOf = new Map();
  const traceLogs = [];
  for (const l of t.logs) {
    if (l.spanId && byId.has(l.spanId)) {
      if (!logsOf.has(l.spanId)) logsOf.set(l.spanId, []);
      logsOf.get(l.spanId).push(l);
    } else {
      traceLogs.push(l);
    }
  }

  // Rows in tree order, depth first.
  const rows = [];
  const walk = (s, depth) => {
    rows.push([s, depth]);
    for (const c of children.get(s.spanId) || []) walk(c, depth + 1);
  };
  roots.forEach((r) => walk(r, 0));

  const errors = spans.filter((s) => s.status.code === 'ERROR').length;
  const services = [...new Set(spans.map((s) => s.service))];
  const offsets = Object.entries(t.clockOffsets || {});
  const root = roots[0];
  const html = [];
  html.push(`<h1>${esc(root.service)}: ${esc(root.name)}</h1>
    <div class="summary"><span class="mono">${esc(t.traceId)}</span><span>${esc(ms(total))}</span>
      <span>${spans.length} spans</span><span class="${errors ? 'error' : ''}">${errors} errors</span>
      <span>${esc(services.join(', '))}</span><span>${esc(when(String(t0)))}</span></div>`);
  if (offsets.length) {
    html.push(`<p class="muted">Times corrected for clock skew: ${offsets
      .map(([h, o]) => `${esc(h)} ${o > 0 ? '+' : ''}${esc(ms(o).replace(' ', '\u00a0'))}`)
      .join(', ')} (hover a bar for its raw times).</p>`);
  }
  if (traceFindings.length) {
    html.push(`<ul class="findings-list" aria-label="Findings about the whole trace">${traceFindings
      .map((f) => `<li><span class="badge ${esc(f.kind)}">${esc(badgeText(f))}</span> ${esc(f.summary)}</li>`)
      .join('')}</ul>`);
  }
  // The rows: the first screen's at once, the rest of a large trace once
  // that screen is painted.
  const parts = [];
  for (const l of traceLogs) parts.push(logRow(l, 0));
  for (const [s, depth] of rows) {
    parts.push(spanRow(s, depth, t0, total, children.has(s.spanId), findingsOf.get(s.spanId), critical.has(s.spanId)));
    for (const l of logsOf.get(s.spanId) || []) parts.push(logRow(l, depth + 1, s.spanId));
  }
  html.push(`<div class="waterfall" role="tree" aria-label="Spans" aria-busy="${parts.length > rowChunk}">`,
    parts.slice(0, rowChunk).join(''), '</div>');
  performance.mark('trace-built');
  main().innerHTML = html.join('');
  const tree = document.querySelector('.waterfall');
  bindWaterfall(tree, byId, t.traceId);
  // Marks for whoever measures: the first screen drawn, every row drawn.
  requestAnimationFrame(() => performance.mark('trace-drawn'));
  // After the first screen is painted, the rest in one insertion: chunks
  // each cost a style pass over the rows already there.
  const rest = () => {
    if (tree.isConnected && parts.length > rowChunk) {
      tree.insertAdjacentHTML('beforeend', parts.slice(rowChunk).join(''));
    }
    tree.setAttribute('aria-busy', 'false');
    performance.mark('trace-complete');
  };
  requestAnimationFrame(() => setTimeout(rest));
}

// rowChunk is how many rows the first screen draws.
const rowChunk = 400;

// badgeText names a finding, with the figure that says how bad: a retry
// fan-out's calls at the bottom layer (its amplification), a fan-out's calls.
function badgeText(f) {
  if (f.kind === 'retry_fanout') return `${f.kind} ×${f.value}`;
  if (f.kind === 'fanout') return `${f.kind} ${f.value} calls`;
  return f.kind;
}

// spanRow is one span's row, kept to few elements and style declarations:
// a large trace's rows cost their parsing and styling.
function spanRow(s, depth, t0, total, hasKids, findings, onCriticalPath) {
  const left = (100 * Number(s._start - t0)) / total;
  const width = Math.max((100 * s.durationNano) / total, 0.2);
  const failed = s.status.code === 'ERROR';
  const badges = (findings || [])
    .map((f) => `<span class="badge ${esc(f.kind)}" title="${esc(f.summary)}">${esc(badgeText(f))}</span>`)
    .join('');
  // The duration label sits right of the bar, or left of it near the end.
  const cls = `bar${failed ? ' failed' : ''}${onCriticalPath ? ' critical' : ''}${left + width > 88 ? ' end' : ''}`;
  return `<div class="row" role="treeitem" tabindex="0" aria-level="${depth + 1}"${hasKids ? ' aria-expanded="true"' : ''} data-span="${esc(s.spanId)}" data-depth="${depth}" style="--d:${depth}"><div class="name">${
    hasKids ? '<button class="toggle" aria-label="Collapse" tabindex="-1">▾</button>' : ''
  }<span class="svc">${esc(s.service)}</span> <span class="op">${esc(s.name)}</span>${
    failed ? ' <span class="error" aria-label="error">●</span>' : ''
  }${badges}</div><div class="lane"><div class="${cls}" style="left:${left.toFixed(3)}%;width:${width.toFixed(3)}%" data-took="${esc(ms(s.durationNano))}"></div></div></div>`;
}

function logRow(l, depth, spanId) {
  return `<div class="logrow" data-log-of="${esc(spanId || '')}" data-depth="${depth}">
    <div class="name muted" style="padding-left:${24 + depth * 14}px">${esc(when(l.adjustedTimeUnixNano))}</div>
    <div class="msg"><span class="sev ${esc(l.severityText)}">${esc(l.severityText || 'LOG')}</span>${esc(l.body)}</div></div>`;
}

// spanDetails is a span in full (the API's Span): what the waterfall's row
// does not show.
function spanDetails(s) {
  const dl = (obj) =>
    `<dl>${Object.keys(obj || {}).sort().map((k) => `<dt>${esc(k)}</dt><dd>${esc(obj[k])}</dd>`).join('') || '<dd class="muted">none</dd>'}</dl>`;
  return `<h3>${esc(s.service)}: ${esc(s.name)}</h3>
    <dl><dt>span</dt><dd class="mono">${esc(s.spanId)}</dd><dt>kind</dt><dd>${esc(s.kind)}</dd>
      <dt>status</dt><dd class="${s.status.code === 'ERROR' ? 'error' : ''}">${esc(s.status.code)} ${esc(s.status.message)}</dd>
      <dt>host</dt><dd>${esc(s.host)}</dd><dt>duration</dt><dd>${esc(ms(s.durationNano))}</dd>
      <dt>raw start</dt><dd>${esc(when(s.startTimeUnixNano))}</dd><dt>corrected start</dt><dd>${esc(when(s.adjustedStartTimeUnixNano))}</dd></dl>
    <h3>Attributes</h3>${dl(s.attributes)}<h3>Resource</h3>${dl(s.resource)}
    ${s.events.length ? `<h3>Events</h3>${s.events.map((e) => `<p><b>${esc(e.name)}</b> ${esc(when(e.timeUnixNano))}</p>${dl(e.attributes)}`).join('')}` : ''}`;
}

// The waterfall's keys: ↑/↓ move, ←/→ collapse and expand, Enter shows a
// span's details; a click does what Enter does.
function bindWaterfall(tree, byId, traceId) {
  const visibleRows = () => [...tree.querySelectorAll('.row')].filter((r) => !r.hidden);
  const setCollapsed = (row, collapsed) => {
    if (!row.hasAttribute('aria-expanded')) return;
    row.setAttribute('aria-expanded', String(!collapsed));
    const btn = row.querySelector('button.toggle');
    btn.textContent = collapsed ? '▸' : '▾';
    btn.setAttribute('aria-label', collapsed ? 'Expand' : 'Collapse');
    const depth = Number(row.dataset.depth);
    let hiddenBelow = Infinity; // the depth under which rows stay hidden (a collapsed descendant)
    for (let el = row.nextElementSibling; el && Number(el.dataset.depth) > depth; el = el.nextElementSibling) {
      const d = Number(el.dataset.depth);
      if (d <= hiddenBelow) hiddenBelow = Infinity;
      el.hidden = collapsed || d > hiddenBelow;
      if (!collapsed && el.classList.contains('row') && el.getAttribute('aria-expanded') === 'false' && hiddenBelow === Infinity) {
        hiddenBelow = d;
      }
    }
  };
  const showDetails = (row) => {
    const open = row.nextElementSibling && row.nextElementSibling.classList.contains('details');
    tree.querySelectorAll('.details').forEach((d) => d.remove());
    tree.querySelectorAll('.row.selected').forEach((r) => r.classList.remove('selected'));
    if (open) return;
    row.classList.add('selected');
    const box = document.createElement('div');
    box.className = 'details';
    box.setAttribute('role', 'region');
    box.setAttribute('aria-label', 'Span details');
    box.setAttribute('aria-busy', 'true');
    box.innerHTML = '<p class="muted">Loading the span…</p>';
    row.after(box);
    const sid = row.dataset.span;
    api(`/traces/${encodeURIComponent(traceId)}/spans/${encodeURIComponent(sid)}`)
      .then((s) => {
        box.innerHTML = spanDetails(s);
        box.setAttribute('aria-busy', 'false');
      })
      .catch((err) => {
        box.innerHTML = `<p class="error" role="alert">${esc(err.message)}</p>`;
        box.setAttribute('aria-busy', 'false');
      });
  };
  // Raw times on hover, made when first hovered: formatting them for every
  // span up front would cost more than drawing the rows.
  tree.addEventListener('mouseover', (e) => {
    const bar = e.target.closest('.bar');
    if (!bar || bar.title) return;
    const s = byId.get(bar.closest('.row').dataset.span);
    bar.title = `raw ${when(s.startTimeUnixNano)} → ${when(s.endTimeUnixNano)}` +
      (s.adjustedStartTimeUnixNano !== s.startTimeUnixNano ? ` (corrected ${when(s.adjustedStartTimeUnixNano)})` : '');
  });
  tree.addEventListener('click', (e) => {
    const row = e.target.closest('.row');
    if (!row) return;
    if (e.target.closest('button.toggle')) {
      setCollapsed(row, row.getAttribute('aria-expanded') === 'true');
      return;
    }
    showDetails(row);
  });
  tree.addEventListener('keydown', (e) => {
    const row = e.target.closest('.row');
    if (!row) return;
    const rows = visibleRows();
    const i = rows.indexOf(row);
    if (e.key === 'ArrowDown' && i < rows.length - 1) rows[i + 1].focus();
    else if (e.key === 'ArrowUp' && i > 0) rows[i - 1].focus();
    else if (e.key === 'ArrowLeft') setCollapsed(row, true);
    else if (e.key === 'ArrowRight') setCollapsed(row, false);
    else if (e.key === 'Enter' || e.key === ' ') showDetails(row);
    else return;
    e.preventDefault();
  });
}

// ---- Logs -----------------------------------------------------------------

// Lists (logs, findings) show 200 rows, or as many as the API gives (1000)
// once asked for more: the URL's limit.
const listLimits = [200, 1000];
function listLimit(params) {
  return Number(params.get('limit')) === listLimits[1] ? listLimits[1] : listLimits[0];
}
function moreLink(params, shown, what) {
  if (shown < listLimit(params)) return '';
  if (listLimit(params) === listLimits[1]) {
    return `<p class="more muted">The first ${shown} ${what}: narrow the filters or the time range to see the rest.</p>`;
  }
  const p = new URLSearchParams(params);
  p.set('limit', listLimits[1]);
  return `<p class="more"><a href="${location.pathname}?${p}" data-link>Show up to ${listLimits[1]} ${what}</a></p>`;
}

async function logsPage() {
  const params = new URLSearchParams(location.search);
  const services = (await api('/services').catch(() => ({ services: [] }))).services;
  main().innerHTML =
    `<h1 class="sr-only">Search logs</h1>` +
    filtersForm(
      [
        ['q', 'Words', 'text', 'payment declined'],
        ['service', 'Service', 'select', [['', 'any'], ...services.map((s) => [s, s])]],
        ['severity', 'Severity', 'select', ['', 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'].map((s) => [s, s || 'any'])],
        ['traceId', 'Trace ID', 'text', 'any'],
        ['range', 'Time', 'select', rangeOptions],
      ],
      params
    ) +
    `<div id="results" aria-live="polite"><p class="muted">Searching…</p></div>`;
  bindFilters('/logs');
  const results = document.getElementById('results');
  let logs;
  try {
    logs = (await api('/logs', { q: params.get('q') ?? '', service: params.get('service') ?? '', severity: params.get('severity') ?? '',
      traceId: params.get('traceId') ?? '', limit: listLimit(params), ...windowParams(params.get('range')) })).logs;
  } catch (err) {
    results.innerHTML = `<p class="error" role="alert">${esc(err.message)}</p>`;
    return;
  }
  results.innerHTML = logs.length
    ? `<table class="logs"><caption class="sr-only">Log lines, newest first</caption><thead><tr><th>Time</th><th>Service</th><th>Severity</th><th>Line</th><th>Trace</th></tr></thead><tbody>${logs
        .map(
          (l) => `<tr><td>${esc(when(l.timeUnixNano))}</td><td>${esc(l.service)}</td>
            <td class="${l.severityText === 'ERROR' || l.severityText === 'FATAL' ? 'error' : ''}">${esc(l.severityText)}</td>
            <td>${esc(l.body)}</td><td>${
              l.traceId
                ? l.kept
                  ? `<a class="mono" href="/trace/${esc(l.traceId)}" data-link>${esc(l.traceId.slice(0, 12))}…</a>`
                  : `<span class="mono muted" title="not kept by the sampler">${esc(l.traceId.slice(0, 12))}…</span>`
                : ''
            }</td></tr>`
        )
        .join('')}</tbody></table>${moreLink(params, logs.length, 'lines')}`
    : '<p class="muted">No log line matches in this window.</p>';
}

// ---- Findings -------------------------------------------------------------

async function findingsPage() {
  const params = new URLSearchParams(location.search);
  const kinds = ['', 'slowest_hop', 'critical_path', 'retry_fanout', 'timeout', 'error_origin', 'broken_propagation', 'clock_skew',
    'throttled', 'fast_fail', 'fallback', 'pool_exhausted', 'retry_budget', 'instance_outlier'];
  main().innerHTML =
    `<h1 class="sr-only">Findings across traces</h1>` +
    filtersForm(
      [
        ['kind', 'Kind', 'select', kinds.map((k) => [k, k || 'any'])],
        ['service', 'Service', 'text', 'any'],
        ['range', 'Time', 'select', rangeOptions],
      ],
      params
    ) +
    `<div id="results" aria-live="polite"><p class="muted">Loading…</p></div>`;
  bindFilters('/findings');
  const results = document.getElementById('results');
  let findings;
  try {
    findings = (await api('/findings', { kind: params.get('kind') ?? '', service: params.get('service') ?? '', limit: listLimit(params),
      ...windowParams(params.get('range')) })).findings;
  } catch (err) {
    results.innerHTML = `<p class="error" role="alert">${esc(err.message)}</p>`;
    return;
  }
  results.innerHTML = findings.length
    ? `<table class="findings"><caption class="sr-only">Findings by kind, service and subject</caption><thead><tr><th>Kind</th><th>Service</th><th>Subject</th><th class="num">Count</th><th class="num">Traces</th><th class="num">p50</th><th class="num">Max</th><th>Examples</th></tr></thead><tbody>${findings
        .map(
          (f) => `<tr><td><span class="badge ${esc(f.kind)}">${esc(f.kind)}</span></td><td>${esc(f.service)}</td><td>${esc(f.subject)}</td>
            <td class="num">${f.count}</td><td class="num">${f.traces}</td><td class="num">${esc(+f.p50Value.toFixed(2))}</td>
            <td class="num">${esc(+f.maxValue.toFixed(2))}</td>
            <td>${f.exampleTraceIds.map((id) => `<a class="mono" href="/trace/${esc(id)}" data-link>${esc(id.slice(0, 8))}</a>`).join(' ')}</td></tr>`
        )
        .join('')}</tbody></table>${moreLink(params, findings.length, 'findings')}`
    : '<p class="muted">Nothing found in this window.</p>';
}

// ---- Services -------------------------------------------------------------

const pct = (x) => (100 * x).toFixed(x > 0 && x < 0.01 ? 2 : 1) + ' %';

// A share as a bar and its figure.
function shareBar(x, failed) {
  return `<div class="dur"><div class="track"><div class="fill${failed ? ' bad' : ''}" style="width:${(100 * Math.min(x, 1)).toFixed(1)}%"></div></div>${esc(pct(x))}</div>`;
}

// redTable renders RED groups: rate, error rate and latency percentiles, the
// p99 as a bar against the slowest group; marks say which rows stand out.
function redTable(groups, label, seconds, marks) {
  if (!groups.length) return '<p class="muted">No requests in this window.</p>';
  const slowest = Math.max(...groups.map((g) => g.p99Ms), 0.001);
  return `<table class="red"><caption class="sr-only">${esc(label)}: requests, errors and latency on all traffic</caption>
    <thead><tr><th>${esc(label)}</th><th class="num">Requests</th><th class="num">Per second</th><th>Errors</th><th class="num">p50</th><th>p99</th><th class="num">p99.9</th></tr></thead><tbody>${groups
      .map((g) => {
        const mark = marks && marks.get(g.value);
        return `<tr data-group="${esc(g.value)}"${mark ? ' class="outlier"' : ''}><td>${esc(g.value || '(none)')}${
          mark ? ` <span class="badge instance_outlier" title="${esc(mark)}">outlier</span>` : ''
        }</td><td class="num">${g.requests}</td><td class="num">${(g.requests / seconds).toFixed(2)}</td>
        <td>${shareBar(g.errorRate, true)}</td><td class="num">${esc(ms(g.p50Ms * 1e6))}</td>
        <td><div class="dur"><div class="track"><div class="fill" style="width:${((100 * g.p99Ms) / slowest).toFixed(1)}%"></div></div>${esc(ms(g.p99Ms * 1e6))}</div></td>
        <td class="num">${esc(ms(g.p999Ms * 1e6))}</td></tr>`;
      })
      .join('')}</tbody></table>`;
}

async function servicesPage() {
  const params = new URLSearchParams(location.search);
  const services = (await api('/services')).services;
  const service = params.get('service') || services[0] || '';
  if (!params.get('service') && service) params.set('service', service);
  main().innerHTML =
    `<h1 class="sr-only">Services</h1>` +
    filtersForm(
      [
        ['service', 'Service', 'select', services.map((s) => [s, s])],
        ['range', 'Time', 'select', rangeOptions],
      ],
      params
    ) +
    `<div id="results" aria-live="polite">${service ? '<p class="muted">Loading…</p>' : '<p class="muted">No service has sent traces yet.</p>'}</div>`;
  bindFilters('/services');
  document.querySelector('#filters select[name=service]').addEventListener('change', (e) => e.target.form.requestSubmit());
  if (!service) return;
  const win = windowParams(params.get('range'));
  const seconds = Number(BigInt(win.end) - BigInt(win.start)) / 1e9;
  const [ops, instances, outliers, compare] = await Promise.all([
    api('/red', { service, groupBy: 'operation', ...win }),
    api('/red', { service, groupBy: 'instance', ...win }),
    api('/findings', { kind: 'instance_outlier', service, limit: 200, ...win }),
    api('/compare', { service, limit: 15, ...win }),
  ]);
  // An outlier finding's subject is "<service> <operation> on <instance>".
  const marks = new Map();
  for (const f of outliers.findings) {
    const at = f.subject.lastIndexOf(' on ');
    if (at > 0) marks.set(f.subject.slice(at + 4), `${f.subject}: ${f.count} times, up to ${+f.maxValue.toFixed(1)}× its peers`);
  }
  const dims = compare.dimensions.filter((d) => d.failingCount > 0);
  document.getElementById('results').innerHTML = `
    <h2>Operations of ${esc(service)}</h2>${redTable(ops.groups, 'Operation', seconds)}
    <h2>Instances: one of them, or all?</h2>${redTable(instances.groups, 'Instance', seconds, marks)}
    <h2>Failing vs healthy requests</h2>
    <p class="muted">${compare.failing} failing (errors, timeouts, slower than ${esc(compare.slow)}) and ${compare.healthy} healthy requests; a value far more common among the failing tops the list.</p>
    ${
      dims.length
        ? `<table class="compare"><caption class="sr-only">Dimension values by how much more often they occur among failing requests</caption>
      <thead><tr><th>Dimension</th><th>Value</th><th>Of the failing</th><th>Of the healthy</th><th class="num">Lift</th></tr></thead><tbody>${dims
        .map((d) => `<tr><td>${esc(d.key)}</td><td>${esc(d.value)}</td><td>${shareBar(d.failing, true)}</td><td>${shareBar(d.healthy)}</td>
          <td class="num">${esc(d.lift.toFixed(1))}×</td></tr>`)
        .join('')}</tbody></table>`
        : '<p class="muted">No failing request in this window.</p>'
    }`;
}

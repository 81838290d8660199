// Query: Druid SQL (`POST /druid/v2/sql`) or a native query's JSON (`POST /druid/v2`), its
// rows as a table with the time it took, EXPLAIN PLAN FOR a statement, and a line chart when
// the first column is time. The editor's text and the runs of this visit are kept across
// views.

import { get, post, sql, timed } from './api.js';
import { isTimeSeries, timeChart } from './chart.js';
import { el, count, message, numeric, section, table, text } from './dom.js';
import { rowsOf } from './native.js';

export const view = { id: 'query', title: 'Query', render };

/** Most rows shown of one answer. */
const MAX_SHOWN = 1000;
/** Most runs listed. */
const MAX_HISTORY = 20;

const state = { mode: 'sql', text: { sql: undefined, native: undefined }, history: [], last: undefined };

/** The editor's first text: a time series of the first datasource, or the segments table. */
async function defaults() {
  let first;
  try {
    first = (await get('druid/v2/datasources'))[0];
  } catch {
    first = undefined;
  }
  const quoted = first === undefined ? undefined : `"${first.replaceAll('"', '""')}"`;
  state.text.sql ??= quoted
    ? `SELECT TIME_FLOOR(__time, 'PT1H') AS "time", COUNT(*) AS "rows"\nFROM ${quoted}\nGROUP BY 1\nORDER BY 1`
    : 'SELECT * FROM sys.segments';
  state.text.native ??= JSON.stringify(first === undefined ? { queryType: 'timeBoundary', dataSource: 'wikipedia' } : { queryType: 'timeBoundary', dataSource: first }, null, 2);
}

async function render(root) {
  if (state.text.sql === undefined) await defaults();
  const editor = el('textarea', { id: 'query-text', spellcheck: 'false', 'aria-label': 'Query' });
  editor.value = state.text[state.mode];
  const mode = el('select', { id: 'query-mode', 'aria-label': 'Language' },
    el('option', { value: 'sql' }, 'Druid SQL'), el('option', { value: 'native' }, 'Native JSON'));
  mode.value = state.mode;
  const results = el('div', { 'data-results': '' });
  const history = el('div');
  const explain = el('button', { type: 'button', 'data-explain': '', hidden: state.mode !== 'sql' }, 'Explain');
  const runButton = el('button', { type: 'button', class: 'primary', 'data-run': '' }, 'Run');
  const go = (explaining) => run(editor.value, explaining, results, history);
  editor.addEventListener('input', () => { state.text[state.mode] = editor.value; });
  editor.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      go(false);
    }
  });
  mode.addEventListener('change', () => {
    state.mode = mode.value;
    editor.value = state.text[state.mode];
    explain.hidden = state.mode !== 'sql';
  });
  runButton.addEventListener('click', () => go(false));
  explain.addEventListener('click', () => go(true));
  root.append(section('Query', el('div', { class: 'toolbar' }, mode, runButton, explain, el('span', { class: 'msg' }, 'Ctrl+Enter runs')), editor));
  root.append(section('Results', results));
  root.append(section('Runs', history));
  if (state.last) show(results, state.last);
  showHistory(history);
}

/** Runs the editor's text and shows its answer. */
async function run(textValue, explaining, results, history) {
  results.dataset.queryState = 'running';
  results.replaceChildren(message('Running…'));
  const kind = state.mode === 'sql' ? (explaining ? 'EXPLAIN' : 'SQL') : 'native';
  let outcome;
  try {
    const { value, ms } = await timed(() => answer(textValue, kind));
    outcome = { kind, ...value, ms };
  } catch (e) {
    outcome = { kind, error: e.message };
  }
  state.last = outcome;
  state.history.unshift({ at: new Date().toISOString(), kind, text: textValue, rows: outcome.rows?.length, ms: outcome.ms, error: outcome.error });
  state.history.length = Math.min(state.history.length, MAX_HISTORY);
  show(results, outcome);
  showHistory(history);
}

async function answer(textValue, kind) {
  if (kind === 'native') {
    let query;
    try {
      query = JSON.parse(textValue);
    } catch (e) {
      throw new Error(`the query is not JSON: ${e.message}`);
    }
    return rowsOf(await post('druid/v2', query));
  }
  const statement = kind === 'EXPLAIN' ? `EXPLAIN PLAN FOR ${textValue}` : textValue;
  return sql(statement);
}

function show(results, outcome) {
  results.dataset.queryState = outcome.error === undefined ? 'done' : 'error';
  if (outcome.error !== undefined) {
    results.replaceChildren(message(`${outcome.kind} query failed: ${outcome.error}`, 'error'));
    return;
  }
  const { columns, rows, ms } = outcome;
  const shown = rows.slice(0, MAX_SHOWN);
  const summary = `${count(rows.length)} ${rows.length === 1 ? 'row' : 'rows'} in ${count(ms)} ms${rows.length > shown.length ? ` (the first ${count(MAX_SHOWN)} shown)` : ''}`;
  const parts = [el('p', { class: 'msg done', 'data-field': 'elapsed', 'data-ms': ms, 'data-rows': rows.length }, summary)];
  if (outcome.kind === 'EXPLAIN') parts.push(plan(columns, rows));
  if (isTimeSeries(columns, rows)) parts.push(timeChart(columns, rows));
  const cells = shown.map((r) => r.map((v) => (typeof v === 'number' ? numeric(String(v)) : text(v))));
  parts.push(table('results', columns.map(text), cells, { empty: 'No rows.' }));
  results.replaceChildren(...parts);
}

/** EXPLAIN's plan, pretty-printed. */
function plan(columns, rows) {
  const at = columns.indexOf('PLAN');
  if (at < 0 || rows.length === 0) return el('span');
  let body = text(rows[0][at]);
  try {
    body = JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    // Shown as sent.
  }
  return el('pre', { 'data-plan': '' }, body);
}

function showHistory(history) {
  const rows = state.history.map((h) => [h.at, h.kind, h.text.length > 120 ? `${h.text.slice(0, 120)}…` : h.text,
    h.error === undefined ? numeric(count(h.rows)) : 'failed', numeric(h.ms === undefined ? '' : `${count(h.ms)} ms`)]);
  history.replaceChildren(table('history', ['At', 'Kind', 'Query', 'Rows', 'Elapsed'], rows, { empty: 'No query run yet.' }));
}

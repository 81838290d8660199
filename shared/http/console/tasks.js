// Tasks: those running or waiting, and the recent ones (`GET /druid/indexer/v1/tasks`), and
// the report of the one selected (`#tasks/<id>`): its row stats and unparseable events from
// `ingestionStatsAndErrors`.

import { at, get } from './api.js';
import { el, count, duration, facts, message, numeric, section, stateBadge, table, text } from './dom.js';

export const view = { id: 'tasks', title: 'Tasks', render };

const COLUMNS = ['Task', 'Datasource', 'Type', 'Status', 'Runner', 'Created', 'Duration', 'Attempts', 'Error'];

async function render(root, ctx) {
  const list = await get('druid/indexer/v1/tasks');
  const active = list.filter((t) => t.statusCode === 'RUNNING');
  const done = list.filter((t) => t.statusCode !== 'RUNNING');
  const link = (t) => el('a', { href: `#tasks/${encodeURIComponent(t.id)}` }, t.id);
  const rows = (tasks) => tasks.map((t) => [
    link(t), t.dataSource, t.type, stateBadge(t.statusCode), t.runnerStatusCode, t.createdTime,
    numeric(duration(t.duration)), numeric(count(t.sluice?.attempts)), text(t.errorMsg),
  ]);
  const options = (tasks, empty) => ({ key: (i) => tasks[i].id, selected: ctx.arg, empty });
  if (ctx.arg !== undefined) root.append(await report(ctx.arg));
  root.append(section('Running and waiting', table('tasks-active', COLUMNS, rows(active), options(active, 'No task is running or waiting.'))));
  root.append(section('Recent', table('tasks-complete', COLUMNS, rows(done), options(done, 'No finished task is kept.'))));
}

const METERS = [['processed', 'Processed'], ['processedBytes', 'Processed bytes'], ['processedWithError', 'With errors'], ['unparseable', 'Unparseable'], ['thrownAway', 'Thrown away']];

/** A task's `ingestionStatsAndErrors` report. */
async function report(id) {
  const out = section(`Report of ${id}`);
  out.dataset.report = id;
  let answer;
  try {
    answer = await get(`druid/indexer/v1/task/${at(id)}/reports`);
  } catch (e) {
    out.append(message(`No report: ${e.message}`, 'error'));
    return out;
  }
  const p = answer?.ingestionStatsAndErrors?.payload ?? {};
  out.append(facts([
    ['Ingestion state', el('span', { 'data-field': 'ingestionState' }, text(p.ingestionState))],
    ['Segments available', text(p.segmentAvailabilityConfirmed)],
    ['Error', p.errorMsg ? text(p.errorMsg) : undefined],
  ]));
  const phases = Object.entries(p.rowStats ?? {});
  const statRows = phases.map(([phase, s]) => [phase, ...METERS.map(([name]) => numeric(count(s?.[name])))]);
  out.append(el('h3', {}, 'Row stats'), table('row-stats', ['Phase', ...METERS.map(([, label]) => label)], statRows));
  const events = Object.entries(p.unparseableEvents ?? {}).flatMap(([phase, list]) => (list ?? []).map((e) => [
    phase, text(e.errorType), (e.details ?? []).map(text).join('; '), numeric(text(e.partition)), numeric(count(e.offset)),
  ]));
  out.append(el('h3', {}, 'Unparseable events'),
    table('unparseable', ['Phase', 'Type', 'Details', 'Partition', 'Offset'], events, { empty: 'No unparseable events.' }));
  return out;
}

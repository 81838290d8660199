// Supervisors: each one's state, and for the one selected (`#supervisors/<id>`, else the
// first) its partitions' offsets and lag, its autoscaler's decisions, its tasks, row counters
// and recent errors, from
// Druid's report (`/status`, Sluice's own status under `payload.sluice`) and `/stats`; the
// operations, each after a confirmation, where the server serves writes.

import { at, get, post } from './api.js';
import { el, count, facts, message, numeric, offsets, section, stateBadge, table, text } from './dom.js';

const SUPERVISOR = 'druid/indexer/v1/supervisor';

/** The operations, what each asks before it runs, and which supervisors it applies to. */
const OPERATIONS = [
  { action: 'suspend', label: 'Suspend', when: (s) => !s.suspended,
    ask: (id) => `Suspend supervisor "${id}"? It plans no new tasks until it is resumed.` },
  { action: 'resume', label: 'Resume', when: (s) => s.suspended && s.detailedState !== 'TERMINATED',
    ask: (id) => `Resume supervisor "${id}"? It plans tasks from its committed offsets again.` },
  { action: 'reset', label: 'Reset offsets', danger: true, when: () => true,
    ask: (id) => `Reset supervisor "${id}"? Its committed offsets are cleared and each partition starts where useEarliestOffset says: records in between are skipped (data loss) or ingested again (duplicates); unpublished tasks are abandoned.` },
  { action: 'terminate', label: 'Terminate', danger: true, when: (s) => s.detailedState !== 'TERMINATED',
    ask: (id) => `Terminate supervisor "${id}"? It stops planning tasks until its spec is submitted again; its segments stay queryable.` },
];

export const view = { id: 'supervisors', title: 'Supervisors', render };

async function render(root, ctx) {
  const list = await get(`${SUPERVISOR}?full`);
  if (list.length === 0) {
    root.append(section('Supervisors', message('No supervisors: submit a spec with `sluice supervisor submit`.')));
    return;
  }
  const selected = list.find((s) => s.id === ctx.arg) ?? list[0];
  const link = (s) => el('a', { href: `#supervisors/${encodeURIComponent(s.id)}` }, s.id);
  const rows = list.map((s) => [link(s), s.dataSource, stateBadge(s.state, s.healthy), s.detailedState, text(s.healthy), text(s.suspended)]);
  root.append(section('Supervisors',
    table('supervisors', ['Supervisor', 'Datasource', 'State', 'Detailed state', 'Healthy', 'Suspended'], rows,
      { key: (i) => list[i].id, selected: selected.id })));
  root.append(await details(selected, ctx));
}

/** The selected supervisor's report, stats and operations. */
async function details(item, ctx) {
  const id = item.id;
  const [report, stats] = await Promise.all([get(`${SUPERVISOR}/${at(id)}/status`), get(`${SUPERVISOR}/${at(id)}/stats`)]);
  const p = report.payload ?? {};
  const own = p.sluice ?? {};
  const out = section(`Supervisor ${id}`);
  out.dataset.supervisor = id;
  out.append(facts([
    ['State', el('span', { 'data-field': 'state' }, stateBadge(p.state, p.healthy))],
    ['Detailed state', el('span', { 'data-field': 'detailedState' }, text(p.detailedState))],
    ['Healthy', el('span', { 'data-field': 'healthy' }, text(p.healthy))],
    ['Stream', text(p.stream)],
    ['Partitions', count(p.partitions)],
    ['Aggregate lag', el('span', { 'data-field': 'aggregateLag' }, count(p.aggregateLag))],
    ['Aggregate time lag (ms)', el('span', { 'data-field': 'aggregateLagMillis' }, count(p.aggregateLagMillis))],
    ['Offsets last updated', text(p.offsetsLastUpdated)],
  ]));
  if (ctx.operations) out.append(operations(id, item, ctx));
  out.append(el('h3', {}, 'Partitions'), partitions(p, own));
  if (own.autoscaler) out.append(el('h3', {}, 'Autoscaler'), autoscaler(own.autoscaler));
  out.append(el('h3', {}, 'Rows (all tasks)'), totals(own.totals));
  out.append(el('h3', {}, 'Tasks'), tasks(p));
  out.append(el('h3', {}, 'Task meters'), meters(stats));
  out.append(el('h3', {}, 'Recent errors'), errors(p.recentErrors ?? []));
  if (item.spec) out.append(el('details', {}, el('summary', {}, 'Spec (secrets redacted)'), el('pre', {}, JSON.stringify(item.spec, null, 2))));
  return out;
}

function operations(id, state, ctx) {
  const status = el('span', { class: 'msg', 'data-operation-status': '' });
  const buttons = OPERATIONS.filter((o) => o.when(state)).map((o) => el('button', {
    type: 'button',
    class: o.danger ? 'danger' : undefined,
    'data-action': o.action,
    onclick: async (event) => {
      if (!window.confirm(o.ask(id))) return;
      event.target.disabled = true;
      try {
        await post(`${SUPERVISOR}/${at(id)}/${o.action}`, {});
        ctx.refresh();
      } catch (e) {
        status.replaceChildren(`${o.label} failed: ${e.message}`);
        status.className = 'msg error';
        event.target.disabled = false;
      }
    },
  }, o.label));
  return el('div', { class: 'actions' }, buttons, status);
}

/** One row a partition: its committed offset (Sluice's), latest offset, lag in records and in
 * milliseconds (Druid's: how long ago the oldest record not yet published was written). */
function partitions(p, own) {
  const latest = p.latestOffsets ?? {};
  const lag = p.minimumLag ?? {};
  const lagMillis = p.minimumLagMillis ?? {};
  const keys = [...new Set([...Object.keys(latest), ...Object.keys(lag)])];
  const committed = (key) => (own.partitions ?? []).find((x) => String(x.partition) === key || `${x.topic}:${x.partition}` === key)?.committed;
  const rows = keys.map((k) => [k, numeric(count(committed(k))), numeric(count(latest[k])), numeric(count(lag[k])), numeric(count(lagMillis[k]))]);
  return table('partitions', ['Partition', 'Committed offset', 'Latest offset', 'Lag', 'Time lag (ms)'], rows,
    { key: (i) => keys[i], empty: 'No partition offsets yet: the supervisor has not run a pass.' });
}

const METERS = [['processed', 'Processed'], ['processedBytes', 'Processed bytes'], ['processedWithError', 'With errors'], ['unparseable', 'Unparseable'], ['thrownAway', 'Thrown away']];

function totals(t) {
  if (!t) return message('No row counters yet.');
  return table('totals', METERS.map(([, label]) => label), [METERS.map(([name]) => numeric(count(t[name])))]);
}

function tasks(p) {
  const all = [...(p.activeTasks ?? []), ...(p.publishingTasks ?? [])];
  const link = (t) => el('a', { href: `#tasks/${encodeURIComponent(t.id)}` }, t.id);
  const rows = all.map((t) => [link(t), t.type, text(t.startTime), offsets(t.startingOffsets), offsets(t.currentOffsets), offsets(t.lag)]);
  return table('supervisor-tasks', ['Task', 'Type', 'Started', 'Starting offsets', 'Current offsets', 'Lag'], rows,
    { key: (i) => all[i].id, empty: 'No task is reading or publishing.' });
}

/** `/stats`: per group, per task, its totals and rate. */
function meters(stats) {
  const rows = [];
  for (const [group, byTask] of Object.entries(stats ?? {})) {
    for (const [task, s] of Object.entries(byTask ?? {})) {
      const t = s?.totals?.buildSegments ?? {};
      const rate = s?.movingAverages?.buildSegments?.['1m']?.processed;
      rows.push([group, task, ...METERS.map(([name]) => numeric(count(t[name]))), numeric(typeof rate === 'number' ? rate.toFixed(1) : '')]);
    }
  }
  return table('stats', ['Group', 'Task', ...METERS.map(([, label]) => label), 'Rows/s'], rows,
    { empty: 'No task is reading or publishing.' });
}

/** The lag-based autoscaler as of the last pass: its window, what it would decide, its changes. */
function autoscaler(a) {
  const decision = a.desired == null ? `keep ${a.taskCount}` : `${a.taskCount} -> ${a.desired}`;
  const percent = (f) => `${Math.round(f * 100)}%`;
  const out = el('div', {}, facts([
    ['Task groups', el('span', { 'data-field': 'autoscalerTaskCount' }, `${a.taskCount} (from ${a.taskCountMin} to ${a.taskCountMax})`)],
    ['Lag samples in the window', count(a.samples)],
    ['Largest lag', count(a.maxLag)],
    ['At or above scaleOutThreshold', percent(a.fractionOut)],
    ['At or below scaleInThreshold', percent(a.fractionIn)],
    ['Decision', el('span', { 'data-field': 'autoscalerDecision' }, decision)],
    ['Next decision', instant(a.nextDecisionMs)],
  ]));
  const rows = (a.changes ?? []).map((c) => [instant(c.at), count(c.from), count(c.to), numeric(count(c.maxLag)), count(c.samples)]);
  out.append(table('autoscaler-changes', ['At', 'From', 'To', 'Largest lag', 'Samples'], rows, { empty: 'No task count change yet.' }));
  return out;
}

/** Milliseconds since the epoch as an ISO instant ('' when out of a date's range). */
function instant(ms) {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

function errors(list) {
  const rows = list.map((e) => [text(e.timestamp), text(e.exceptionClass), text(e.message)]);
  return table('errors', ['Time', 'Class', 'Message'], rows, { empty: 'No recent errors.' });
}

// The console's frame: the views by their hash (`#supervisors`, `#tasks/<task id>`, ...),
// the Refresh button, and whether this server serves writes (the supervisor operations are
// shown only then).

import { operationsServed } from './api.js';
import { el, message } from './dom.js';
import { view as supervisors } from './supervisors.js';
import { view as tasks } from './tasks.js';
import { view as segments } from './segments.js';
import { view as query } from './query.js';
import { view as compaction } from './compaction.js';

const VIEWS = [supervisors, tasks, segments, query, compaction];
const root = document.getElementById('view');
const context = { operations: false, arg: undefined, refresh: () => show() };
let rendering = 0;

/** The view and its argument the hash names (`#tasks/abc` → tasks, `abc`). */
function route() {
  const hash = location.hash.replace(/^#/, '');
  const slash = hash.indexOf('/');
  const id = slash < 0 ? hash : hash.slice(0, slash);
  const arg = slash < 0 ? undefined : decodeURIComponent(hash.slice(slash + 1));
  return { view: VIEWS.find((v) => v.id === id) ?? VIEWS[0], arg };
}

/** Renders the current view into a new container and swaps it in when done (a later render wins). */
async function show() {
  const { view, arg } = route();
  const token = ++rendering;
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.dataset.view === view.id) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.title = `${view.title} · Sluice console`;
  root.dataset.view = view.id;
  root.dataset.state = 'loading';
  const body = el('div');
  let state = 'ready';
  try {
    await view.render(body, { ...context, arg });
  } catch (e) {
    body.replaceChildren(message(`Could not load ${view.title.toLowerCase()}: ${e.message}`, 'error'));
    state = 'error';
  }
  if (token !== rendering) return;
  root.replaceChildren(body);
  root.dataset.state = state;
  // Which render this is: a test waits for a later one after an action.
  root.dataset.rendered = String(token);
}

async function start() {
  const nav = document.getElementById('nav');
  nav.replaceChildren(...VIEWS.map((v) => el('a', { href: `#${v.id}`, 'data-view': v.id }, v.title)));
  document.getElementById('refresh').addEventListener('click', () => show());
  context.operations = await operationsServed();
  const badge = document.getElementById('server');
  badge.textContent = context.operations ? 'operations on' : 'read-only';
  badge.dataset.operations = String(context.operations);
  window.addEventListener('hashchange', () => show());
  await show();
}

start();

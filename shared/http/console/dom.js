// Building the page from the API's answers without ever parsing them as markup: every value
// becomes a text node, or an attribute value set by name, so a hostile name, message or
// query result shows as the text it is.

/** An element: `attrs` sets `class`, `on<event>` listeners, boolean properties and
 *  attributes by name; each child is a node, or a value shown as text (null: nothing). */
export function el(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

const SVG = 'http://www.w3.org/2000/svg';

/** An SVG element, as `el` builds HTML ones. */
export function svg(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      node.addEventListener(name.slice(2), value);
    } else if (value === true) {
      node.setAttribute(name, '');
    } else {
      node.setAttribute(name, String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** The text a value shows as: nothing for null, JSON for objects and lists. */
export function text(value) {
  if (value === undefined || value === null) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A count with its thousands grouped (`39,244`). */
export function count(value) {
  return typeof value === 'number' && Number.isFinite(value) ? value.toLocaleString('en-US') : text(value);
}

/** Bytes in the largest binary unit that keeps a number of at least 1 (`2.6 MiB`). */
export function bytes(value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return text(value);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let n = value;
  let unit = 0;
  while (Math.abs(n) >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${n} B` : `${n.toFixed(1)} ${units[unit]}`;
}

/** A duration in milliseconds as seconds or milliseconds (nothing when unknown, -1). */
export function duration(ms) {
  if (typeof ms !== 'number' || ms < 0) return '';
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}

/** Offsets by partition (`{"0": 10, "1": 12}`) as `0: 10, 1: 12`. */
export function offsets(map) {
  if (!map || typeof map !== 'object') return text(map);
  return Object.entries(map).map(([p, o]) => `${p}: ${count(o)}`).join(', ');
}

/** A cell whose content is aligned as a number. */
export function numeric(content) {
  return { numeric: true, content };
}

/**
 * A table named `name` (its `data-table`, which the views' tests read): `columns` are labels,
 * each row a list of cells (a value, a node, or `numeric(...)`); `key(row, i)` gives a row's
 * `data-key`; `empty` is shown when there are no rows.
 */
export function table(name, columns, rows, { key, empty = 'Nothing to show.', selected } = {}) {
  if (rows.length === 0) return el('p', { class: 'msg', 'data-empty': name }, empty);
  const isNumeric = (c) => Boolean(c && typeof c === 'object' && c.numeric);
  const head = el('tr', {}, columns.map((c, i) => el('th', { class: rows.every((r) => isNumeric(r[i])) ? 'number' : undefined }, c)));
  const body = rows.map((cells, i) => {
    const rowKey = key ? key(i) : undefined;
    const attrs = { 'data-key': rowKey, class: rowKey !== undefined && rowKey === selected ? 'selected' : undefined };
    return el('tr', attrs, cells.map(cell));
  });
  return el('div', { class: 'scroll' }, el('table', { 'data-table': name }, el('thead', {}, head), el('tbody', {}, body)));
}

function cell(value) {
  if (value && typeof value === 'object' && value.numeric) return el('td', { class: 'number' }, value.content);
  if (value instanceof Node) return el('td', {}, value);
  return el('td', {}, text(value));
}

/** A section with a heading. */
export function section(title, ...children) {
  return el('section', {}, el('h2', {}, title), ...children);
}

/** A line of explanation (`kind`: `error`, `done` or none). */
export function message(textValue, kind) {
  return el('p', { class: kind ? `msg ${kind}` : 'msg' }, textValue);
}

/** Terms and their values, as a definition list. */
export function facts(pairs) {
  return el('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined).flatMap(([t, v]) => [el('dt', {}, t), el('dd', {}, v)]));
}

/** A badge for a Druid state: green when healthy and running, amber when waiting, red when not healthy. */
export function stateBadge(state, healthy) {
  const tone = healthy === false ? 'bad' : state === 'RUNNING' || state === 'SUCCESS' ? 'good' : state === 'FAILED' ? 'bad' : 'warn';
  return el('span', { class: `badge ${tone}` }, text(state));
}

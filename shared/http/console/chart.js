// A time series as an inline SVG line chart: one line for each numeric column (six at most)
// over the first column's timestamps. Every label is a text node.

import { svg } from './dom.js';

const WIDTH = 900;
const HEIGHT = 260;
const MARGIN = { left: 70, right: 20, top: 16, bottom: 40 };
const MAX_SERIES = 6;
const MAX_MARKERS = 200;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** Whether a result is a time series: its first column holds ISO timestamps (two rows at least) and another holds numbers. */
export function isTimeSeries(columns, rows) {
  return rows.length >= 2
    && rows.every((r) => typeof r[0] === 'string' && ISO_TIME.test(r[0]))
    && numericColumns(columns, rows).length > 0;
}

function numericColumns(columns, rows) {
  return columns.map((_, i) => i).filter((i) => i > 0
    && rows.some((r) => typeof r[i] === 'number') && rows.every((r) => r[i] === null || typeof r[i] === 'number'));
}

/** The chart of `rows` (first column: time). */
export function timeChart(columns, rows) {
  const series = numericColumns(columns, rows).slice(0, MAX_SERIES);
  const times = rows.map((r) => Date.parse(r[0]));
  const [t0, t1] = [Math.min(...times), Math.max(...times)];
  const values = series.flatMap((i) => rows.map((r) => r[i]).filter((v) => v !== null));
  const lo = Math.min(0, ...values);
  const hi = Math.max(...values, lo + 1);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const x = (t) => MARGIN.left + (t1 === t0 ? plotW / 2 : ((t - t0) / (t1 - t0)) * plotW);
  const y = (v) => MARGIN.top + plotH - ((v - lo) / (hi - lo)) * plotH;
  const chart = svg('svg', { class: 'chart', viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'data-chart': 'time', 'data-points': rows.length });
  chart.append(svg('title', {}, `${series.map((i) => columns[i]).join(', ')} over ${columns[0]}`));
  for (const v of [lo, (lo + hi) / 2, hi]) {
    chart.append(svg('line', { class: 'grid', x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(v), y2: y(v) }));
    chart.append(svg('text', { x: MARGIN.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, label(v)));
  }
  chart.append(svg('line', { class: 'axis', x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(lo), y2: y(lo) }));
  chart.append(svg('text', { x: MARGIN.left, y: HEIGHT - 20, 'text-anchor': 'start' }, rows[0][0]));
  chart.append(svg('text', { x: WIDTH - MARGIN.right, y: HEIGHT - 20, 'text-anchor': 'end' }, rows[rows.length - 1][0]));
  series.forEach((col, s) => {
    const points = rows.map((r, i) => [times[i], r[col]]).filter(([, v]) => v !== null).sort((a, b) => a[0] - b[0]);
    chart.append(svg('polyline', { class: `s${s}`, 'data-series': columns[col], points: points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ') }));
    if (points.length <= MAX_MARKERS) {
      for (const [t, v] of points) {
        chart.append(svg('circle', { class: `s${s}`, cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 2.5 },
          svg('title', {}, `${new Date(t).toISOString()}  ${columns[col]}: ${v}`)));
      }
    }
    chart.append(svg('text', { class: `legend s${s}`, x: MARGIN.left + 10 + s * 140, y: HEIGHT - 4 }, `— ${columns[col]}`));
  });
  return chart;
}

function label(v) {
  return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString('en-US') : String(Math.round(v * 100) / 100);
}

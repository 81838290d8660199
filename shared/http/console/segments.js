// Segments: per datasource and time chunk, the visible segments, their bytes and rows, from
// `sys.segments` through Druid SQL.

import { sql } from './api.js';
import { bytes, count, numeric, section, table } from './dom.js';

export const view = { id: 'segments', title: 'Segments', render };

/** Visible segments per datasource and interval. */
const SEGMENTS_SQL = `SELECT "datasource", "start", "end", COUNT(*) AS "segments", SUM("size") AS "size", SUM("num_rows") AS "num_rows"
FROM sys.segments
WHERE "is_active" = 1
GROUP BY 1, 2, 3
ORDER BY 1, 2`;

async function render(root) {
  const { rows } = await sql(SEGMENTS_SQL);
  const byDatasource = new Map();
  for (const [datasource, , , segments, size, numRows] of rows) {
    const d = byDatasource.get(datasource) ?? { intervals: 0, segments: 0, size: 0, rows: 0 };
    d.intervals += 1;
    d.segments += segments;
    d.size += size;
    d.rows += numRows;
    byDatasource.set(datasource, d);
  }
  const names = [...byDatasource.keys()];
  const summary = names.map((name) => {
    const d = byDatasource.get(name);
    return [name, numeric(count(d.intervals)), numeric(count(d.segments)), numeric(bytes(d.size)), numeric(count(d.rows))];
  });
  root.append(section('Datasources',
    table('datasources', ['Datasource', 'Time chunks', 'Segments', 'Size', 'Rows'], summary,
      { key: (i) => names[i], empty: 'No segments are published.' })));
  const chunks = rows.map(([datasource, start, end, segments, size, numRows]) => [
    datasource, start, end, numeric(count(segments)), numeric(count(size)), numeric(count(numRows)),
  ]);
  root.append(section('Time chunks',
    table('segments', ['Datasource', 'Start', 'End', 'Segments', 'Bytes', 'Rows'], chunks,
      { key: (i) => `${rows[i][0]}/${rows[i][1]}/${rows[i][2]}`, empty: 'No segments are published.' })));
}

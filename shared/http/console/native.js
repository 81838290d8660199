// A native query's answer as a table: the rows each query type's JSON holds (timeseries and
// timeBoundary `result` objects, topN `result` lists, groupBy `event`s, scan `events`), with
// the bucket's timestamp first where there is one; any other answer is one row per item.

/** `{columns, rows}` of a native query's `result`. */
export function rowsOf(result) {
  const records = [];
  const items = Array.isArray(result) ? result : [result];
  for (const item of items) {
    if (item && typeof item === 'object' && !Array.isArray(item)) {
      if (Array.isArray(item.events)) {
        for (const e of item.events) records.push(Array.isArray(e) ? zip(item.columns ?? [], e) : e);
        continue;
      }
      if (Array.isArray(item.result)) {
        for (const r of item.result) records.push({ timestamp: item.timestamp, ...r });
        continue;
      }
      if (item.result && typeof item.result === 'object') {
        records.push({ timestamp: item.timestamp, ...item.result });
        continue;
      }
      if (item.event && typeof item.event === 'object') {
        records.push({ timestamp: item.timestamp, ...item.event });
        continue;
      }
      records.push(item);
    } else {
      records.push({ result: item });
    }
  }
  const columns = [];
  for (const r of records) {
    for (const key of Object.keys(r ?? {})) if (!columns.includes(key)) columns.push(key);
  }
  return { columns, rows: records.map((r) => columns.map((c) => (r ?? {})[c] ?? null)) };
}

function zip(columns, values) {
  return Object.fromEntries(values.map((v, i) => [columns[i] ?? `column${i}`, v]));
}

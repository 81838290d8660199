// Requests from the page to Sluice's API, on the origin that served the page (paths are
// relative to it, so the console also works behind a path prefix). JSON goes out as
// `application/json`, which the local server requires of every POST; an error answer
// (Druid's error JSON) becomes an ApiError saying what the server said.

/** An answer other than 2xx. */
export class ApiError extends Error {
  constructor(status, body) {
    const detail = body && typeof body === 'object'
      ? [body.error, body.errorMessage].filter(Boolean).join(': ')
      : String(body ?? '').slice(0, 500);
    super(`${status}${detail ? ` ${detail}` : ''}`);
    this.status = status;
    this.body = body;
  }
}

/** A path of API segments, each encoded (`supervisor/a%2Fb`). */
export function at(...segments) {
  return segments.map((s) => encodeURIComponent(String(s))).join('/');
}

async function request(method, path, body) {
  const init = { method, headers: { Accept: 'application/json' }, cache: 'no-store', credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const raw = await response.text();
  let value = raw;
  try {
    value = raw === '' ? null : JSON.parse(raw);
  } catch {
    // Not JSON: kept as text.
  }
  if (!response.ok) throw new ApiError(response.status, value);
  return value;
}

/** `GET path`'s JSON. */
export function get(path) {
  return request('GET', path);
}

/** `POST path` with `body` as JSON; the answer's JSON. */
export function post(path, body) {
  return request('POST', path, body);
}

/** The value of `work()` and the milliseconds it took. */
export async function timed(work) {
  const started = performance.now();
  const value = await work();
  return { value, ms: Math.round(performance.now() - started) };
}

/** A Druid SQL query's answer as `{columns, types, rows}` (rows are lists in column order). */
export async function sql(query, context) {
  const body = { query, resultFormat: 'array', header: true, sqlTypesHeader: true };
  if (context) body.context = context;
  const answer = await post('druid/v2/sql', body);
  if (!Array.isArray(answer) || answer.length < 2) throw new Error('the SQL answer has no header rows');
  return { columns: answer[0], types: answer[1], rows: answer.slice(2) };
}

/**
 * Whether this server serves writes. The probe fits no route: a server serving writes
 * answers it 404 and changes nothing; one that does not refuses it with 403, as it refuses
 * any write (see shared/http/src/console.rs).
 */
export async function operationsServed() {
  try {
    await post('console/operations', {});
    return false;
  } catch (e) {
    return e instanceof ApiError && e.status === 404;
  }
}

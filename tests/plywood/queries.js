// What Turnilo's engine asks a Druid broker, through plywood and plywood-druid-requester (npm).
//
// Usage: node tests/plywood/queries.js HOST:PORT DATASOURCE   (NODE_PATH: their node_modules)
// Introspects the datasource as Turnilo does (GET /status, segmentMetadata with
// lenientAggregatorMerge, timeBoundary), then asks, over 2015-09-12, for the row count, the top
// three pages, the count and added per hour and the top three (channel, namespace) pairs, and
// prints one JSON object: {"version", "attributes", "count", "top", "hourly", "pairs"}.
'use strict';
const { External, $, ply, basicExecutorFactory } = require('plywood');
const { Duration } = require('chronoshift');
const { druidRequesterFactory } = require('plywood-druid-requester');

async function main() {
  const [host, source] = process.argv.slice(2);
  const requester = druidRequesterFactory({ host, timeout: 60000 });
  const external = await External.fromJS({ engine: 'druid', source, timeAttribute: '__time' }, requester).introspect();
  const run = basicExecutorFactory({ datasets: { wiki: external } });
  const day = $('__time').overlap({ start: new Date('2015-09-12T00:00:00Z'), end: new Date('2015-09-13T00:00:00Z') });
  const hour = $('__time').timeBucket(Duration.fromJS('PT1H'));
  const result = await run(ply()
    .apply('wiki', $('wiki').filter(day))
    .apply('count', '$wiki.count()')
    .apply('top', $('wiki').split('$page', 'page').apply('count', '$wiki.count()').sort('$count', 'descending').limit(3))
    .apply('hourly', $('wiki').split(hour, 'hour').apply('count', '$wiki.count()').apply('added', '$wiki.sum($added)').sort('$hour', 'ascending'))
    .apply('pairs', $('wiki').split({ channel: '$channel', namespace: '$namespace' }).apply('count', '$wiki.count()').sort('$count', 'descending').limit(3)));
  const row = result.toJS().data[0];
  const rows = (dataset) => dataset.data;
  console.log(JSON.stringify({
    version: external.version,
    attributes: external.attributes.map((a) => [a.name, a.type]),
    count: row.count,
    top: rows(row.top).map((r) => [r.page, r.count]),
    hourly: rows(row.hourly).map((r) => [new Date(r.hour.start).toISOString(), r.count, r.added]),
    pairs: rows(row.pairs).map((r) => [r.channel, r.namespace, r.count]),
  }));
}

main().catch((e) => {
  console.error(`plywood: ${e && e.message}`);
  process.exit(1);
});

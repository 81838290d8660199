// Compaction and retention: the compaction configs and their status, and the retention rules
// of every datasource (`_default`: the cluster's).

import { get } from './api.js';
import { bytes, count, facts, numeric, section, table, text } from './dom.js';

export const view = { id: 'compaction', title: 'Compaction and retention', render };

async function render(root) {
  const [configs, status, rules] = await Promise.all([
    get('druid/coordinator/v1/config/compaction'),
    get('druid/coordinator/v1/compaction/status'),
    get('druid/coordinator/v1/rules'),
  ]);
  const list = configs?.compactionConfigs ?? [];
  root.append(section('Compaction configs',
    facts([['Task slot ratio', text(configs?.compactionTaskSlotRatio)], ['Most task slots', count(configs?.maxCompactionTaskSlots)]]),
    table('compaction-configs', ['Datasource', 'Skip offset from latest', 'Max rows per segment', 'Input segment bytes', 'Task priority'],
      list.map((c) => [c.dataSource, text(c.skipOffsetFromLatest), numeric(count(c.maxRowsPerSegment)), numeric(count(c.inputSegmentSizeBytes)), numeric(text(c.taskPriority))]),
      { key: (i) => list[i].dataSource, empty: 'No datasource is compacted.' })));
  const latest = status?.latestStatus ?? [];
  root.append(section('Compaction status',
    table('compaction-status', ['Datasource', 'Schedule', 'Bytes awaiting', 'Bytes compacted', 'Segments awaiting', 'Segments compacted', 'Chunks awaiting', 'Chunks compacted'],
      latest.map((s) => [
        s.dataSource, text(s.scheduleStatus), numeric(bytes(s.bytesAwaitingCompaction)), numeric(bytes(s.bytesCompacted)),
        numeric(count(s.segmentCountAwaitingCompaction)), numeric(count(s.segmentCountCompacted)),
        numeric(count(s.intervalCountAwaitingCompaction)), numeric(count(s.intervalCountCompacted)),
      ]),
      { key: (i) => latest[i].dataSource, empty: 'No compaction status: no datasource is compacted.' })));
  const ruleRows = [];
  for (const [datasource, list] of Object.entries(rules ?? {})) {
    (list ?? []).forEach((rule, i) => ruleRows.push([datasource, numeric(i + 1), text(rule?.type), details(rule)]));
  }
  root.append(section('Retention rules',
    table('rules', ['Datasource', 'Order', 'Rule', 'Details'], ruleRows, { empty: 'No retention rules.' })));
}

/** A rule's fields beside its type, as `name=value`. */
function details(rule) {
  return Object.entries(rule ?? {}).filter(([k]) => k !== 'type').map(([k, v]) => `${k}=${text(v)}`).join(', ');
}

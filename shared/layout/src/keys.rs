//! Every metadata key and object key Sluice writes, spelled once. The layout, with the
//! conditions each write carries, is drawn in `docs/metadata-layout.md`.
//!
//! ```text
//!  metadata  pk catalog                 sk ds#<datasource>                   one per datasource
//!            pk compaction              sk ds#<datasource>                   its compaction config
//!            pk rules                   sk ds#<datasource>                   its retention rules
//!            pk lookups                 sk lookup#<tier>#<name>              a lookup's version and object
//!            pk ds#<datasource>         sk spec | stats | grouping
//!                                       sk plan#<group> | offsets#<group>
//!                                       sk chunk#<start> | seg#<start>#<version>#<partition>
//!                                       sk replaces | replace#<n> | guard#<start>
//!                                       sk timeline | tlog#<version>         the timeline's head and change log
//!                                       sk history#<submitted> | batch#<task id>
//!            pk batchtasks              sk <task id>                         which datasource a batch task writes
//!            pk batch#<task id>         sk spec | split#<n>
//!            pk batchslots              sk slot#<k>                          a batch split in flight
//!                                       sk wait#<task id>                    a batch task waiting for slots
//!            pk ds#<datasource>/<group> sk task#<group>#<seq> | ckpt#<group>#<seq>#<attempt>#<n>[#<part>]
//!                                       sk report#<seq>
//!  objects   hydrants/<datasource>/<group>/<seq>/<attempt>/<chunk start>/<n>.hyd
//!            batch-hydrants/<datasource>/<task id>/<split>/<attempt>/<chunk start>/<n>.hyd
//!            segments/<datasource>/<start>_<end>/<version>/<partition>.seg
//!            query-partials/<request digest>/<random>.part
//!            lookups/<tier, name digest>/<write digest>.json                 a lookup's map, one per write
//! ```
//!
//! Numbers are zero-padded and times offset so that keys sort like what they name: a prefix
//! query returns groups, tasks, checkpoints and segments in order. A group's tasks and
//! checkpoints, written every checkpoint period while it runs, have a partition key of their
//! own, so that DynamoDB's write limit per partition key (1,000 units/s) bounds a group and
//! not a datasource; every group that ever had a task has a `plan#` item (never deleted)
//! that names it.

use sluice_format::time::{format_iso, Interval};

/// Partition key of the catalog: one item per datasource name.
pub const CATALOG_PK: &str = "catalog";
/// Partition key of the compaction configurations: one item per datasource, sort key
/// [`catalog_sk`].
pub const COMPACTION_PK: &str = "compaction";
/// Partition key of the retention rules: one item per datasource, sort key [`catalog_sk`].
pub const RULES_PK: &str = "rules";
/// Partition key of the lookups: one item per tier and lookup, sort key [`lookup_sk`].
pub const LOOKUPS_PK: &str = "lookups";
/// Sort key prefix of the lookup items.
pub const LOOKUP_PREFIX: &str = "lookup#";
/// Sort key prefix of the catalog's datasource items.
pub const CATALOG_PREFIX: &str = "ds#";
/// Sort key of a datasource's spec item.
pub const SPEC_SK: &str = "spec";
/// Sort key of a datasource's supervisor statistics.
pub const STATS_SK: &str = "stats";
/// Sort key of a datasource's autoscaler state: lag samples and decisions.
pub const AUTOSCALER_SK: &str = "autoscaler";
/// Sort key of a datasource's grouping: epoch, `taskCount`, topic, a change under way.
pub const GROUPING_SK: &str = "grouping";
/// Sort key prefix of the planning states.
pub const PLAN_PREFIX: &str = "plan#";
/// Sort key prefix of the committed offsets.
pub const OFFSETS_PREFIX: &str = "offsets#";
/// Sort key prefix of the task items.
pub const TASK_PREFIX: &str = "task#";
/// Sort key prefix of the segment records.
pub const SEGMENT_PREFIX: &str = "seg#";
/// Sort key prefix of the segment records' summaries (`sum#` and the rest of the record's key).
pub const SUMMARY_PREFIX: &str = "sum#";
/// Sort key of a datasource's next replace number.
pub const REPLACE_COUNTER_SK: &str = "replaces";
/// Sort key prefix of the replace items.
pub const REPLACE_PREFIX: &str = "replace#";
/// Sort key prefix of the replace guards.
pub const GUARD_PREFIX: &str = "guard#";

/// Sort key prefix of the task reports.
pub const REPORT_PREFIX: &str = "report#";
/// Sort key prefix of the submitted specs kept as the supervisor's history.
pub const HISTORY_PREFIX: &str = "history#";

/// Partition key of the batch task ids: one item per task, naming its datasource.
pub const BATCH_IDS_PK: &str = "batchtasks";
/// Sort key prefix of a datasource's batch task items.
pub const BATCH_TASK_PREFIX: &str = "batch#";
/// Sort key of a batch task's spec, under [`batch_pk`].
pub const BATCH_SPEC_SK: &str = "spec";
/// Sort key prefix of a batch task's splits, under [`batch_pk`].
pub const SPLIT_PREFIX: &str = "split#";

/// Sort key of a batch task's item, under its datasource's key.
pub fn batch_task_sk(id: &str) -> String {
    format!("{BATCH_TASK_PREFIX}{id}")
}

/// Partition key of a batch task's spec and splits (its prefix is no datasource's, `ds#`).
pub fn batch_pk(id: &str) -> String {
    format!("batch#{id}")
}

/// Sort key of split `n` of a batch task.
pub fn split_sk(n: u32) -> String {
    format!("{SPLIT_PREFIX}{n:06}")
}

/// Partition key of the deployment's batch split slots: one item per split in flight at once.
pub const BATCH_SLOTS_PK: &str = "batchslots";
/// Sort key prefix of the batch split slots, under [`BATCH_SLOTS_PK`].
pub const BATCH_SLOT_PREFIX: &str = "slot#";

/// Sort key of batch split slot `k`.
pub fn batch_slot_sk(k: u32) -> String {
    format!("{BATCH_SLOT_PREFIX}{k:05}")
}

/// Sort key prefix of the batch tasks waiting for slots, under [`BATCH_SLOTS_PK`].
pub const BATCH_WAIT_PREFIX: &str = "wait#";

/// Sort key of batch task `id` waiting for slots.
pub fn batch_wait_sk(id: &str) -> String {
    format!("{BATCH_WAIT_PREFIX}{id}")
}

/// Object key prefix of every hydrant of a batch task.
pub fn batch_hydrant_prefix(datasource: &str, id: &str) -> String {
    format!("batch-hydrants/{datasource}/{id}/")
}

/// Object key of hydrant `n` of an attempt at a split, for the time chunk starting at
/// `chunk_start`.
pub fn batch_hydrant_key(datasource: &str, id: &str, split: u32, attempt: u32, chunk_start: i64, n: u32) -> String {
    format!(
        "{}{split:06}/{attempt:04}/{}/{n:06}.hyd",
        batch_hydrant_prefix(datasource, id),
        format_iso(chunk_start).replace(':', "-")
    )
}

/// Partition key of a datasource's items.
pub fn datasource_pk(datasource: &str) -> String {
    format!("ds#{datasource}")
}

/// Partition key of a partition group's tasks and checkpoints (`/` is not allowed in a
/// datasource name, so no datasource's key is another's group key).
pub fn group_pk(datasource: &str, group: u32) -> String {
    format!("ds#{datasource}/{group:04}")
}

/// Sort key of a finished task's report, under its group's key.
pub fn report_sk(seq: u64) -> String {
    format!("{REPORT_PREFIX}{seq:012}")
}

/// Tasks whose reports share a [`report_block_prefix`].
pub const REPORT_BLOCK: u64 = 100;

/// Sort key prefix of the reports of tasks `block * 100 .. block * 100 + 100` of a group.
pub fn report_block_prefix(block: u64) -> String {
    format!("{REPORT_PREFIX}{block:010}")
}

/// Sort key of a spec submitted at `at_ms`, in the supervisor's history.
pub fn history_sk(at_ms: i64) -> String {
    format!("{HISTORY_PREFIX}{}", sortable(at_ms))
}

/// Sort key of a datasource's item in the catalog.
pub fn catalog_sk(datasource: &str) -> String {
    format!("{CATALOG_PREFIX}{datasource}")
}

/// Sort key of a lookup's item.
pub fn lookup_sk(tier: &str, name: &str) -> String {
    format!("{LOOKUP_PREFIX}{tier}#{name}")
}

/// Object key of one write of a lookup's map: `lookup` is a digest of the tier and name,
/// `write` of the write (unique per write: objects are never overwritten).
pub fn lookup_key(lookup: u64, write: u64) -> String {
    format!("lookups/{lookup:016x}/{write:016x}.json")
}

/// Sort key of a partition group's planning state.
pub fn plan_sk(group: u32) -> String {
    format!("{PLAN_PREFIX}{group:04}")
}

/// Sort key of a partition group's committed offsets.
pub fn offsets_sk(group: u32) -> String {
    format!("{OFFSETS_PREFIX}{group:04}")
}

/// The partition group a `plan#` or `offsets#` sort key names.
pub fn group_of(sk: &str, prefix: &str) -> Option<u32> {
    sk.strip_prefix(prefix)?.parse().ok()
}

/// Sort key prefix of every task of a partition group.
pub fn task_group_prefix(group: u32) -> String {
    format!("{TASK_PREFIX}{group:04}#")
}

/// Sort key of a task item.
pub fn task_sk(group: u32, seq: u64) -> String {
    format!("{}{seq:012}", task_group_prefix(group))
}

/// Sort key prefix of every checkpoint of a task.
pub fn checkpoint_prefix(group: u32, seq: u64) -> String {
    format!("ckpt#{group:04}#{seq:012}#")
}

/// Sort key of checkpoint `n` of an attempt.
pub fn checkpoint_sk(group: u32, seq: u64, attempt: u32, n: u32) -> String {
    format!("{}{attempt:04}#{n:06}", checkpoint_prefix(group, seq))
}

/// Sort key of part `part` (1, 2, ...) of checkpoint `n`: right after the checkpoint's own
/// item and before the next checkpoint.
pub fn checkpoint_part_sk(group: u32, seq: u64, attempt: u32, n: u32, part: u32) -> String {
    format!("{}#{part:04}", checkpoint_sk(group, seq, attempt, n))
}

/// Sort key of a time chunk's numbering item.
pub fn chunk_sk(start: i64) -> String {
    format!("chunk#{}", sortable(start))
}

/// Sort key of a segment record.
pub fn segment_sk(start: i64, version: &str, partition: u32) -> String {
    format!("{SEGMENT_PREFIX}{}#{version}#{partition:06}", sortable(start))
}

/// The least sort key of a segment record starting at or after `start`: the records starting
/// in `[a, b)` are those from `segment_start_bound(a)` (inclusive) to `segment_start_bound(b)`
/// (exclusive).
pub fn segment_start_bound(start: i64) -> String {
    format!("{SEGMENT_PREFIX}{}", sortable(start))
}

/// Sort key of the summary of the segment record whose sort key is `record_sk`.
pub fn summary_sk(record_sk: &str) -> String {
    format!("{SUMMARY_PREFIX}{}", record_sk.strip_prefix(SEGMENT_PREFIX).unwrap_or(record_sk))
}

/// Sort key of a replace item.
pub fn replace_sk(id: u64) -> String {
    format!("{REPLACE_PREFIX}{id:012}")
}

/// Sort key of a datasource's timeline head (`timeline_log::TimelineHead`).
pub const TIMELINE_SK: &str = "timeline";

/// Sort key prefix of a datasource's timeline change log.
pub const TIMELINE_LOG_PREFIX: &str = "tlog#";

/// Sort key of the change log's entry of timeline version `version`.
pub fn timeline_log_sk(version: u64) -> String {
    format!("{TIMELINE_LOG_PREFIX}{version:020}")
}

/// Sort key of the replace guard of segments starting at `start`.
pub fn guard_sk(start: i64) -> String {
    format!("{GUARD_PREFIX}{}", sortable(start))
}

/// A time as a key part that sorts like the time (offset so negatives sort first).
fn sortable(ms: i64) -> String {
    format!("{:020}", (ms as i128 - i64::MIN as i128) as u128)
}

/// Object key prefix of every hydrant of a task, all attempts.
pub fn hydrant_task_prefix(datasource: &str, group: u32, seq: u64) -> String {
    format!("hydrants/{datasource}/{group:04}/{seq:012}/")
}

/// Object key of hydrant `n` of an attempt for the time chunk starting at `chunk_start`:
/// unique to (datasource, task, attempt, chunk, sequence).
pub fn hydrant_key(datasource: &str, group: u32, seq: u64, attempt: u32, chunk_start: i64, n: u32) -> String {
    format!(
        "{}{attempt:04}/{}/{n:06}.hyd",
        hydrant_task_prefix(datasource, group, seq),
        format_iso(chunk_start).replace(':', "-")
    )
}

/// Object key of a segment.
pub fn segment_key(datasource: &str, interval: Interval, version: &str, partition: u32) -> String {
    format!(
        "segments/{datasource}/{}_{}/{}/{partition:06}.seg",
        format_iso(interval.start),
        format_iso(interval.end),
        version
    )
    .replace(':', "-")
}

/// Object key prefix of the partials query workers leave for their caller when one is larger
/// than a Lambda response holds; the caller deletes each once read, and the bucket expires
/// what a caller that died left.
pub const QUERY_PARTIALS_PREFIX: &str = "query-partials/";

/// Object key prefix of the partials answering the worker request of `digest`.
pub fn query_partials_prefix(digest: &str) -> String {
    format!("{QUERY_PARTIALS_PREFIX}{digest}/")
}

/// Object key of one partial answering the worker request of `digest` (`id`: random, so two
/// attempts at one request never write the same object).
pub fn query_partial_key(digest: &str, id: &str) -> String {
    format!("{}{id}.part", query_partials_prefix(digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_like_what_they_name() {
        assert!(task_sk(1, 9) < task_sk(1, 10));
        assert!(task_sk(1, 999) < task_sk(2, 1));
        assert!(task_sk(3, 5).starts_with(&task_group_prefix(3)));
        assert!(checkpoint_sk(1, 2, 1, 9) < checkpoint_sk(1, 2, 1, 10));
        assert!(checkpoint_sk(1, 2, 1, 99) < checkpoint_sk(1, 2, 2, 0));
        assert!(checkpoint_sk(1, 2, 1, 5) < checkpoint_part_sk(1, 2, 1, 5, 1));
        assert!(checkpoint_part_sk(1, 2, 1, 5, 1) < checkpoint_part_sk(1, 2, 1, 5, 2));
        assert!(checkpoint_part_sk(1, 2, 1, 5, 9999) < checkpoint_sk(1, 2, 1, 6));
        assert!(segment_sk(-5, "v", 0) < segment_sk(0, "v", 0));
        assert!(chunk_sk(-1) < chunk_sk(1));
        assert!(replace_sk(9) < replace_sk(10) && replace_sk(1).starts_with(REPLACE_PREFIX));
        assert!(guard_sk(-1) < guard_sk(1) && guard_sk(0).starts_with(GUARD_PREFIX));
        assert!(!REPLACE_COUNTER_SK.starts_with(REPLACE_PREFIX), "the counter is not a replace");
        assert_eq!(group_of(&plan_sk(12), PLAN_PREFIX), Some(12));
        assert_eq!(group_of("plan#x", PLAN_PREFIX), None);
        assert!(report_sk(9) < report_sk(10) && report_sk(0).starts_with(REPORT_PREFIX));
        assert!(report_sk(1_234).starts_with(&report_block_prefix(1_234 / REPORT_BLOCK)));
        assert!(!report_sk(1_300).starts_with(&report_block_prefix(1_234 / REPORT_BLOCK)));
        assert!(history_sk(9) < history_sk(10) && history_sk(-1) < history_sk(0));
    }

    #[test]
    fn the_timelines_keys_match_no_prefix_read_on_a_datasource() {
        let prefixes = [PLAN_PREFIX, OFFSETS_PREFIX, SEGMENT_PREFIX, SUMMARY_PREFIX, REPLACE_COUNTER_SK, GUARD_PREFIX];
        let more = [HISTORY_PREFIX, BATCH_TASK_PREFIX, "chunk#", SPEC_SK, STATS_SK, GROUPING_SK, AUTOSCALER_SK];
        for sk in [TIMELINE_SK.to_string(), timeline_log_sk(7)] {
            for prefix in prefixes.iter().chain(&more) {
                assert!(!sk.starts_with(prefix) && !prefix.starts_with(sk.as_str()), "{sk} and {prefix}");
            }
        }
        assert!(timeline_log_sk(9) < timeline_log_sk(10) && timeline_log_sk(10).starts_with(TIMELINE_LOG_PREFIX));
    }

    #[test]
    fn no_datasource_key_is_a_group_key() {
        let key = group_pk("wiki", 7);
        assert_eq!(key, "ds#wiki/0007");
        let name = key.strip_prefix("ds#").expect("a datasource key");
        assert!(sluice_format::spec::datasource_name_problem(name).is_some(), "{name} is a datasource name");
    }

    #[test]
    fn object_keys_carry_no_colons() {
        let day = Interval { start: 0, end: 86_400_000 };
        assert_eq!(
            segment_key("wiki", day, "v1", 3),
            "segments/wiki/1970-01-01T00-00-00.000Z_1970-01-02T00-00-00.000Z/v1/000003.seg"
        );
        let key = hydrant_key("wiki", 2, 7, 1, 0, 4);
        assert!(key.starts_with(&hydrant_task_prefix("wiki", 2, 7)), "{key}");
        assert!(!key.contains(':'), "{key}");
    }
}

//! Golden metadata items in `data/golden/items/`: one folder per item body, holding the items
//! a release wrote. Items outlive releases (a table is upgraded in place), so each must still
//! read, and must read as its file says:
//!
//! - `written.json` is an item as this release writes it: read and written back, it is the
//!   same JSON, field for field (as is every `written-*.json`, another item of the same body
//!   holding fields `written.json` leaves out);
//! - every other file is an item as an earlier release wrote it, with `readsAs`: the body this
//!   release reads it as, written back.
//!
//! Each item's key is checked too: the key this release computes from the body (or, where the
//! body does not name it, from the golden datasource, group and batch task) must be the key the
//! file holds. A change to a body or a key that breaks reading an old item fails here; a
//! deliberate change adds the old shape as a new file with its reading.
//!
//! Between them, the items as this release writes them hold every state and kind of a body (a
//! task's states, a replace's kinds, a split's input sources, ...): a variant added to one of
//! these enums fails to compile here until it is listed, and then fails until an item holds it.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_format::summary::{ColumnSummary, DoubleSummary, LongSummary, StringSummary};
use sluice_layout::autoscaler::AutoscalerItem;
use sluice_layout::batch::{
    BatchIdItem, BatchSlotItem, BatchSpecItem, BatchState, BatchTaskItem, BatchWaitItem, PieceSource, SplitItem,
    SplitState,
};
use sluice_layout::coordinator::{CompactionItem, RulesItem};
use sluice_layout::datasource::{OffsetsItem, PlanItem, SpecItem, SpecVersion, StatsItem, SupervisorState};
use sluice_layout::grouping::GroupingItem;
use sluice_layout::keys::{self, datasource_pk};
use sluice_layout::lookup::LookupItem;
use sluice_layout::replace::{GuardItem, ReplaceCounter, ReplaceItem, ReplaceKind, ReplaceState};
use sluice_layout::report::TaskReport;
use sluice_layout::task::{Checkpoint, TaskId, TaskItem, TaskState};
use sluice_layout::timeline::{ChunkItem, SegmentRecord, SummaryItem};
use sluice_layout::timeline_log::{Change, ChangeEntry, HeadState, TimelineHead};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The datasource every golden item belongs to.
const DS: &str = "wikipedia";
/// The batch task of the golden batch items.
const BATCH_ID: &str = "index_parallel_wikipedia_szylugiq_2026-12-06T23:42:36.237Z";

/// One golden file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Golden {
    pk: String,
    sk: String,
    body: Value,
    #[serde(default)]
    reads_as: Option<Value>,
}

/// A key: partition and sort key.
type Key = (String, String);

/// Reads a body as this release does: the body written back and the key it belongs under.
type Reader = Box<dyn Fn(&Golden) -> Result<(Value, Key), String>>;

/// A reader of `T`, whose key `key` computes from the item (and the golden file, for the parts
/// of a key the body does not hold).
fn reader<T: DeserializeOwned + Serialize + 'static>(key: fn(&T) -> Key) -> Reader {
    Box::new(move |g: &Golden| {
        let item: T = serde_json::from_value(g.body.clone()).map_err(|e| format!("does not read: {e}"))?;
        let back = serde_json::to_value(&item).map_err(|e| format!("does not write: {e}"))?;
        Ok((back, key(&item)))
    })
}

/// The task of the golden checkpoints.
fn task_id() -> TaskId {
    TaskId { datasource: DS.into(), group: 0, seq: 1 }
}

fn ds(sk: &str) -> Key {
    (datasource_pk(DS), sk.to_string())
}

/// Every item body, by folder.
fn kinds() -> BTreeMap<&'static str, Reader> {
    let mut k: BTreeMap<&'static str, Reader> = BTreeMap::new();
    k.insert(
        "spec",
        reader(|s: &SpecItem| {
            (datasource_pk(s.spec["dataSchema"]["dataSource"].as_str().unwrap_or("")), keys::SPEC_SK.into())
        }),
    );
    k.insert("history", reader(|v: &SpecVersion| ds(&keys::history_sk(v.submitted_ms))));
    k.insert("stats", reader(|_: &StatsItem| ds(keys::STATS_SK)));
    k.insert("autoscaler", reader(|_: &AutoscalerItem| ds(keys::AUTOSCALER_SK)));
    k.insert("grouping", reader(|_: &GroupingItem| ds(keys::GROUPING_SK)));
    k.insert("plan", reader(|_: &PlanItem| ds(&keys::plan_sk(0))));
    k.insert("offsets", reader(|_: &OffsetsItem| ds(&keys::offsets_sk(0))));
    k.insert("chunk", reader(|c: &ChunkItem| ds(&keys::chunk_sk(c.interval.start))));
    k.insert("segment", reader(|r: &SegmentRecord| ds(&r.sk())));
    k.insert("summary", reader(|s: &SummaryItem| ds(&keys::summary_sk(&s.record))));
    k.insert("replaces", reader(|_: &ReplaceCounter| ds(keys::REPLACE_COUNTER_SK)));
    k.insert("replace", reader(|r: &ReplaceItem| ds(&keys::replace_sk(r.id))));
    k.insert("guard", reader(|g: &GuardItem| ds(&keys::guard_sk(g.start))));
    k.insert("timeline", reader(|_: &TimelineHead| ds(keys::TIMELINE_SK)));
    k.insert("timeline-log", reader(|e: &ChangeEntry| ds(&keys::timeline_log_sk(e.version))));
    k.insert("task", reader(|t: &TaskItem| (t.id.pk(), t.id.sk())));
    k.insert(
        "checkpoint",
        reader(|c: &Checkpoint| (keys::group_pk(DS, 0), task_id().checkpoint_sk(c.attempt, c.n, c.part))),
    );
    k.insert("report", reader(|r: &TaskReport| (r.id.pk(), r.id.report_sk())));
    k.insert(
        "compaction",
        reader(|c: &CompactionItem| {
            (keys::COMPACTION_PK.into(), keys::catalog_sk(c.config["dataSource"].as_str().unwrap_or("")))
        }),
    );
    k.insert("rules", reader(|_: &RulesItem| (keys::RULES_PK.into(), keys::catalog_sk(DS))));
    k.insert("lookup", reader(|l: &LookupItem| (keys::LOOKUPS_PK.into(), keys::lookup_sk(&l.tier, &l.name))));
    k.insert("batch-id", reader(|_: &BatchIdItem| (keys::BATCH_IDS_PK.into(), BATCH_ID.into())));
    k.insert("batch-task", reader(|t: &BatchTaskItem| (datasource_pk(&t.datasource), keys::batch_task_sk(&t.id))));
    k.insert("batch-spec", reader(|_: &BatchSpecItem| (keys::batch_pk(BATCH_ID), keys::BATCH_SPEC_SK.into())));
    k.insert("split", reader(|s: &SplitItem| (keys::batch_pk(BATCH_ID), keys::split_sk(s.n))));
    k.insert("batch-slot", reader(|_: &BatchSlotItem| (keys::BATCH_SLOTS_PK.into(), keys::batch_slot_sk(3))));
    k.insert("batch-wait", reader(|w: &BatchWaitItem| (keys::BATCH_SLOTS_PK.into(), keys::batch_wait_sk(&w.task))));
    k
}

fn items_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/golden/items")
}

fn load(name: &str) -> Golden {
    let text = std::fs::read_to_string(items_dir().join(name)).expect("read golden");
    serde_json::from_str(&text).expect("golden JSON")
}

fn files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir).expect("read dir").map(|e| e.expect("entry").path()).collect();
    out.sort();
    out
}

#[test]
fn every_golden_item_reads_as_its_file_says_under_its_key() {
    let kinds = kinds();
    let mut checked = 0;
    for folder in files(&items_dir()).into_iter().filter(|p| p.is_dir()) {
        let name = folder.file_name().and_then(|n| n.to_str()).expect("name").to_string();
        let read = kinds.get(name.as_str()).unwrap_or_else(|| panic!("{name}: a golden folder no item body reads"));
        assert!(folder.join("written.json").is_file(), "{name}: no written.json (the item as this release writes it)");
        for file in files(&folder) {
            let shown = format!("{name}/{}", file.file_name().and_then(|n| n.to_str()).unwrap_or(""));
            let text = std::fs::read_to_string(&file).expect("read golden");
            let golden: Golden = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{shown}: {e}"));
            let current = file.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("written"));
            assert_eq!(current, golden.reads_as.is_none(), "{shown}: only an earlier release's item has readsAs");
            let (back, key) = read(&golden).unwrap_or_else(|e| panic!("{shown}: {e}"));
            let expected = golden.reads_as.as_ref().unwrap_or(&golden.body);
            assert_eq!(&back, expected, "{shown}: read and written back, the body changed");
            assert_eq!(key, (golden.pk.clone(), golden.sk.clone()), "{shown}: this release keys the item elsewhere");
            checked += 1;
        }
    }
    assert!(checked > kinds.len(), "only {checked} golden items");
}

#[test]
fn every_item_body_has_a_golden_folder() {
    for name in kinds().keys() {
        assert!(items_dir().join(name).join("written.json").is_file(), "no data/golden/items/{name}/written.json");
    }
}

#[test]
fn an_item_an_earlier_release_cannot_have_written_fails_to_read() {
    // The check can fail: a task item with a field no release wrote is refused (the task item
    // refuses unknown fields), and a plan item missing a field every release wrote is too.
    let kinds = kinds();
    let task = load("task/written.json");
    let mut bad = Golden { pk: task.pk, sk: task.sk, body: task.body, reads_as: None };
    bad.body["laterField"] = Value::Bool(true);
    assert!(kinds["task"](&bad).is_err());
    let plan = load("plan/written.json");
    let mut bad = Golden { pk: plan.pk, sk: plan.sk, body: plan.body, reads_as: None };
    bad.body.as_object_mut().expect("a plan item is an object").remove("nextStart");
    assert!(kinds["plan"](&bad).is_err());
}

/// The values of `$enum`'s variants as items spell them. The match is exhaustive: a variant
/// added to the enum fails to compile here until it is listed (and so checked below).
macro_rules! variants {
    ($enum:ident: $($variant:ident),+) => {{
        let _every = |v: $enum| match v {
            $($enum::$variant)|+ => (),
        };
        vec![$(serde_json::to_value($enum::$variant).expect("a variant writes")),+]
    }};
}

/// The `type` of each variant of an internally tagged enum, as items spell it.
fn tags<T: Serialize>(every: &[T]) -> Vec<Value> {
    every.iter().map(|v| serde_json::to_value(v).expect("a variant writes")["type"].clone()).collect()
}

/// Where a piece of input is: every kind.
fn piece_sources() -> Vec<Value> {
    let every = [
        PieceSource::Inline,
        PieceSource::Local { path: String::new() },
        PieceSource::S3 { bucket: String::new(), key: String::new() },
    ];
    // Exhaustive: a kind added fails to compile here until it is listed above.
    let _every = |p: &PieceSource| match p {
        PieceSource::Inline | PieceSource::Local { .. } | PieceSource::S3 { .. } => (),
    };
    tags(&every)
}

/// What a segment's summary says of a column: every kind.
fn column_summaries() -> Vec<Value> {
    let every = [
        ColumnSummary::String(StringSummary::default()),
        ColumnSummary::Long(LongSummary::default()),
        ColumnSummary::Double(DoubleSummary::default()),
        ColumnSummary::Other,
    ];
    // Exhaustive: a kind added fails to compile here until it is listed above.
    let _every = |c: &ColumnSummary| match c {
        ColumnSummary::String(_) | ColumnSummary::Long(_) | ColumnSummary::Double(_) | ColumnSummary::Other => (),
    };
    tags(&every)
}

/// The values at `path` in `value`; `*` is every element of an array or value of an object.
fn values_at<'a>(value: &'a Value, path: &[&str]) -> Vec<&'a Value> {
    match path.split_first() {
        None => vec![value],
        Some((&"*", rest)) => match value {
            Value::Array(items) => items.iter().flat_map(|v| values_at(v, rest)).collect(),
            Value::Object(fields) => fields.values().flat_map(|v| values_at(v, rest)).collect(),
            _ => Vec::new(),
        },
        Some((field, rest)) => value.get(*field).map_or_else(Vec::new, |v| values_at(v, rest)),
    }
}

/// The `kind` of each change an entry holds. The match is exhaustive, as [`variants!`]'s.
fn change_kinds() -> Vec<Value> {
    let task = TaskId { datasource: DS.into(), group: 0, seq: 1 };
    let every =
        [Change::Task { task, merge: String::new() }, Change::Replace { replace: 0, replaced: vec![] }, Change::Reset];
    for c in &every {
        match c {
            Change::Task { .. } | Change::Replace { .. } | Change::Reset => {}
        }
    }
    every.iter().map(|c| serde_json::to_value(c).expect("a change writes")["kind"].clone()).collect()
}

#[test]
fn every_state_and_kind_is_in_an_item_as_this_release_writes_it() {
    // A report is of a finished task only: published or failed.
    let finished = [TaskState::Published, TaskState::Failed].map(|s| serde_json::to_value(s).expect("a state writes"));
    let cases: Vec<(&str, &[&str], Vec<Value>)> = vec![
        ("spec", &["state"], variants!(SupervisorState: Running, Suspended, Terminated)),
        ("task", &["state"], variants!(TaskState: Planned, Running, Incomplete, Complete, Published, Failed)),
        ("report", &["state"], finished.to_vec()),
        ("replace", &["kind"], variants!(ReplaceKind: Compact, Drop, Append, Overwrite)),
        ("replace", &["state"], variants!(ReplaceState: Running, Published, Abandoned)),
        ("batch-task", &["state"], variants!(BatchState: Running, Published, Failed)),
        ("timeline", &["state"], variants!(HeadState: Initializing, Ready)),
        ("timeline-log", &["change", "kind"], change_kinds()),
        ("split", &["state"], variants!(SplitState: Pending, Running, Done, Failed)),
        ("split", &["pieces", "*", "source", "type"], piece_sources()),
        ("summary", &["summary", "columns", "*", "type"], column_summaries()),
    ];
    for (folder, path, wanted) in cases {
        let written = |f: &PathBuf| f.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("written"));
        let bodies: Vec<Value> = files(&items_dir().join(folder))
            .iter()
            .filter(|f| written(f))
            .map(|f| {
                serde_json::from_str::<Golden>(&std::fs::read_to_string(f).expect("read golden")).expect("JSON").body
            })
            .collect();
        let seen: Vec<&Value> = bodies.iter().flat_map(|b| values_at(b, path)).collect();
        for value in wanted {
            assert!(seen.contains(&&value), "{folder}: no written item holds {value} at {}", path.join("."));
        }
    }
}

//! The lag-based autoscaler at work ([`sluice_format::spec::autoscaler`]): each supervisor pass
//! of a running datasource whose spec enables it, before it plans, adds a sample of its total
//! lag (at most one per `lagCollectionIntervalMillis`) to the datasource's `autoscaler` item,
//! and when a decision is due and asks for another task count, writes the spec again with that
//! `taskCount`, on the condition that the spec is the one the pass read. The pass then plans
//! nothing for the old groups: its next step starts the change, which goes through the regroup
//! protocol as any `taskCount` change does (drain, snapshot, move: exactly once, see
//! `docs/exactly-once.md`), its steps following each other within the pass when the tasks of
//! earlier passes are done. No decision is made while a change is under way. Each change is
//! kept in the item (the last [`MAX_DECISIONS`](crate::layout::autoscaler::MAX_DECISIONS)) and
//! in the spec's history; the item stays within its bytes whatever the spec and the partitions
//! (its samples thinned over a window of more than it keeps: `sluice_layout::autoscaler`).

use super::groups::GroupInput;
use super::SupervisorError;
use crate::item::{parse_body, to_json};
use crate::keys::{datasource_pk, history_sk, AUTOSCALER_SK, SPEC_SK};
use crate::layout::autoscaler::{AutoscalerItem, ScaleChange};
use crate::layout::datasource::{SpecItem, SpecVersion, TopicOffsets};
use crate::layout::grouping::GroupingItem;
use crate::task::TaskItem;
use serde::Serialize;
use sluice_format::spec::autoscaler::{AutoScalerConfig, LagSample, ScaleState};
use sluice_format::spec::DatasourceSpec;
use sluice_kafka::Watermarks;
use sluice_store::metadata::{Condition, Item, MetadataStore, TxOp};
use std::collections::BTreeMap;

/// What a pass gives the autoscaler.
pub(super) struct Scale<'a> {
    /// The spec's `autoScalerConfig`.
    pub config: &'a AutoScalerConfig,
    /// The spec as resolved.
    pub spec: &'a DatasourceSpec,
    /// The version of the spec item the pass read.
    pub spec_version: u64,
    /// Per topic read, its partitions' watermarks.
    pub marks: &'a BTreeMap<String, BTreeMap<i32, Watermarks>>,
    /// Now (ms).
    pub now: i64,
}

/// The autoscaler's part of a pass, before it plans: samples the lag from the groups' committed
/// offsets (with real-time tasks, the positions they checkpointed: what is not queryable yet)
/// and the watermarks, and decides. Returns the new task count, if it changed it.
pub(super) async fn before_planning(
    meta: &dyn MetadataStore,
    name: &str,
    scale: &Scale<'_>,
    grouping: &GroupingItem,
    inputs: &[GroupInput],
    other_tasks: &[(TaskItem, u64)],
) -> Result<Option<u32>, SupervisorError> {
    let topics = grouping.topic_names();
    let mut committed = TopicOffsets::new();
    for input in inputs {
        let Some(topic) = topics.get(input.topic) else { continue };
        let offsets = input.offsets.as_ref().filter(|(o, _)| o.epoch == grouping.epoch);
        for &p in &input.partitions {
            let Some(w) = scale.marks.get(*topic).and_then(|m| m.get(&p)) else { continue };
            // A partition nothing was committed for starts where useEarliestOffset says.
            let start = if scale.spec.io.use_earliest_offset { w.low } else { w.high };
            let at = offsets.and_then(|(o, _)| o.offsets.get(&p).copied()).unwrap_or(start);
            committed.entry(topic.to_string()).or_default().insert(p, at);
        }
    }
    if scale.spec.sluice.realtime.is_some() {
        let tasks = inputs.iter().flat_map(|i| i.tasks.iter()).chain(other_tasks).map(|(t, _)| t);
        committed = super::queryable_offsets(&committed, tasks);
    }
    let lag: i64 = scale
        .marks
        .iter()
        .flat_map(|(t, m)| m.iter().map(move |(p, w)| (t, p, w.high)))
        .map(|(t, p, high)| (high - committed.get(t).and_then(|c| c.get(p)).copied().unwrap_or(high)).max(0))
        .sum();
    // No more groups than partitions, as Druid caps taskCountMax.
    let partitions = scale.marks.values().map(BTreeMap::len).sum::<usize>().max(1);
    let config = capped(scale.config, partitions);
    let lag = u64::try_from(lag).unwrap_or(0);
    autoscale(meta, name, &config, scale.spec_version, scale.spec.io.task_count, lag, scale.now).await
}

/// Adds this pass's `lag` sample and, when a decision is due and asks for another count,
/// writes the spec (read at `spec_version`) with it. Returns the new count, if any. A write
/// that loses to another writer changes nothing (the next pass samples again).
pub(super) async fn autoscale(
    meta: &dyn MetadataStore,
    name: &str,
    config: &AutoScalerConfig,
    spec_version: u64,
    task_count: u32,
    lag: u64,
    now: i64,
) -> Result<Option<u32>, SupervisorError> {
    let pk = datasource_pk(name);
    let current = meta.get(&pk, AUTOSCALER_SK).await?;
    let (mut item, condition) = match &current {
        Some(i) => (parse_body::<AutoscalerItem>(name, i)?, Condition::Version(i.version)),
        None => (AutoscalerItem { started: now, ..Default::default() }, Condition::Absent),
    };
    item.add_sample(config, lag, now);
    let state = ScaleState {
        task_count,
        started: item.started,
        last_change: item.changes.last().map(|c| c.at),
        last_decision: item.last_decision,
    };
    let due = config.decision_due(&state, now);
    let decision = config.decide(&item.samples, &state, now);
    if due {
        item.last_decision = Some(now);
    }
    let mut ops = Vec::new();
    if let Some(to) = decision {
        let window: Vec<u64> = config.window(&item.samples, now).map(|s| s.lag).collect();
        item.add_change(ScaleChange {
            at: now,
            from: task_count,
            to,
            samples: window.len(),
            max_lag: window.iter().copied().max().unwrap_or(0),
        });
        // Druid forgets the samples a change was decided on.
        item.samples.clear();
        let Some(spec) = meta.get(&pk, SPEC_SK).await?.filter(|s| s.version == spec_version) else {
            return Ok(None);
        };
        let mut spec_item: SpecItem = parse_body(name, &spec)?;
        set_task_count(&mut spec_item.spec, to);
        let version = SpecVersion { submitted_ms: now, spec: sluice_format::spec::redacted_spec(&spec_item.spec) };
        ops.push(TxOp::Put {
            item: Item::new(&pk, SPEC_SK, to_json(&spec_item)),
            condition: Condition::Version(spec_version),
        });
        ops.push(TxOp::Put { item: Item::new(&pk, history_sk(now), to_json(&version)), condition: Condition::None });
        tracing::info!(datasource = name, from = task_count, to, "autoscaler changes taskCount");
    }
    ops.push(TxOp::Put { item: Item::new(&pk, AUTOSCALER_SK, to_json(&item)), condition });
    match meta.transact(ops).await {
        Ok(_) => Ok(decision),
        // Another writer won (an operator's spec, another supervisor): nothing changes.
        Err(
            sluice_store::metadata::MetaError::ConditionFailed { .. }
            | sluice_store::metadata::MetaError::TransactionFailed { .. },
        ) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What the autoscaler of a datasource would decide now, and why: its status, and the dry run
/// of `sluice supervisor autoscaler` (with lag samples given instead of those kept).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalerStatus {
    /// The task groups in force.
    pub task_count: u32,
    /// Fewest groups.
    pub task_count_min: u32,
    /// Most groups (capped at the partitions seen).
    pub task_count_max: u32,
    /// Samples in the collection window.
    pub samples: usize,
    /// The newest sample's lag.
    pub latest_lag: Option<u64>,
    /// The largest lag in the window.
    pub max_lag: u64,
    /// The fraction of the window at or above `scaleOutThreshold`.
    pub fraction_out: f64,
    /// The fraction of the window at or below `scaleInThreshold`.
    pub fraction_in: f64,
    /// What the samples ask for (`None`: keep the count), due or not.
    pub desired: Option<u32>,
    /// When the next decision may be made (ms): start delay, period, last change.
    pub next_decision_ms: i64,
    /// The changes made, oldest first.
    pub changes: Vec<ScaleChange>,
}

/// The autoscaler's status for `task_count` groups over `partitions` partitions at `now`, from
/// its item (none before its first pass) or, for a dry run, the `lags` given instead of its
/// samples (one per `lagCollectionIntervalMillis`, the last at `now`).
pub fn simulate(
    config: &AutoScalerConfig,
    item: Option<&AutoscalerItem>,
    lags: Option<&[u64]>,
    task_count: u32,
    partitions: usize,
    now: i64,
) -> AutoscalerStatus {
    let config = &capped(config, partitions);
    let interval = i64::try_from(config.lag_collection_interval_millis).unwrap_or(i64::MAX);
    let given: Vec<LagSample> = lags
        .unwrap_or_default()
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &lag)| LagSample { at: now.saturating_sub(interval.saturating_mul(i as i64)), lag })
        .rev()
        .collect();
    let samples = match lags {
        Some(_) => &given,
        None => item.map_or(&given, |i| &i.samples),
    };
    let window: Vec<u64> = config.window(samples, now).map(|s| s.lag).collect();
    let fraction = |f: &dyn Fn(u64) -> bool| match window.len() {
        0 => 0.0,
        n => window.iter().filter(|&&l| f(l)).count() as f64 / n as f64,
    };
    let after =
        |t: Option<i64>, ms: u64| t.map_or(i64::MIN, |t| t.saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)));
    let started = item.map_or(now, |i| i.started);
    let next_decision_ms = [
        after(Some(started), config.scale_action_start_delay_millis),
        after(item.and_then(|i| i.last_decision), config.scale_action_period_millis),
        after(item.and_then(|i| i.changes.last().map(|c| c.at)), config.min_trigger_scale_action_frequency_millis),
    ]
    .into_iter()
    .max()
    .unwrap_or(now);
    AutoscalerStatus {
        task_count,
        task_count_min: config.task_count_min.unwrap_or(1),
        task_count_max: config.task_count_max.unwrap_or(task_count),
        samples: window.len(),
        latest_lag: samples.last().map(|s| s.lag),
        max_lag: window.iter().copied().max().unwrap_or(0),
        fraction_out: fraction(&|l| l >= config.scale_out_threshold),
        fraction_in: fraction(&|l| l <= config.scale_in_threshold),
        desired: config.desired_task_count(&window, task_count),
        next_decision_ms,
        changes: item.map(|i| i.changes.clone()).unwrap_or_default(),
    }
}

/// `config` with `taskCountMax` no larger than the partitions, as Druid caps it (0: not known
/// yet, no cap).
pub(super) fn capped(config: &AutoScalerConfig, partitions: usize) -> AutoScalerConfig {
    let partitions = match u32::try_from(partitions).unwrap_or(u32::MAX) {
        0 => u32::MAX,
        n => n,
    };
    AutoScalerConfig { task_count_max: config.task_count_max.map(|m| m.min(partitions)), ..config.clone() }
}

/// The `autoscaler` item of `name`, if a pass wrote one.
pub async fn read_item(meta: &dyn MetadataStore, name: &str) -> Result<Option<AutoscalerItem>, SupervisorError> {
    match meta.get(&datasource_pk(name), AUTOSCALER_SK).await? {
        Some(i) => Ok(Some(parse_body(name, &i)?)),
        None => Ok(None),
    }
}

/// `spec` (either of Druid's forms) with `ioConfig.taskCount` set to `n`, and without
/// `autoScalerConfig.taskCountStart`: the start count has served once the autoscaler changed the
/// count. (A `taskCount` of 1 is Druid's default and is read as none given, so a start count
/// left in place would win over it.)
fn set_task_count(spec: &mut serde_json::Value, n: u32) {
    let io = match spec.get("spec").and_then(|s| s.get("ioConfig")) {
        Some(_) => &mut spec["spec"]["ioConfig"],
        None => &mut spec["ioConfig"],
    };
    if let Some(o) = io.as_object_mut() {
        o.insert("taskCount".into(), n.into());
        if let Some(scaler) = o.get_mut("autoScalerConfig").and_then(|c| c.as_object_mut()) {
            scaler.remove("taskCountStart");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datasource::{load, submit};

    /// An embedded store (it checks DynamoDB's limits) in `dir` with Druid's tutorial spec
    /// submitted, and the spec.
    async fn submitted(dir: &tempfile::TempDir) -> (std::sync::Arc<dyn MetadataStore>, serde_json::Value) {
        let meta = sluice_store::metadata::open_metadata(&format!("file://{}", dir.path().display()))
            .await
            .expect("embedded store");
        let path = format!("{}/../../data/specs/wikipedia-kafka-supervisor.json", env!("CARGO_MANIFEST_DIR"));
        let spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("spec")).expect("JSON");
        submit(meta.as_ref(), spec.clone(), 0).await.expect("submit");
        (meta, spec)
    }

    #[tokio::test]
    async fn a_change_is_written_with_the_spec_it_read_and_lost_to_a_newer_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (meta, spec) = submitted(&dir).await;
        let meta = meta.as_ref();
        let config: AutoScalerConfig = serde_json::from_value(serde_json::json!({"enableTaskAutoScaler": true,
            "taskCountMin": 1, "taskCountMax": 4, "scaleActionStartDelayMillis": 0}))
        .expect("config");
        let (_, read) = load(meta, "wikipedia").await.expect("load");
        // The operator submits again after the pass read the spec: the decision is dropped.
        submit(meta, spec, 1).await.expect("resubmit");
        assert_eq!(autoscale(meta, "wikipedia", &config, read, 1, 9_000_000, 10).await.expect("runs"), None);
        let (item, version) = load(meta, "wikipedia").await.expect("load");
        assert!(item.spec["ioConfig"].get("taskCount").is_none(), "the operator's spec stands");
        // Against the spec it read, the change is written: the legacy form's top-level ioConfig.
        assert_eq!(autoscale(meta, "wikipedia", &config, version, 1, 9_000_000, 20).await.expect("runs"), Some(3));
        let (item, _) = load(meta, "wikipedia").await.expect("load");
        assert_eq!(item.spec["ioConfig"]["taskCount"], 3);
        // Down to one group, a taskCountStart of the spec would win over taskCount 1 (Druid's
        // default, read as none given): the autoscaler's change drops it.
        let mut started = item.spec.clone();
        started["ioConfig"]["taskCount"] = 1.into();
        started["ioConfig"]["autoScalerConfig"] = serde_json::json!({"enableTaskAutoScaler": true,
            "taskCountMin": 1, "taskCountMax": 4, "taskCountStart": 3});
        let mut scaled = started.clone();
        set_task_count(&mut scaled, 1);
        let resolved = |s: serde_json::Value| sluice_format::spec::load_spec_value(s).expect("spec").spec.io.task_count;
        assert_eq!((resolved(started), resolved(scaled)), (3, 1));
        let state = meta.get(&datasource_pk("wikipedia"), AUTOSCALER_SK).await.expect("get").expect("item");
        let state: AutoscalerItem = serde_json::from_value(state.body).expect("item");
        assert_eq!(state.changes.iter().map(|c| (c.from, c.to)).collect::<Vec<_>>(), [(1, 3)]);
        assert!(state.samples.is_empty(), "the samples a change was decided on are forgotten");
    }

    #[tokio::test]
    async fn the_item_stays_within_dynamodbs_limit_whatever_the_window_and_the_lag() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (meta, _) = submitted(&dir).await;
        let meta = meta.as_ref();
        let (_, version) = load(meta, "wikipedia").await.expect("load");
        // The largest window a spec may ask for (10,000 samples a second apart) and a lag of
        // every partition's records: one group, so no decision clears the samples.
        let config: AutoScalerConfig = serde_json::from_value(serde_json::json!({"enableTaskAutoScaler": true,
            "taskCountMin": 1, "taskCountMax": 1, "lagCollectionIntervalMillis": 1_000,
            "lagCollectionRangeMillis": 10_000_000, "scaleActionStartDelayMillis": 0}))
        .expect("config");
        config.check().expect("a valid config");
        // The item as an earlier release kept it: a sample every second so far, as many as the
        // store's item limit holds.
        let start = 1_796_600_400_000i64;
        let width = serde_json::to_string(&LagSample { at: start, lag: u64::MAX }).expect("JSON").len() + 1;
        let n = (sluice_store::metadata::MAX_ITEM_BYTES - 1_024) / width;
        let seeded = AutoscalerItem {
            started: start,
            samples: (0..n as i64).map(|k| LagSample { at: start + k * 1_000, lag: u64::MAX }).collect(),
            ..Default::default()
        };
        meta.put(Item::new(datasource_pk("wikipedia"), AUTOSCALER_SK, to_json(&seeded)), Condition::Absent)
            .await
            .expect("an item within the limit");
        // Passes a second apart go on sampling: every write stays within the item's bytes.
        for k in n as i64..n as i64 + 60 {
            let now = start + k * 1_000;
            let decided = autoscale(meta, "wikipedia", &config, version, 1, u64::MAX, now).await;
            assert_eq!(decided.expect("the autoscaler's write"), None, "pass at {now}");
        }
        let item = meta.get(&datasource_pk("wikipedia"), AUTOSCALER_SK).await.expect("get").expect("item");
        let bytes = item.body.to_string().len();
        assert!(bytes <= crate::layout::autoscaler::AUTOSCALER_ITEM_BYTES, "{bytes} bytes");
        let kept: AutoscalerItem = serde_json::from_value(item.body).expect("item");
        let now = start + (n as i64 + 59) * 1_000;
        assert!(kept.samples.last().is_some_and(|s| s.at >= now - 2_000), "the last passes sampled");
        assert!(kept.samples[0].at <= now - 8_000_000, "the samples still span the window: {:?}", kept.samples[0]);
    }

    #[test]
    fn the_dry_run_says_what_druids_example_decides_and_when() {
        let config: AutoScalerConfig = serde_json::from_value(serde_json::json!({"enableTaskAutoScaler": true,
            "taskCountMin": 2, "taskCountMax": 6}))
        .expect("config");
        let minute = 60_000;
        // Twenty samples, six at the out threshold: 0.3 of them, Druid's trigger.
        let mut lags = vec![2_000_000u64; 14];
        lags.extend([6_000_000; 6]);
        let now = 100 * minute;
        let sim = simulate(&config, None, Some(&lags), 2, 8, now);
        assert_eq!((sim.samples, sim.desired, sim.max_lag), (20, Some(4), 6_000_000));
        assert!((sim.fraction_out - 0.3).abs() < 1e-9 && sim.fraction_in == 0.0, "{sim:?}");
        assert_eq!(sim.next_decision_ms, now + 5 * minute, "no pass watched yet: the start delay from now");
        assert_eq!(simulate(&config, None, Some(&lags), 2, 3, now).desired, Some(3), "capped at 3 partitions");
        // The kept item: its samples, its last change a minute ago holds the next decision back.
        let item = AutoscalerItem {
            started: 0,
            samples: vec![LagSample { at: now - 1000, lag: 0 }],
            last_decision: Some(now - minute),
            changes: vec![ScaleChange { at: now - minute, from: 2, to: 4, samples: 20, max_lag: 6_000_000 }],
        };
        let kept = simulate(&config, Some(&item), None, 4, 8, now);
        assert_eq!((kept.samples, kept.desired, kept.latest_lag), (1, Some(3), Some(0)), "{kept:?}");
        assert_eq!(kept.next_decision_ms, now + 9 * minute, "ten minutes after the last change");
        assert_eq!(kept.changes, item.changes);
    }
}

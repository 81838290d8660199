//! A datasource's `stats` item: whether it is active or idle (`idleConfig`), read from the last
//! pass's item before the step invokes anything, and what the step saw, written after it.

use super::outcome::DatasourcePass;
use super::{StatsItem, SupervisorError};
use crate::item::{parse_body, to_json};
use crate::keys::{datasource_pk, STATS_SK};
use crate::task::{TaskItem, TaskState};
use sluice_store::metadata::{Condition, Item, MetadataStore};
use std::collections::BTreeMap;

/// When the datasource was last active, whether it is idle now (`idleConfig`), and whether the
/// last pass found it idle. Active at this pass: a high watermark moved since the last pass, a
/// record is not published yet, a task is not finished, or no pass said when before. Otherwise
/// as active as the last pass said.
pub(super) async fn activity(
    meta: &dyn MetadataStore,
    name: &str,
    spec: &sluice_format::spec::DatasourceSpec,
    pass: &DatasourcePass,
    tasks: &[(TaskItem, u64)],
    now_ms: i64,
) -> Result<(i64, bool, bool), SupervisorError> {
    let last: Option<StatsItem> = match meta.get(&datasource_pk(name), STATS_SK).await? {
        Some(item) => Some(parse_body(name, &item)?),
        None => None,
    };
    let unfinished = tasks.iter().any(|(t, _)| !matches!(t.state, TaskState::Published | TaskState::Failed));
    let still = last.as_ref().filter(|l| l.topic_high == pass.high && pass.caught_up && !unfinished);
    let active_ms = still.and_then(|l| l.active_ms).unwrap_or(now_ms);
    let idle = spec.io.idle.is_some_and(|c| c.idle(active_ms, now_ms));
    let was_idle = last.as_ref().is_some_and(|l| l.idle);
    if idle && !was_idle {
        tracing::info!(datasource = name, "no new record for inactiveAfterMillis: the supervisor is idle");
    }
    Ok((active_ms, idle, was_idle))
}

/// Writes the `stats` item of what the step saw.
pub(super) async fn write_stats(
    meta: &dyn MetadataStore,
    name: &str,
    pass: &DatasourcePass,
    tasks: &[(TaskItem, u64)],
    now_ms: i64,
) -> Result<(), SupervisorError> {
    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    for (t, _) in tasks {
        *by_state.entry(t.state.name().to_string()).or_default() += 1;
    }
    let mut errors: Vec<(i64, String)> = tasks
        .iter()
        .filter_map(|(t, _)| {
            t.error.as_ref().map(|e| (t.finished_ms.unwrap_or(t.created_ms), format!("task {}: {e}", t.id)))
        })
        .collect();
    errors.sort();
    let stats = StatsItem {
        updated_ms: now_ms,
        topic_high: pass.high.clone(),
        topic_committed: pass.committed.clone(),
        topic_lag: pass
            .high
            .iter()
            .map(|(t, highs)| {
                let committed = pass.committed.get(t);
                let lag = highs.iter().map(|(p, h)| (*p, h - committed.and_then(|c| c.get(p)).copied().unwrap_or(*h)));
                (t.clone(), lag.collect())
            })
            .collect(),
        topic_time_lag_ms: pass.time_lag_ms.clone(),
        tasks: by_state,
        recent_errors: pass
            .kafka_commit_error
            .iter()
            .map(|e| format!("commitOffsetsToKafka: {e}"))
            .chain(errors.into_iter().rev().map(|(_, e)| e))
            .take(10)
            .collect(),
        active_ms: Some(pass.active_ms),
        idle: pass.idle,
    };
    meta.put(Item::new(datasource_pk(name), STATS_SK, to_json(&stats)), Condition::None).await?;
    Ok(())
}

//! A supervisor's status as Druid reports it (`GET /druid/indexer/v1/supervisor/{id}/status`:
//! Druid's `SupervisorReport` with a Kafka `payload`), built from Sluice's status and task
//! items, so that monitors written for Druid (`payload.aggregateLag`, `healthy`,
//! `detailedState`, `activeTasks`) read it unchanged. Sluice's own status stays beside Druid's
//! fields, under `payload.sluice`.
//!
//! | Sluice | Druid `state` / `detailedState` | `healthy` |
//! | --- | --- | --- |
//! | running, no pass yet | `PENDING` | yes |
//! | running, task errors at the last pass | `UNHEALTHY_TASKS` | no |
//! | running, idle (`idleConfig`: no new record, nothing to publish) | `IDLE` | yes |
//! | running | `RUNNING` | yes |
//! | suspended | `SUSPENDED` | yes |
//! | terminated (Druid forgets such a supervisor; Sluice keeps it) | `SUSPENDED` / `TERMINATED` | yes |
//!
//! Tasks planned, running or stopped to be continued are `activeTasks`; tasks that read their
//! whole range and wait for the merger are `publishingTasks`. Sluice runs each task once
//! (`replicas` 1) and has no task end time to count down (`remainingSeconds` null).
//! Partitions are keyed `"0"`, or `"topic:0"` for a `topicPattern` spec, as Druid keys them.

use serde_json::{json, Map, Value};
use sluice_format::spec::DatasourceSpec;
use sluice_format::time::format_iso;
use sluice_pipeline::datasource::SupervisorState;
use sluice_pipeline::supervisor::Status;
use sluice_pipeline::task::{TaskItem, TaskState};
use std::collections::BTreeMap;

/// What Druid's report says about a supervisor's health.
struct Health {
    state: &'static str,
    detailed: &'static str,
    healthy: bool,
}

fn health(st: &Status) -> Health {
    let (state, detailed, healthy) = match st.state {
        SupervisorState::Suspended => ("SUSPENDED", "SUSPENDED", true),
        SupervisorState::Terminated => ("SUSPENDED", "TERMINATED", true),
        SupervisorState::Running if st.last_pass_ms.is_none() => ("PENDING", "PENDING", true),
        SupervisorState::Running if !st.recent_errors.is_empty() => ("UNHEALTHY_TASKS", "UNHEALTHY_TASKS", false),
        SupervisorState::Running if st.idle => ("IDLE", "IDLE", true),
        SupervisorState::Running => ("RUNNING", "RUNNING", true),
    };
    Health { state, detailed, healthy }
}

/// Druid's `SupervisorReport` for supervisor `id`: its status `st`, the task items of its
/// datasource, its resolved spec (none if it no longer resolves), at `now_ms`.
pub fn report(id: &str, st: &Status, tasks: &[TaskItem], spec: Option<&DatasourceSpec>, now_ms: i64) -> Value {
    let pattern = spec.is_some_and(|s| matches!(s.io.source, sluice_format::spec::TopicSource::Pattern(_)));
    let key = |topic: &str, p: i32| if pattern { format!("{topic}:{p}") } else { p.to_string() };
    let high: BTreeMap<String, i64> =
        st.partitions.iter().filter_map(|p| Some((key(&p.topic, p.partition), p.high?))).collect();
    let lag: BTreeMap<String, i64> =
        st.partitions.iter().filter_map(|p| Some((key(&p.topic, p.partition), p.lag?))).collect();
    let lag_ms: BTreeMap<String, i64> =
        st.partitions.iter().filter_map(|p| Some((key(&p.topic, p.partition), p.time_lag_ms?))).collect();
    let task = |t: &TaskItem, active: bool| -> Value {
        let offsets = |f: &dyn Fn(i32, i64) -> Option<i64>| -> Map<String, Value> {
            t.ranges
                .iter()
                .filter_map(|r| Some((key(&t.topic, r.partition), json!(f(r.partition, r.start)?))))
                .collect()
        };
        let current = |p: i32, start: i64| Some(t.positions.get(&p).copied().unwrap_or(start));
        let mut out = json!({
            "id": t.id.to_string(),
            "startingOffsets": offsets(&|_, start| Some(start)),
            "startTime": t.started_ms.map(format_iso),
            "remainingSeconds": null,
            "type": if active { "ACTIVE" } else { "PUBLISHING" },
            "currentOffsets": offsets(&current),
        });
        if active {
            out["lag"] = json!(offsets(&|p, start| {
                let h = *high.get(&key(&t.topic, p))?;
                Some(h - current(p, start)?)
            }));
        }
        out
    };
    let active: Vec<Value> = tasks
        .iter()
        .filter(|t| matches!(t.state, TaskState::Planned | TaskState::Running | TaskState::Incomplete))
        .map(|t| task(t, true))
        .collect();
    let publishing: Vec<Value> =
        tasks.iter().filter(|t| t.state == TaskState::Complete).map(|t| task(t, false)).collect();
    let h = health(st);
    let errors_at = st.last_pass_ms.map(format_iso);
    let recent_errors: Vec<Value> = st
        .recent_errors
        .iter()
        .map(|e| json!({"timestamp": errors_at, "exceptionClass": "TaskError", "message": e, "streamException": false}))
        .collect();
    let mut payload = json!({
        "id": id,
        "dataSource": st.datasource,
        "stream": spec.map(|s| s.io.source.text().to_string()),
        "partitions": st.partitions.len(),
        "replicas": 1,
        "durationSeconds": spec.and_then(|s| s.io.task_duration.fixed_millis()).map(|ms| ms / 1000),
        "activeTasks": active,
        "publishingTasks": publishing,
        "latestOffsets": high,
        "minimumLag": lag,
        "aggregateLag": lag.values().map(|l| (*l).max(0)).sum::<i64>(),
        "minimumLagMillis": lag_ms,
        "aggregateLagMillis": lag_ms.values().map(|l| (*l).max(0)).sum::<i64>(),
        "offsetsLastUpdated": st.last_pass_ms.map(format_iso),
        "suspended": st.state != SupervisorState::Running,
        "healthy": h.healthy,
        "state": h.state,
        "detailedState": h.detailed,
        "recentErrors": recent_errors,
        "sluice": st,
    });
    if let Some(fields) = payload.as_object_mut() {
        fields.retain(|_, v| !v.is_null());
    }
    json!({"id": id, "generationTime": format_iso(now_ms), "payload": payload})
}

/// Druid's `/supervisor/{id}/health` answer for `st`: whether it is healthy, as its report says.
pub fn healthy(st: &Status) -> bool {
    health(st).healthy
}

/// One item of Druid's supervisor list with `?state=true` (`?full` adds `spec`).
pub fn list_item(id: &str, st: &Status) -> Value {
    let h = health(st);
    json!({
        "id": id,
        "dataSource": st.datasource,
        "state": h.state,
        "detailedState": h.detailed,
        "healthy": h.healthy,
        "suspended": st.state != SupervisorState::Running,
    })
}

/// Supervisor `id`'s row of `sys.supervisors`, from its status and its stored spec (`spec`:
/// as submitted; redacted here).
pub fn row(id: &str, st: &Status, spec: &Value) -> sluice_sql::SupervisorRow {
    let h = health(st);
    let source = sluice_format::spec::load_spec_value(spec.clone())
        .map(|l| l.spec.io.source.text().to_string())
        .unwrap_or_default();
    sluice_sql::SupervisorRow {
        id: id.to_string(),
        state: h.state.to_string(),
        detailed_state: h.detailed.to_string(),
        healthy: h.healthy,
        source,
        suspended: st.state != SupervisorState::Running,
        spec: sluice_format::spec::redacted_spec(spec).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::meters::MeterTotals;
    use sluice_format::offsets::OffsetRange;
    use sluice_format::window::MessageWindow;
    use sluice_pipeline::supervisor::PartitionStatus;
    use sluice_pipeline::task::TaskId;

    fn status(state: SupervisorState, errors: &[&str], last_pass_ms: Option<i64>) -> Status {
        let partition = |partition: i32, committed: i64, high: i64| PartitionStatus {
            topic: "edits".into(),
            partition,
            committed: Some(committed),
            high: Some(high),
            lag: Some(high - committed),
            time_lag_ms: Some(if high > committed { 90_000 } else { 0 }),
            queryable: None,
        };
        Status {
            datasource: "wiki".into(),
            state,
            partitions: vec![partition(0, 10, 25), partition(1, 7, 7)],
            tasks: BTreeMap::new(),
            recent_errors: errors.iter().map(|e| e.to_string()).collect(),
            totals: MeterTotals::default(),
            last_pass_ms,
            task_count: Some(1),
            grouping_change: None,
            idle: false,
            autoscaler: None,
        }
    }

    fn task(seq: u64, state: TaskState, position: i64) -> TaskItem {
        let id = TaskId { datasource: "wiki".into(), group: 0, seq };
        let range = OffsetRange { partition: 0, start: 10, end: 25 };
        let mut t = TaskItem::planned(id, json!({}), "edits", vec![range], MessageWindow::default(), 0);
        t.state = state;
        t.positions.insert(0, position);
        t
    }

    #[test]
    fn payload_has_druids_fields_and_sluices_beside_them() {
        let st = status(SupervisorState::Running, &[], Some(1_700_000_000_000));
        let tasks =
            [task(1, TaskState::Running, 14), task(0, TaskState::Complete, 10), task(2, TaskState::Published, 25)];
        let r = report("wiki", &st, &tasks, None, 1_700_000_001_000);
        assert_eq!(r["id"], "wiki");
        assert_eq!(r["generationTime"], "2023-11-14T22:13:21.000Z", "{r}");
        let p = &r["payload"];
        assert_eq!(
            (&p["state"], &p["detailedState"], &p["healthy"]),
            (&json!("RUNNING"), &json!("RUNNING"), &json!(true))
        );
        assert_eq!(p["latestOffsets"], json!({"0": 25, "1": 7}), "{p}");
        assert_eq!(p["minimumLag"], json!({"0": 15, "1": 0}), "{p}");
        assert_eq!(p["aggregateLag"], 15, "{p}");
        assert_eq!(p["minimumLagMillis"], json!({"0": 90_000, "1": 0}), "{p}");
        assert_eq!(p["aggregateLagMillis"], 90_000, "{p}");
        assert_eq!(p["partitions"], 2);
        assert_eq!(p["suspended"], false);
        assert_eq!(p["activeTasks"].as_array().map(Vec::len), Some(1), "{p}");
        let active = &p["activeTasks"][0];
        assert_eq!(active["type"], "ACTIVE");
        assert_eq!((&active["startingOffsets"], &active["currentOffsets"]), (&json!({"0": 10}), &json!({"0": 14})));
        assert_eq!(active["lag"], json!({"0": 11}), "{active}");
        let publishing = &p["publishingTasks"];
        assert_eq!(publishing.as_array().map(Vec::len), Some(1), "{p}");
        assert_eq!(publishing[0]["type"], "PUBLISHING");
        assert!(publishing[0].get("lag").is_none(), "{publishing}");
        assert_eq!(p["sluice"]["state"], "running", "{p}");
        assert!(p.get("stream").is_none() && p.get("durationSeconds").is_none(), "no spec, no stream: {p}");
    }

    #[test]
    fn states_map_to_druids() {
        let cases = [
            (SupervisorState::Running, &["task failed"][..], Some(1), "UNHEALTHY_TASKS", "UNHEALTHY_TASKS", false),
            (SupervisorState::Running, &[][..], None, "PENDING", "PENDING", true),
            (SupervisorState::Suspended, &["task failed"][..], Some(1), "SUSPENDED", "SUSPENDED", true),
            (SupervisorState::Terminated, &[][..], Some(1), "SUSPENDED", "TERMINATED", true),
        ];
        for (state, errors, pass, want, detailed, well) in cases {
            let st = status(state, errors, pass);
            let item = list_item("wiki", &st);
            assert_eq!((&item["state"], &item["detailedState"]), (&json!(want), &json!(detailed)), "{item}");
            assert_eq!((item["healthy"].as_bool(), healthy(&st)), (Some(well), well), "{item}");
            assert_eq!(item["suspended"], state != SupervisorState::Running);
            let p = &report("wiki", &st, &[], None, 0)["payload"];
            assert_eq!(p["recentErrors"].as_array().map(Vec::len), Some(errors.len()), "{p}");
        }
        let idle = Status { idle: true, ..status(SupervisorState::Running, &[], Some(1)) };
        assert_eq!(list_item("wiki", &idle)["state"], "IDLE");
        assert!(healthy(&idle), "an idle supervisor is healthy");
        let suspended = Status { idle: true, ..status(SupervisorState::Suspended, &[], Some(1)) };
        assert_eq!(list_item("wiki", &suspended)["state"], "SUSPENDED", "suspended wins over idle");
    }
}

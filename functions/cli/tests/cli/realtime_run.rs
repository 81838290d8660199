//! `sluice run --until-caught-up` on a real-time datasource: it returns once every record is
//! queryable (checkpointed by the open task), not after `idleAfter` when the task would close;
//! the next run takes the open task over and goes on from its checkpoints, every record once.

use sluice_integration::indexing::{json_record, spec};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::task::{TaskItem, TaskState};
use sluice_store::metadata::open_metadata;

use crate::command::sluice;
use std::path::Path;
use std::time::{Duration, Instant};

fn count(dir: &Path, name: &str) -> u64 {
    let query = serde_json::json!({
        "queryType": "timeseries", "dataSource": name, "granularity": "all",
        "intervals": ["2000-01-01/2100-01-01"], "aggregations": [{"type": "count", "name": "rows"}]
    });
    let (ok, out, err) = sluice(dir, &["query", "-", "--compact"], Some(&query.to_string()));
    assert!(ok, "{out}{err}");
    let answer: serde_json::Value = serde_json::from_str(&out).expect("query JSON");
    answer[0]["result"]["rows"].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn until_caught_up_returns_once_records_are_queryable_and_the_next_run_resumes() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "rt-run", 2).await;
    let batch = |from: usize, to: usize| -> Vec<(i32, Vec<u8>)> {
        (from..to).map(|n| ((n % 2) as i32, json_record(&format!("r{n}"), n))).collect()
    };
    produce(&bootstrap, &topic, &batch(0, 500)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let name = unique("rtrun");
    let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), serde_json::json!({}));
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    spec["spec"]["sluiceConfig"] = serde_json::json!({"realtime": {"checkpointPeriod": "PT1S", "idleAfter": "PT10M"}});
    std::fs::write(dir.path().join("spec.json"), spec.to_string()).expect("spec file");
    let (ok, out, err) = sluice(dir.path(), &["supervisor", "submit", "spec.json"], None);
    assert!(ok, "{out}{err}");

    let run = ["run", "--until-caught-up", "--interval", "60", "--datasource", &name];
    let started = Instant::now();
    let (ok, out, err) = sluice(dir.path(), &run, None);
    assert!(ok && err.contains("caught up"), "{out}{err}");
    // idleAfter is ten minutes and the pass interval one: a run that waited for the task to
    // close, or for the next pass, would take that long.
    assert!(started.elapsed() < Duration::from_secs(60), "returned only after {:?}", started.elapsed());
    assert_eq!(count(dir.path(), &name), 500, "every record queryable once, from checkpoints");
    let meta = open_metadata(&format!("file://{}/.sluice/metadata", dir.path().display())).await.expect("metadata");
    let tasks: Vec<TaskItem> = sluice_pipeline::task::tasks(meta.as_ref(), &name).await.expect("tasks");
    let open: Vec<&TaskItem> = tasks.iter().filter(|t| t.is_open() && t.state == TaskState::Running).collect();
    assert_eq!(open.len(), 1, "the open task is left running: {tasks:?}");

    eprintln!("first run: {:?}", started.elapsed());
    produce(&bootstrap, &topic, &batch(500, 800)).await;
    let again = Instant::now();
    let (ok, out, err) = sluice(dir.path(), &run, None);
    assert!(ok && err.contains("caught up"), "{out}{err}");
    eprintln!("second run: {:?}", again.elapsed());
    assert_eq!(count(dir.path(), &name), 800, "the next run took the open task over and read on");
}

//! `sluice run` killed with SIGKILL in the middle of a task, then started again with the
//! deployed supervisor period (60 s): the dead attempt's lease lapses within one lease (its
//! heartbeats stop), the new process takes the task over and catches up within a minute, with
//! every record once.

use sluice_integration::indexing::{json_record, spec};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::task::{TaskItem, TaskState};
use sluice_store::metadata::open_metadata;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RECORDS: usize = 30_000;

fn sluice(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
    command.args(args).current_dir(dir).env_remove("SLUICE_METADATA").env_remove("SLUICE_STORAGE");
    command
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_run_is_taken_over_within_a_minute() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "run-kill", 1).await;
    let records: Vec<(i32, Vec<u8>)> = (0..RECORDS).map(|n| (0, json_record(&format!("k{n}"), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let name = unique("runkill");
    // Small persists make the task take a few seconds, so the kill lands in the middle of it,
    // and a checkpoint every three (the rest spilled) gives it checkpoints to resume from.
    let tuning = serde_json::json!({"maxRowsInMemory": 100, "maxTotalRows": 300});
    let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), tuning);
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    std::fs::write(dir.path().join("spec.json"), spec.to_string()).expect("spec file");
    let out = sluice(dir.path(), &["supervisor", "submit", "spec.json"]).output().expect("submit");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let mut run = sluice(dir.path(), &["run", "--interval", "60", "--datasource", &name])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sluice run");
    let meta = open_metadata(&format!("file://{}/.sluice/metadata", dir.path().display())).await.expect("metadata");
    let deadline = Instant::now() + Duration::from_secs(60);
    let running = loop {
        assert!(Instant::now() < deadline, "no task ran with a checkpoint within a minute");
        let tasks: Vec<TaskItem> = sluice_pipeline::task::tasks(meta.as_ref(), &name).await.expect("tasks");
        if let Some(t) = tasks.into_iter().find(|t| t.state == TaskState::Running && t.num_checkpoints >= 2) {
            break t;
        }
        assert!(run.try_wait().expect("poll").is_none(), "sluice run exited");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    run.kill().expect("SIGKILL");
    run.wait().expect("reap");

    let restarted = Instant::now();
    let out = sluice(dir.path(), &["run", "--until-caught-up", "--interval", "60", "--datasource", &name])
        .output()
        .expect("run again");
    let took = restarted.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains("caught up"), "{stderr}");
    assert!(took < Duration::from_secs(60), "caught up only after {took:?}: {stderr}");

    let task: TaskItem = serde_json::from_value(
        meta.get(&running.id.pk(), &running.id.sk()).await.expect("get").expect("the killed task").body,
    )
    .expect("task body");
    assert!(task.attempt > running.attempt, "another attempt took the killed task over: {task:?}");
    let out = sluice(dir.path(), &["segments", &name, "--json"]).output().expect("segments");
    let segments: serde_json::Value = serde_json::from_slice(&out.stdout).expect("segments JSON");
    let rows: u64 = segments.as_array().expect("list").iter().map(|s| s["numRows"].as_u64().unwrap_or(0)).sum();
    assert_eq!(rows, RECORDS as u64, "every record once");
}

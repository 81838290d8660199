//! `sluice task submit | status` on the embedded backends: Druid's batch tutorial spec into the
//! Kafka tutorial's datasource, run in the process, then its status; a task into a datasource
//! without a supervisor spec is refused naming what to do.

use super::command::sluice;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

#[test]
fn the_batch_tutorial_is_submitted_run_and_shown() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut spec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{ROOT}/data/specs/wikipedia-index-parallel.json")).expect("spec"),
    )
    .expect("JSON");
    spec["spec"]["ioConfig"]["inputSource"]["baseDir"] = format!("{ROOT}/data").into();
    std::fs::write(dir.path().join("batch.json"), spec.to_string()).expect("spec file");
    let (ok, _, err) = sluice(dir.path(), &["task", "submit", "batch.json"], None);
    assert!(!ok && err.contains("does not exist") && err.contains("supervisor"), "{err}");

    let supervisor = format!("{ROOT}/data/specs/wikipedia-kafka-supervisor.json");
    let (ok, _, err) = sluice(dir.path(), &["supervisor", "submit", &supervisor], None);
    assert!(ok, "{err}");
    let (ok, out, err) = sluice(dir.path(), &["task", "submit", "batch.json", "--json"], None);
    assert!(ok, "{out}{err}");
    let done: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (done["state"].as_str(), done["rowStats"]["processed"].as_u64()),
        (Some("published"), Some(39_232)),
        "{done}"
    );
    assert_eq!(done["rowStats"]["thrownAway"], 12, "the rows off the tutorial's interval: {done}");
    let id = done["task"].as_str().expect("id");
    let (ok, out, err) = sluice(dir.path(), &["task", "status", id], None);
    assert!(ok && out.contains("SUCCESS") && out.contains("39232 processed"), "{out}{err}");
    let (ok, out, _) = sluice(dir.path(), &["sql", "SELECT COUNT(*) AS n FROM wikipedia"], None);
    assert!(ok && out.contains("39232"), "{out}");
    let (ok, _, err) = sluice(dir.path(), &["task", "status", "nobody"], None);
    assert!(!ok && err.contains("no batch task"), "{err}");
}

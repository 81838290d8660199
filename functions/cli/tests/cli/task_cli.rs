//! `sluice task submit | status` on the embedded backends: Druid's batch tutorial spec into the
//! Kafka tutorial's datasource, run in the process, then its status; a task into a datasource
//! without a supervisor spec is refused naming what to do, one reading the command's own stores
//! as input too.

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

/// The command's own stores are never batch input, whichever they are: the default
/// `./.sluice/metadata` (whose SQLite holds every spec as submitted) and `./.sluice/storage`, or
/// those `--storage` and `--metadata` name; a `baseDir` walk passes over them.
#[test]
fn the_commands_own_stores_are_no_batch_input() {
    let dir = tempfile::tempdir().expect("temp dir");
    let specs = tempfile::tempdir().expect("spec dir");
    let supervisor = format!("{ROOT}/data/specs/wikipedia-kafka-supervisor.json");
    let (ok, _, err) = sluice(dir.path(), &["supervisor", "submit", &supervisor], None);
    assert!(ok, "{err}");
    let rows = "{\"time\": \"2015-09-12T00:00:00Z\", \"page\": \"a\"}\n{\"time\": \"2015-09-12T01:00:00Z\", \"page\": \"b\"}\n";
    std::fs::write(dir.path().join("rows.json"), rows).expect("rows");
    let submit = |name: &str, input: serde_json::Value, extra: &[&str]| {
        let mut spec: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{ROOT}/data/specs/wikipedia-index-parallel.json")).expect("spec"),
        )
        .expect("JSON");
        spec["spec"]["ioConfig"]["inputSource"] = input;
        let file = specs.path().join(name);
        std::fs::write(&file, spec.to_string()).expect("spec file");
        let mut args = vec!["task", "submit", file.to_str().expect("path"), "--json"];
        args.extend(extra);
        sluice(dir.path(), &args, None)
    };
    let metadata: Vec<String> = std::fs::read_dir(dir.path().join(".sluice/metadata"))
        .expect("the default metadata folder")
        .map(|e| e.expect("entry").path().display().to_string())
        .collect();
    assert!(!metadata.is_empty());
    for file in &metadata {
        let (ok, out, err) = submit("metadata.json", serde_json::json!({"type": "local", "files": [file]}), &[]);
        assert!(!ok && err.contains("own metadata is not batch input"), "{file}: {out}{err}");
    }
    let (ok, out, err) = submit(
        "metadata-dir.json",
        serde_json::json!({"type": "local", "baseDir": ".sluice/metadata", "filter": "*"}),
        &[],
    );
    assert!(!ok && err.contains("own metadata"), "{out}{err}");

    // Deep storage named by --storage, beside the default metadata.
    let storage = dir.path().join("elsewhere");
    std::fs::create_dir(&storage).expect("storage");
    std::fs::write(storage.join("x.json"), rows).expect("an object of deep storage");
    let flag = format!("--storage=file://{}", storage.display());
    let (ok, out, err) = submit(
        "storage.json",
        serde_json::json!({"type": "local", "files": [storage.join("x.json").display().to_string()]}),
        &[&flag],
    );
    assert!(!ok && err.contains("own deep storage is not batch input"), "{out}{err}");

    // The working directory whole: its rows, not the stores under .sluice.
    std::fs::remove_dir_all(&storage).expect("remove");
    let (ok, out, err) = submit("cwd.json", serde_json::json!({"type": "local", "baseDir": ".", "filter": "*"}), &[]);
    assert!(ok, "{out}{err}");
    let done: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (done["state"].as_str(), done["rowStats"]["processed"].as_u64()),
        (Some("published"), Some(2)),
        "{done}"
    );
    assert_eq!(done["rowStats"]["unparseable"], 0, "{done}");
}

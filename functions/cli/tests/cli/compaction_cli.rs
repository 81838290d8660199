//! `sluice compaction submit | status | remove` on the embedded backends.

use super::command::sluice;

#[test]
fn compaction_configs_are_submitted_shown_and_removed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = serde_json::json!({"dataSource": "wiki", "skipOffsetFromLatest": "PT2H", "taskPriority": 5,
        "granularitySpec": {"segmentGranularity": "DAY", "rollup": true}});
    std::fs::write(dir.path().join("compaction.json"), config.to_string()).expect("config file");
    let (ok, out, err) = sluice(dir.path(), &["compaction", "submit", "compaction.json"], None);
    assert!(ok && out.contains("wiki: compaction config stored"), "{out}{err}");
    assert!(err.contains("warning: taskPriority"), "ignored options are named: {err}");

    let (ok, out, err) = sluice(dir.path(), &["compaction", "status", "wiki"], None);
    assert!(ok, "{err}");
    let shown: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!((&shown["skipOffsetFromLatest"], &shown["taskPriority"]), (&"PT2H".into(), &5.into()), "{shown}");

    let (ok, out, err) = sluice(dir.path(), &["compaction", "plan", "wiki"], None);
    assert!(ok && out.starts_with("chunk") && out.lines().count() == 1, "no segments, no chunk: {out}{err}");
    let (ok, _, err) = sluice(dir.path(), &["compaction", "plan", "nobody"], None);
    assert!(!ok && err.contains("has no compaction config"), "{err}");

    let other = r#"{"dataSource": "edits"}"#;
    let (ok, _, err) = sluice(dir.path(), &["compaction", "submit", "-"], Some(other));
    assert!(ok, "a config from standard input: {err}");
    let (ok, out, _) = sluice(dir.path(), &["compaction", "status"], None);
    let all: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let names: Vec<&str> =
        all["compactionConfigs"].as_array().expect("list").iter().filter_map(|c| c["dataSource"].as_str()).collect();
    assert!(ok && names == ["edits", "wiki"], "{all}");

    let (ok, _, err) =
        sluice(dir.path(), &["compaction", "submit", "-"], Some(r#"{"dataSource": "wiki", "maxRowsPerSegment": 0}"#));
    assert!(!ok && err.contains("compaction config of datasource \"wiki\""), "{err}");
    let (ok, out, err) = sluice(dir.path(), &["compaction", "remove", "wiki"], None);
    assert!(ok && out.contains("wiki: compaction config removed"), "{err}");
    let (ok, _, err) = sluice(dir.path(), &["compaction", "status", "wiki"], None);
    assert!(!ok && err.contains("has no compaction config"), "{err}");
    let (ok, _, err) = sluice(dir.path(), &["compaction", "remove", "wiki"], None);
    assert!(!ok && err.contains("has no compaction config"), "{err}");
}

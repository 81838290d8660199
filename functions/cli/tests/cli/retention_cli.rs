//! `sluice retention set | show` on the embedded backends.

use super::command::sluice;

#[test]
fn retention_rules_are_set_and_shown() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rules = r#"[{"type": "dropBeforeByPeriod", "period": "P30D"}, {"type": "loadForever", "tieredReplicants": {"hot": 1}}]"#;
    let (ok, out, err) = sluice(dir.path(), &["retention", "set", "wiki", "-"], Some(rules));
    assert!(ok && out.contains("wiki: 2 retention rules stored"), "{out}{err}");
    assert!(err.contains("warning: [1].tieredReplicants"), "{err}");
    let (ok, out, _) = sluice(dir.path(), &["retention", "show", "wiki"], None);
    let shown: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(ok && shown[0]["period"] == "P30D", "{shown}");
    let (ok, out, _) = sluice(dir.path(), &["retention", "show"], None);
    let all: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert!(ok && all["wiki"].is_array(), "{all}");
    let (ok, _, err) = sluice(dir.path(), &["retention", "set", "wiki", "-"], Some(r#"{"type": "dropForever"}"#));
    assert!(!ok && err.contains("expected a JSON array of rules"), "{err}");
    let (ok, _, err) = sluice(dir.path(), &["retention", "set", "bad/name", "-"], Some("[]"));
    assert!(!ok && err.contains("must not contain '/'"), "{err}");
}

//! `sluice demo` on a fresh folder with nothing running, then `sluice query` on what it
//! published: Druid's answers, a clean second run, and a damaged segment named in the error.

use serde_json::Value;
use std::path::Path;

use crate::command::sluice;

fn demo_backends(dir: &Path) -> Vec<String> {
    let root = dir.join(".sluice/demo").canonicalize().expect("demo folder");
    vec![
        "--metadata".into(),
        format!("file://{}/metadata", root.display()),
        "--storage".into(),
        format!("file://{}/storage", root.display()),
    ]
}

fn query(dir: &Path, text: &str) -> (bool, String, String) {
    let mut args = demo_backends(dir);
    args.extend(["query".into(), "-".into(), "--compact".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sluice(dir, &args, Some(text))
}

#[test]
fn demo_publishes_the_sample_and_answers_the_tutorial_queries() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (ok, out, err) = sluice(dir.path(), &["demo"], None);
    assert!(ok, "{out}{err}");
    assert!(out.contains("produced 39244 records"), "{out}");
    assert!(out.contains("8 tasks") && out.contains("39244 rows"), "{out}");
    assert!(out.lines().any(|l| l.contains("compacted:") && l.ends_with("; 13 visible segments")), "one a day: {out}");
    assert!(out.lines().any(|l| l.contains("Wikipedia:Vandalismusmeldung") && l.contains(" 33 ")), "{out}");
    assert!(out.lines().any(|l| l.contains("2015-09-12T13:00:00.000Z") && l.contains(" 30520 ")), "{out}");
    assert!(dir.path().join(".sluice/demo/storage").is_dir(), "everything under ./.sluice/demo");

    // A second run starts clean: the same rows, not twice as many.
    let (ok, out, err) = sluice(dir.path(), &["demo", "--json"], None);
    assert!(ok, "{out}{err}");
    assert!(out.contains("39244 rows") && out.contains("; 13 visible segments"), "{out}");

    // `sluice query` on the demo's stores: the tutorial's topN, from a file.
    let top =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/queries/wikipedia-top-pages.json"))
            .expect("query file");
    let (ok, out, err) = query(dir.path(), &top);
    assert!(ok, "{err}");
    let result: Value = serde_json::from_str(&out).expect("JSON result");
    assert_eq!(result[0]["result"][0]["page"], "Wikipedia:Vandalismusmeldung");
    assert_eq!(result[0]["result"][0]["count"], 33);
    assert!(dir.path().join(".sluice/cache").is_dir(), "segments cached locally");

    // Bad queries: the field and the expected form; unknown datasource: Druid's empty answer.
    let (ok, _, err) = query(dir.path(), r#"{"queryType":"topN","dataSource":"wikipedia","intervals":["2015/2016"]}"#);
    assert!(!ok && err.contains("topN query") && err.contains("missing field"), "{err}");
    let (ok, out, err) =
        query(dir.path(), r#"{"queryType":"timeseries","dataSource":"nope","intervals":["2015/2016"]}"#);
    assert!(ok && out.trim() == "[]", "{out}{err}");

    // `sluice compact` with no grace: nothing left to compact; the segments the demo's
    // compaction replaced leave deep storage, the day's compacted one stays.
    let storage = dir.path().join(".sluice/demo/storage");
    let mut before = Vec::new();
    find_files(&storage, "segments/wikipedia/", &mut before);
    let mut args = demo_backends(dir.path());
    args.extend(["compact".into(), "--grace".into(), "0".into()]);
    let (ok, out, err) = sluice(dir.path(), &args.iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert!(
        ok && out.starts_with("wikipedia: 0 chunks compacted") && out.contains("1 replaces cleaned up"),
        "{out}{err}"
    );
    let mut after = Vec::new();
    find_files(&storage, "segments/wikipedia/", &mut after);
    assert_eq!((before.len(), after.len()), (21, 13), "20 published, 1 compacted, 8 replaced: {after:?}");

    // A segment damaged in deep storage: the query fails naming it, no partial answer.
    // The day's visible segment: the compaction's, of the newest version (the ones it replaced
    // stay in deep storage for the grace period).
    let mut days = Vec::new();
    find_files(&storage, "segments/wikipedia/2015-09-12T", &mut days);
    let segment = days.into_iter().max().expect("the day's segment file");
    let mut bytes = std::fs::read(&segment).expect("segment bytes");
    // One byte in the middle of the `page` column's ids (the header is 20 bytes, then the
    // JSON directory, then the parts; docs/segment-format.md).
    let dir_len = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
    let directory: Value = serde_json::from_slice(&bytes[20..20 + dir_len]).expect("directory");
    let page = directory["columns"].as_array().expect("columns").iter().find(|c| c["name"] == "page").expect("page");
    let part = &page["parts"]["ids"];
    let at = 20
        + dir_len
        + (part["offset"].as_u64().expect("offset") + part["length"].as_u64().expect("length") / 2) as usize;
    bytes[at] ^= 0x5a;
    std::fs::write(&segment, bytes).expect("damage it");
    std::fs::remove_dir_all(dir.path().join(".sluice/cache")).expect("drop the cache");
    let (ok, out, err) = query(dir.path(), &top);
    let key = segment.strip_prefix(&storage).expect("key").display().to_string();
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.contains(&key) && err.contains("checksum"), "{key}: {err}");
}

fn find_files(dir: &Path, containing: &str, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            find_files(&path, containing, out);
        } else if path.to_string_lossy().contains(containing) {
            out.push(path);
        }
    }
}

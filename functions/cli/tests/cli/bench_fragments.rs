//! `sluice bench fragments` runs end to end on a small day: the compaction pass leaves the
//! target number of segments, both layouts answer alike (the command fails otherwise), and
//! `--out` writes the figures `bench cost` reads; the timings are measured, not tested.

use super::command::sluice;

#[test]
fn both_layouts_answer_alike() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = ["bench", "fragments", "--rows", "3000", "--per-chunk", "60", "--repeat", "1", "--out", "c.json"];
    let (ok, out, err) = sluice(dir.path(), &args, None);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("3000 rows of one day: 60 segments as a stream leaves them; compaction left 1 (target"),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.ends_with('x')).count(), 6, "a line per benchmark query: {out}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("c.json")).expect("--out")).expect("JSON");
    assert_eq!((run["segmentsBefore"].as_u64(), run["segmentsAfter"].as_u64()), (Some(60), Some(1)), "{run}");
    assert_eq!(run["rowsMerged"], 3000, "{run}");
    assert_eq!(run["meters"]["s3_gets"], 60, "each segment read once: {run}");
}

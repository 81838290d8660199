//! `sluice bench fragments` runs end to end on a small day and both layouts answer alike (the
//! command fails otherwise); its figures are measured, not tested.

use super::command::sluice;

#[test]
fn both_layouts_answer_alike() {
    let dir = tempfile::tempdir().expect("temp dir");
    let args = ["bench", "fragments", "--rows", "3000", "--per-chunk", "60", "--repeat", "1"];
    let (ok, out, err) = sluice(dir.path(), &args, None);
    assert!(ok, "{err}");
    assert!(out.starts_with("3000 rows of one day; 60 segments as a stream leaves them, 1 as compaction"), "{out}");
    assert_eq!(out.lines().filter(|l| l.ends_with('x')).count(), 5, "a line per query: {out}");
}

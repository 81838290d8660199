//! kill -9 of indexer processes at random points: every round restarts the task until it is
//! complete, and the hydrants its checkpoints name, merged, hold every record of the range
//! exactly once, though killed attempts lose what they had spilled to local disk (tansu as the
//! broker, local files and the embedded metadata store).

use sluice_integration::indexing::{json_record, merged_values, plan, spec};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::required_env;
use sluice_kafka::OffsetRange;
use sluice_pipeline::task::TaskId;
use sluice_store::metadata::open_metadata;
use sluice_store::storage::open_store;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 20;
const PER_PARTITION: usize = 2000;
const LEASE_MS: u64 = 300;

struct Xorshift(u64);

impl Xorshift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Runs attempts of `id` until one completes; the first `kills` attempts are killed after a
/// random time from process start: between two fifths and nineteen twentieths of `window` for
/// the first attempt (so that most kills land after a checkpoint, some before the first), between
/// a fifth and four fifths for the next. An attempt that resumes from checkpoints has less to do and may complete before its kill
/// time. Returns the number of attempts that were killed and how long the one that completed ran.
fn run_until_complete(
    urls: &[String; 2],
    tmp: &std::path::Path,
    id: &TaskId,
    kills: usize,
    window: Duration,
    rng: &mut Xorshift,
) -> (usize, Duration) {
    let mut killed = 0;
    for attempt in 0..200 {
        let spawned = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_indexer_attempt"))
            .args([
                &urls[0],
                &urls[1],
                &id.datasource,
                &id.group.to_string(),
                &id.seq.to_string(),
                &LEASE_MS.to_string(),
            ])
            .env("TMPDIR", tmp)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start an attempt");
        if attempt < kills {
            let twentieth = window.as_micros() as u64 / 20;
            let (from, to) =
                if attempt == 0 { (8 * twentieth, 19 * twentieth) } else { (4 * twentieth, 16 * twentieth) };
            std::thread::sleep(Duration::from_micros(from + rng.below(to - from)));
            if child.try_wait().expect("poll").is_none() {
                child.kill().expect("SIGKILL");
                child.wait().expect("reap");
                killed += 1;
                continue;
            }
        }
        let out = child.wait_with_output().expect("attempt output");
        assert!(out.status.success(), "attempt failed: {}", String::from_utf8_lossy(&out.stderr));
        match String::from_utf8_lossy(&out.stdout).trim() {
            "complete" => return (killed, spawned.elapsed()),
            // A killed attempt's lease is still live: wait for it to expire.
            "busy" => std::thread::sleep(Duration::from_millis(LEASE_MS / 2)),
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    panic!("task {id} never completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_indexers_leave_every_record_exactly_once() {
    let bootstrap = required_env("SLUICE_KAFKA");
    let topic = create_topic(&bootstrap, "task-kill", 3).await;
    let records: Vec<(i32, Vec<u8>)> =
        (0..3 * PER_PARTITION).map(|n| ((n % 3) as i32, json_record(&format!("k{n}"), n))).collect();
    produce(&bootstrap, &topic, &records).await;
    let mut expected: Vec<String> = (0..3 * PER_PARTITION).map(|n| format!("k{n}")).collect();
    expected.sort();
    let dir = tempfile::tempdir().expect("temp dir");
    let urls = [format!("file://{}/meta", dir.path().display()), format!("file://{}/store", dir.path().display())];
    let meta = open_metadata(&urls[0]).await.expect("metadata");
    let store = open_store(&urls[1]).await.expect("store");
    // A persist every 40 rows, spilled to local disk; a checkpoint every 120 rows (two persists
    // spilled, the third checkpointed with them), from early in an attempt on.
    let tuning = serde_json::json!({"maxRowsInMemory": 40, "maxTotalRows": 120});
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("attempts' temporary directory");
    let ranges: Vec<OffsetRange> =
        (0..3).map(|p| OffsetRange { partition: p, start: 0, end: PER_PARTITION as i64 }).collect();
    let mut rng = Xorshift(0x2545_f491_4f6c_dd1d ^ std::process::id() as u64);

    // The fastest of three uninterrupted runs sets the window the kills are drawn from (the
    // first reads a cold broker); a round whose attempt outran its kill narrows it to that run.
    let mut window = Duration::MAX;
    for calm in ["kill-calm-0", "kill-calm-1", "kill-calm-2"] {
        let spec = spec(calm, &topic, &bootstrap, serde_json::json!({"type": "json"}), tuning.clone());
        let id = plan(meta.as_ref(), &spec, ranges.clone()).await;
        window = window.min(run_until_complete(&urls, &tmp, &id, 0, Duration::ZERO, &mut rng).1);
    }

    let (mut killed, mut rounds_killed, mut resumed_with_hydrants) = (0, 0, 0);
    for round in 0..ROUNDS {
        let spec =
            spec(&format!("kill-{round}"), &topic, &bootstrap, serde_json::json!({"type": "json"}), tuning.clone());
        let id = plan(meta.as_ref(), &spec, ranges.clone()).await;
        let (round_kills, completed_in) = run_until_complete(&urls, &tmp, &id, 1 + round % 3, window, &mut rng);
        if round_kills == 0 {
            window = window.min(completed_in);
        }
        killed += round_kills;
        rounds_killed += usize::from(round_kills > 0);
        let checkpoints = meta.query(&id.pk(), &id.checkpoint_prefix()).await.expect("checkpoints");
        let attempts: std::collections::BTreeSet<u64> = checkpoints
            .iter()
            .filter(|c| !c.body["hydrants"].as_array().is_some_and(Vec::is_empty))
            .map(|c| c.body["attempt"].as_u64().unwrap_or(0))
            .collect();
        if attempts.len() > 1 {
            resumed_with_hydrants += 1;
        }
        let hydrants: Vec<sluice_pipeline::task::HydrantRef> = checkpoints
            .iter()
            .flat_map(|c| serde_json::from_value::<Vec<_>>(c.body["hydrants"].clone()).expect("hydrant list"))
            .collect();
        let values = merged_values(store.as_ref(), &hydrants, "id").await;
        assert_eq!(values.len(), expected.len(), "round {round}: {} rows for {} records", values.len(), expected.len());
        assert!(values == expected, "round {round}: some record is missing or twice");
    }
    eprintln!("{ROUNDS} rounds, {killed} attempts killed in {rounds_killed} rounds, {resumed_with_hydrants} rounds resumed hydrants of a killed attempt (uninterrupted run {window:?})");
    assert!(rounds_killed >= ROUNDS * 3 / 4, "too few rounds killed an attempt: {rounds_killed} of {ROUNDS}");
    assert!(resumed_with_hydrants >= ROUNDS / 4, "too few kills landed after a checkpoint: {resumed_with_hydrants}");
    // An attempt that completes removes its spill; a killed one leaves it, lost.
    let lost_spills = std::fs::read_dir(&tmp)
        .expect("temporary directory")
        .filter(|e| e.as_ref().is_ok_and(|e| e.file_name().to_string_lossy().starts_with("sluice-spill-")))
        .count();
    eprintln!("{lost_spills} spills left by killed attempts");
    assert!(lost_spills >= ROUNDS / 4, "too few kills landed while a spill was on disk: {lost_spills}");
}

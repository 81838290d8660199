//! A `local` input source opens only regular files under the directories the deployment
//! allows, reads them as far as they were when the task was planned, and stops an attempt at
//! its deadline however long its lines are.

use crate::harness::{local, rows, spec, Env};
use serde_json::json;
use sluice_format::time::now_ms;
use sluice_pipeline::batch::{index_split, SplitOptions, SplitOutcome};
use std::path::Path;
use std::time::{Duration, Instant};

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Indexes split 0 of `id`, failing the test rather than waiting for an input that never ends.
async fn index(env: &Env, id: &str, deadline: Option<Instant>) -> SplitOutcome {
    let options = SplitOptions::until(now_ms(), deadline);
    let access = env.access();
    index_split(&env.meta, &env.store, &access, id, 0, &options).await.expect("split")
}

/// Opens `fifo` for writing after a while and closes it, so that a reader blocked in opening
/// it (the test failing) reads nothing and ends.
fn unblock_later(fifo: &Path) {
    let fifo = fifo.to_path_buf();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(5));
        let _ = std::fs::OpenOptions::new().write(true).open(fifo);
    });
}

#[tokio::test]
async fn a_listed_fifo_is_refused_at_submit() {
    let env = Env::new().await;
    let fifo = env.input().join("pipe.json");
    mkfifo(&fifo);
    let e = env.submit(spec(local(&[&fifo]), json!({}))).await.expect_err("a fifo is no input");
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[tokio::test]
async fn a_fifo_swapped_in_after_submit_fails_its_split_at_once() {
    let env = Env::new().await;
    // A regular file when the task was planned, a FIFO when its split runs.
    let (file, submitted) = env.submit_file("rows.json", &rows(3)).await;
    std::fs::remove_file(&file).expect("remove");
    mkfifo(&file);
    unblock_later(&file);
    let started = Instant::now();
    match index(&env, &submitted.id, None).await {
        SplitOutcome::Failed(why) => assert!(why.contains("not a regular file"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5), "the split waited for a writer");
}

#[tokio::test]
async fn a_file_that_grew_after_submit_is_read_as_far_as_it_was_planned() {
    let env = Env::new().await;
    let (file, submitted) = env.submit_file("rows.json", &rows(3)).await;
    // The same three rows and two more.
    std::fs::write(&file, rows(5)).expect("append");
    assert_eq!(index(&env, &submitted.id, None).await, SplitOutcome::Done { rows: 3, hydrants: 1 });
}

#[tokio::test]
async fn an_attempt_past_its_deadline_stops_within_a_long_line() {
    let env = Env::new().await;
    // Two records, the second 24 MiB long: the attempt reads far more bytes than records.
    let (_, submitted) = env.submit_file("one-line.json", &(rows(1) + &"x".repeat(24 << 20))).await;
    let outcome = index(&env, &submitted.id, Some(Instant::now())).await;
    assert!(matches!(&outcome, SplitOutcome::Retry(why) if why.contains("out of time")), "{outcome:?}");
}

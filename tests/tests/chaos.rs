//! The chaos test: while a producer writes records with unique ids into a 4-partition topic
//! of the real broker (in half the schedules, a `topicPattern` datasource whose second
//! topic, of 2 partitions, is created mid-run and takes half the later records), the pipeline
//! runs on the real stores with faults injected at random
//! points: steps killed after a random number of calls (before or after the call that kills
//! them), transient S3/DynamoDB errors (before the call, or after it with the outcome
//! unknown), duplicated invocations, two supervisors at once, short indexer deadlines (tasks
//! spilling persists to local disk between checkpoints in most schedules), cleanup
//! with no grace, the spec resubmitted with another `taskCount` while records flow (the
//! partitions regrouped, or with daily chunks over hourly ones), a pass taking a change's steps
//! one at a time or several in a row, real-time tasks (half the
//! schedules), the lag-based autoscaler changing `taskCount` (some schedules), compaction passes beside the ingestion (two at once, or beside a query; some
//! into daily chunks or cutting daily ones into hours, some re-indexing rows by hour) with retention rules dropping an hour in some schedules, batch tasks
//! (`index_parallel`: an append cut into byte-range splits, then an overwrite of an hour) beside
//! the stream in some schedules, and the broker killed and restarted once. Queries between and beside the jobs
//! count every row at most once; at the end every record is visible exactly once (none of a
//! dropped hour), the committed offsets equal the high watermarks, and a last compaction pass
//! leaves no chunk awaiting compaction.
//!
//! `SLUICE_CHAOS_SCHEDULES` sets the number of randomized schedules (8 by default, as in CI;
//! the long mode runs 200 or more); `SLUICE_CHAOS_SEED` replays a run, `SLUICE_CHAOS_ONLY=k`
//! its schedule k alone, and `RUST_LOG` prints the pipeline's log.

#[path = "chaos_parts/batch.rs"]
mod batch;

use batch::BatchPart;
use sluice_integration::indexing::{json_record, spec, visible_values, Backends};
use sluice_integration::kafka::{create_topic, produce};
use sluice_integration::{required_env, unique};
use sluice_pipeline::batch::{
    drive_id, index_split, process_access, publish_batch, BatchPublished, SplitOptions, SplitOutcome,
};
use sluice_pipeline::coordinator::plan::plan_now;
use sluice_pipeline::coordinator::{compact, CompactOptions};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::indexer::{run_task, TaskOptions, TaskOutcome};
use sluice_pipeline::invoker::{Job, QueueInvoker, TaskInvoker};
use sluice_pipeline::merger::{merge_and_publish, MergerOptions, MERGE_BATCH_BYTES};
use sluice_pipeline::supervisor::{supervise, SupervisorOptions};
use sluice_query::{run_query, SegmentCache};
use sluice_store::faults::{FaultCounts, Faults, Rng};
use sluice_store::metadata::FaultyMeta;
use sluice_store::storage::FaultyStore;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a schedule may run before it must have caught up.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(600);
const PARTITIONS: i32 = 4;

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The stores of one step, with its faults.
fn faulty(b: &Backends, faults: &Arc<Faults>) -> (FaultyMeta, FaultyStore) {
    (
        FaultyMeta { inner: b.meta.clone(), faults: faults.clone() },
        FaultyStore { inner: b.store.clone(), faults: faults.clone() },
    )
}

struct Schedule {
    rng: Rng,
    counts: FaultCounts,
    b: Backends,
    name: String,
}

impl Schedule {
    fn faults(&mut self, kill_chance: f64) -> Arc<Faults> {
        self.faults_at(kill_chance, 0.03)
    }

    /// Faults with `transient` errors per call: a compaction pass makes many calls, and at
    /// the jobs' rate most passes would fail before they publish anything.
    fn faults_at(&mut self, kill_chance: f64, transient: f64) -> Arc<Faults> {
        let kill = self.rng.chance(kill_chance).then(|| self.rng.below(40));
        Faults::new(self.rng.below(u64::MAX), transient, kill, self.counts.clone())
    }

    fn count(&self, kind: &'static str) {
        *self.counts.lock().expect("counts").entry(kind).or_default() += 1;
    }

    async fn supervisor(&mut self, queue: &QueueInvoker) {
        let faults = self.faults(0.15);
        let (meta, store) = faulty(&self.b, &faults);
        let grace = if self.rng.chance(0.5) { 0 } else { 60_000 };
        // A pass takes a grouping change's steps one at a time, or several in a row.
        let max_steps = if self.rng.chance(0.3) { 1 } else { 1 + self.rng.below(4) as usize };
        // The timeline's head made ready at some pass (under faults), its reads whole until then.
        let ready_after = if self.rng.chance(0.3) { 0 } else { sluice_metastore::timeline::head::READY_AFTER_MS };
        let options = SupervisorOptions {
            cleanup_grace_ms: grace,
            max_steps,
            timeline_ready_after_ms: ready_after,
            ..SupervisorOptions::at(now())
        };
        let _ = supervise(&meta, &store, queue, &options, &self.name).await;
    }

    async fn job(&mut self, queue: &QueueInvoker, job: Job) {
        // A batch task's publish makes hundreds of calls (every hydrant of every split): at the
        // jobs' rate of transient errors hardly one would publish, so it gets the compaction
        // passes' rate.
        let faults = match &job {
            Job::BatchPublish { .. } => self.faults_at(0.25, 0.005),
            _ => self.faults(0.25),
        };
        let (meta, store) = faulty(&self.b, &faults);
        match &job {
            Job::Index { task } => {
                let budget = if self.rng.chance(0.2) { 20 + self.rng.below(200) } else { 30_000 };
                let options = TaskOptions {
                    deadline: Some(Instant::now() + Duration::from_millis(budget)),
                    reserve: Duration::ZERO,
                    lease: Duration::from_millis(800),
                };
                match run_task(&meta, &store, task, &options).await {
                    Ok(TaskOutcome::Complete(r)) => {
                        let _ = queue.invoke(Job::Merge { task: task.clone() }).await;
                        if let Some(next) = r.next {
                            let _ = queue.invoke(Job::Index { task: next }).await;
                        }
                    }
                    Ok(TaskOutcome::Incomplete(r)) if r.open => {
                        let _ = queue.invoke(Job::Index { task: task.clone() }).await;
                    }
                    _ => {}
                }
            }
            Job::Merge { task } => {
                // Half the mergers hold a few KiB: a chunk's small hydrants merge in batches.
                let max_batch_bytes =
                    if self.rng.chance(0.5) { 1 + self.rng.below(8 << 10) } else { MERGE_BATCH_BYTES };
                let options = MergerOptions { max_batch_bytes, ..MergerOptions::at(now()) };
                let _ = merge_and_publish(&meta, &store, Some(queue), task, &options).await;
            }
            Job::BatchIndex { batch, split } => {
                let budget = if self.rng.chance(0.2) { self.rng.below(50) } else { 30_000 };
                let deadline = Some(Instant::now() + Duration::from_millis(budget));
                let options = SplitOptions { now_ms: now(), deadline, lease_ms: 800 };
                let outcome = index_split(&meta, &store, &process_access(), batch, *split, &options).await;
                if matches!(outcome, Ok(SplitOutcome::Done { .. } | SplitOutcome::Retry(_) | SplitOutcome::Failed(_))) {
                    let _ = drive_id(&meta, queue, batch, now()).await;
                }
            }
            Job::BatchPublish { batch } => {
                if matches!(publish_batch(&meta, &store, batch, now()).await, Ok(BatchPublished::Published { .. })) {
                    self.count("batch task published");
                }
            }
        }
    }
}

/// One compaction pass with `faults`; what it did is counted.
async fn compactor(b: &Backends, name: &str, faults: Arc<Faults>, grace_ms: i64, counts: &FaultCounts) {
    let (meta, store) = faulty(b, &faults);
    let report = compact(&meta, &store, name, &CompactOptions { grace_ms, ..CompactOptions::at(now()) }).await;
    let mut counts = counts.lock().expect("counts");
    for (kind, happened) in report.ok().map_or(vec![], |r| {
        vec![
            ("compaction published", r.chunks_compacted > 0),
            ("retention drop", r.segments_dropped > 0),
            ("compaction conflict", r.conflicts > 0),
            ("replace cleaned up", r.replaces_cleaned > 0),
        ]
    }) {
        if happened {
            *counts.entry(kind).or_default() += 1;
        }
    }
}

/// Queries the datasource as a user would (no faults) and checks that no row is counted
/// twice: every id at most once, whatever the tasks are doing (reading, closing, merging,
/// publishing, failing). The ids counted, sorted (`None`: no answer).
async fn query_counts_each_row_once(
    b: &Backends,
    cache: &SegmentCache,
    name: &str,
    (k, seed): (usize, u64),
    interval: &str,
) -> Option<Vec<String>> {
    let query = serde_json::json!({"queryType": "groupBy", "dataSource": name, "granularity": "all",
        "intervals": [interval], "dimensions": ["id"],
        "aggregations": [{"type": "count", "name": "rows"}], "limitSpec": {"type": "default", "limit": 100000}});
    let out = match run_query(b.meta.as_ref(), b.store.as_ref(), Some(cache), &query.to_string()).await {
        Ok(out) => out,
        // Nothing visible yet, or a view that kept changing: not a wrong answer.
        Err(e) => {
            eprintln!("schedule {k}: query: {e}");
            return None;
        }
    };
    let mut ids = Vec::new();
    for row in out.as_array().expect("groupBy rows") {
        let rows = row["event"]["rows"].as_u64().unwrap_or(0);
        if rows != 1 {
            // The visible segments and every replace, as they are now.
            let mut now = differences(b, name, &[], &[]).await;
            let pk = sluice_pipeline::keys::datasource_pk(name);
            for item in b.meta.query(&pk, "replace").await.unwrap_or_default() {
                now.push_str(&format!("\n{} v{} {}", item.sk, item.version, item.body));
            }
            panic!("schedule {k} (seed {seed}): a query counted {} {rows} times; now {now}", row["event"]["id"]);
        }
        ids.push(row["event"]["id"].as_str().unwrap_or_default().to_string());
    }
    ids.sort();
    Some(ids)
}

/// The day every schedule's records are in.
const DAY: &str = "2015-09-12/2015-09-13";

/// Hour `h` of [`DAY`].
fn hour(h: u64) -> String {
    let end = if h >= 23 { "2015-09-13T00:00:00Z".to_string() } else { format!("2015-09-12T{:02}:00:00Z", h + 1) };
    format!("2015-09-12T{h:02}:00:00Z/{end}")
}

/// Kills the broker and starts it again with `localstack/up.sh` (its log is kept on disk).
fn restart_broker() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let run = std::env::var("SLUICE_RUN_DIR").map(Into::into).unwrap_or_else(|_| root.join(".sluice/services"));
    let pid = std::fs::read_to_string(run.join("tansu.pid")).expect("tansu pid file");
    // bash's builtin kill: no procps binary needed on a fresh machine.
    let killed =
        std::process::Command::new("bash").args(["-c", &format!("kill -9 {}", pid.trim())]).status().expect("kill");
    assert!(killed.success(), "kill the broker");
    std::thread::sleep(Duration::from_millis(300));
    let up = std::process::Command::new(root.join("localstack/up.sh")).output().expect("localstack/up.sh");
    assert!(up.status.success(), "restart the broker: {}", String::from_utf8_lossy(&up.stderr));
}

async fn run_schedule(k: usize, seed: u64, counts: &FaultCounts, restart: bool) {
    let bootstrap = required_env("SLUICE_KAFKA");
    let mut rng = Rng::new(seed);
    let b = if k % 2 == 0 { Backends::local().await } else { Backends::aws().await };
    let prefix = unique("chaos");
    let topic = create_topic(&bootstrap, &format!("{prefix}-a"), PARTITIONS).await;
    let num_records = 150 + rng.below(150) as usize;
    let name = unique("chaos");
    // Tasks spill persists to local disk until maxRowsPerSegment or maxTotalRows is near.
    let mut tuning = serde_json::json!({"maxRowsInMemory": 5 + rng.below(20), "maxRowsPerSegment": 10 + rng.below(90)});
    if rng.chance(0.5) {
        tuning["maxTotalRows"] = (10 + rng.below(60)).into();
    }
    let mut spec = spec(&name, &topic, &bootstrap, serde_json::json!({"type": "json"}), tuning);
    // Half the schedules read every topic named `<prefix>-*`: the second is created mid-run.
    let pattern = rng.chance(0.5);
    if pattern {
        let io = spec["spec"]["ioConfig"].as_object_mut().expect("ioConfig");
        io.remove("topic");
        io.insert("topicPattern".into(), format!("{prefix}-.*").into());
    }
    let (second_created, second) = tokio::sync::watch::channel(None::<String>);
    spec["spec"]["ioConfig"]["taskCount"] = (1 + rng.below(4)).into();
    spec["spec"]["ioConfig"]["useEarliestOffset"] = true.into();
    spec["spec"]["sluiceConfig"] = serde_json::json!({"maxRecordsPerTask": 20 + rng.below(40)});
    // Half the schedules run real-time tasks: open ranges checkpointed every 0.1-0.3 s,
    // closed after 1-3 s or 1 s without records; the producer then writes more slowly.
    let realtime = rng.chance(0.5);
    if realtime {
        spec["spec"]["sluiceConfig"]["realtime"] =
            serde_json::json!({"checkpointPeriod": format!("PT0.{}S", 1 + rng.below(3)), "idleAfter": "PT1S"});
        spec["spec"]["ioConfig"]["taskDuration"] = format!("PT{}S", 1 + rng.below(3)).into();
    }
    // Some schedules run the lag-based autoscaler, its times shortened to the schedule's: it
    // changes taskCount under the faults, beside the operator's changes.
    if rng.chance(0.4) {
        *counts.lock().expect("counts").entry("autoscaler schedule").or_default() += 1;
        spec["spec"]["ioConfig"]["autoScalerConfig"] = serde_json::json!({
            "enableTaskAutoScaler": true, "taskCountMin": 1, "taskCountMax": 4,
            "lagCollectionIntervalMillis": 1, "lagCollectionRangeMillis": 2000,
            "scaleActionStartDelayMillis": 0, "scaleActionPeriodMillis": 50,
            "minTriggerScaleActionFrequencyMillis": 100 + rng.below(400),
            "scaleOutThreshold": 20 + rng.below(100), "scaleInThreshold": rng.below(10),
            "triggerScaleOutFractionThreshold": 0.3, "triggerScaleInFractionThreshold": 0.9,
            "scaleOutStep": 1 + rng.below(2), "scaleInStep": 1});
    }
    // Some schedules run batch tasks beside the stream: an append, then an overwrite of hour 5.
    let mut batch = rng.chance(0.4).then(|| BatchPart::new(&mut rng, &name));
    let pause = Duration::from_millis(if realtime { 80 } else { 15 });
    submit(b.meta.as_ref(), spec.clone(), now()).await.expect("submit");
    // Most schedules compact as the rows arrive (nothing skipped: every chunk takes appends
    // and replaces at once); some drop the first hour by retention.
    let compaction = rng.chance(0.7);
    let max_rows = 20 + rng.below(180);
    // Retention drops the first hour's segments: segments of a day hold that hour's rows too and
    // are kept (Druid's `dropByInterval` drops what the interval contains), so those schedules
    // keep hourly chunks throughout.
    let drop_first_hour = compaction && rng.chance(0.3);
    let daily = compaction && !drop_first_hour && rng.chance(0.4);
    if compaction {
        let mut config =
            serde_json::json!({"dataSource": name, "skipOffsetFromLatest": "PT0S", "maxRowsPerSegment": max_rows});
        if daily {
            // Hourly chunks compacted into days, or the spec's daily chunks cut back into hours.
            let granularity = if rng.chance(0.5) { "DAY" } else { "HOUR" };
            config["granularitySpec"] = serde_json::json!({"segmentGranularity": granularity});
        }
        if rng.chance(0.3) {
            // Re-indexed by hour and rolled up: ids are unique, so each row stays a row.
            config["granularitySpec"]["queryGranularity"] = "HOUR".into();
            config["granularitySpec"]["rollup"] = true.into();
            *counts.lock().expect("counts").entry("re-index schedule").or_default() += 1;
        }
        sluice_pipeline::coordinator::config::submit(b.meta.as_ref(), config).await.expect("compaction config");
    }
    if drop_first_hour {
        let rules =
            serde_json::json!([{"type": "dropByInterval", "interval": "2015-09-12T00:00:00Z/2015-09-12T01:00:00Z"}]);
        sluice_pipeline::coordinator::rules::set(b.meta.as_ref(), &name, rules).await.expect("rules");
    }
    let producer = {
        let (bootstrap, topic, mut second) = (bootstrap.clone(), topic.clone(), second);
        tokio::spawn(async move {
            for (i, chunk) in (0..num_records).collect::<Vec<_>>().chunks(25).enumerate() {
                // With a pattern, the later half of the records waits for the second topic,
                // and every other one goes there.
                let other = match pattern && i * 25 >= num_records / 2 {
                    true => second.wait_for(Option::is_some).await.expect("the schedule runs").clone(),
                    false => None,
                };
                let (mut here, mut there) = (Vec::new(), Vec::new());
                for &n in chunk {
                    let value = json_record(&format!("c{n}"), n);
                    match &other {
                        Some(_) if n % 2 == 1 => there.push((((n / 2) % 2) as i32, value)),
                        _ => here.push(((n % PARTITIONS as usize) as i32, value)),
                    }
                }
                produce(&bootstrap, &topic, &here).await;
                if let Some(other) = &other {
                    produce(&bootstrap, other, &there).await;
                }
                tokio::time::sleep(pause).await;
            }
        })
    };
    let mut s = Schedule { rng, counts: counts.clone(), b, name: name.clone() };
    let cache_dir = tempfile::tempdir().expect("segment cache");
    let cache = SegmentCache::new(cache_dir.path());
    let queue = QueueInvoker::default();
    let started = Instant::now();
    let mut iteration = 0;
    loop {
        iteration += 1;
        // A real-time schedule's jobs wait on the clock (each task reads for up to 3 s, one job
        // after another), so a loaded 2-core machine stretches a pass to 15 s: 17 passes took
        // 253 s in a replay beside a second long run.
        if started.elapsed() > CATCH_UP_LIMIT {
            panic!(
                "schedule {k} (seed {seed}) did not catch up in {CATCH_UP_LIMIT:?} ({iteration} passes); unpublished tasks:\n{}",
                unpublished(s.b.meta.as_ref(), &name).await
            );
        }
        if pattern && iteration == 3 {
            s.count("topic added to the pattern");
            let created = create_topic(&bootstrap, &format!("{prefix}-b"), 2).await;
            second_created.send_replace(Some(created));
        }
        if restart && iteration == 4 {
            restart_broker();
            s.count("broker restart");
        }
        if iteration == 2 || (iteration < 40 && s.rng.chance(0.1)) {
            s.count("taskCount change");
            spec["spec"]["ioConfig"]["taskCount"] = (1 + s.rng.below(4)).into();
            if (daily || !compaction) && s.rng.chance(0.15) {
                // Daily chunks from now on, overlapping the hourly ones published so far.
                s.count("segmentGranularity change");
                spec["spec"]["dataSchema"]["granularitySpec"]["segmentGranularity"] = "day".into();
            }
            submit(s.b.meta.as_ref(), spec.clone(), now()).await.expect("resubmit");
        }
        if let Some(part) = batch.as_mut() {
            part.step(s.b.meta.as_ref(), iteration, |kind| s.count(kind)).await;
        }
        if s.rng.chance(0.3) {
            s.count("two supervisors at once");
            let other = QueueInvoker::default();
            let mut twin = Schedule {
                rng: Rng::new(s.rng.below(u64::MAX)),
                counts: s.counts.clone(),
                b: s.b.clone(),
                name: name.clone(),
            };
            tokio::join!(s.supervisor(&queue), twin.supervisor(&other));
            while let Some(job) = other.pop() {
                let _ = queue.invoke(job).await;
            }
        } else {
            s.supervisor(&queue).await;
        }
        // At most 40 jobs between supervisor passes, as the schedule runs a pass whatever the
        // functions are doing: a chain of real-time tasks handing over to each other would
        // otherwise keep the next pass (which hands over lost jobs) from ever running.
        for jobs in 0.. {
            if jobs == 40 && !queue.is_empty() {
                s.count("jobs left for the next pass");
                break;
            }
            let Some(job) = queue.pop() else { break };
            if s.rng.chance(0.2) {
                s.count("duplicated invocation");
                let mut twin = Schedule {
                    rng: Rng::new(s.rng.below(u64::MAX)),
                    counts: s.counts.clone(),
                    b: s.b.clone(),
                    name: name.clone(),
                };
                tokio::join!(s.job(&queue, job.clone()), twin.job(&queue, job));
            } else {
                s.job(&queue, job).await;
            }
            if s.rng.chance(0.3) {
                query_counts_each_row_once(&s.b, &cache, &name, (k, seed), DAY).await;
            }
            if compaction && s.rng.chance(0.1) {
                let faults = s.faults_at(0.25, 0.005);
                let grace = if s.rng.chance(0.5) { 0 } else { 60_000 };
                match s.rng.below(3) {
                    0 => {
                        s.count("two compactions at once");
                        let twin = s.faults_at(0.25, 0.005);
                        tokio::join!(
                            compactor(&s.b, &name, faults, grace, &s.counts),
                            compactor(&s.b, &name, twin, grace, &s.counts)
                        );
                    }
                    1 => {
                        // The grace outlives the query, whose segments cleanup may not delete.
                        s.count("compaction beside a query");
                        tokio::join!(
                            compactor(&s.b, &name, faults, 60_000, &s.counts),
                            query_counts_each_row_once(&s.b, &cache, &name, (k, seed), DAY)
                        );
                    }
                    _ => compactor(&s.b, &name, faults, grace, &s.counts).await,
                }
            }
        }
        // The day, or one hour of it: the cache keeps the intervals it read.
        let asked = if s.rng.chance(0.5) { DAY.to_string() } else { hour(s.rng.below(8)) };
        query_counts_each_row_once(&s.b, &cache, &name, (k, seed), &asked).await;
        if producer.is_finished() {
            let batch_done = match &batch {
                Some(part) => part.finished(s.b.meta.as_ref()).await,
                None => true,
            };
            let check =
                supervise(s.b.meta.as_ref(), s.b.store.as_ref(), &queue, &SupervisorOptions::at(now()), &name).await;
            match check {
                Ok(p) if p.caught_up && batch_done => break,
                Ok(p) if iteration % 20 == 0 => {
                    if let Some(part) = &batch {
                        eprintln!(
                            "schedule {k} iteration {iteration}: batch tasks\n{}",
                            part.describe(s.b.meta.as_ref()).await
                        );
                    }
                    let tasks = sluice_pipeline::supervisor::status(s.b.meta.as_ref(), &name).await.map(|st| st.tasks);
                    eprintln!(
                        "schedule {k} iteration {iteration}: high {:?} committed {:?} tasks {tasks:?}",
                        p.high, p.committed
                    );
                }
                Ok(_) => {}
                Err(e) if iteration % 20 == 0 => eprintln!("schedule {k} iteration {iteration}: {e}"),
                Err(_) => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    producer.await.expect("producer");
    if compaction {
        // A last pass with no faults compacts and drops whatever is left.
        let options = CompactOptions { grace_ms: 0, ..CompactOptions::at(now()) };
        let last = compact(s.b.meta.as_ref(), s.b.store.as_ref(), &name, &options).await;
        let last = last.unwrap_or_else(|e| panic!("schedule {k} (seed {seed}): the last compaction pass: {e}"));
        if last.segments_dropped > 0 {
            s.count("retention drop");
        }
        let config =
            sluice_pipeline::coordinator::config::get(s.b.meta.as_ref(), &name).await.expect("config").expect("kept");
        let plan = plan_now(s.b.meta.as_ref(), &config).await.expect("plan");
        assert!(
            plan.awaiting.is_empty(),
            "schedule {k} (seed {seed}): chunks still awaiting compaction after {last:?}: {:?}",
            plan.awaiting
        );
    }
    let mut expected: Vec<String> =
        (0..num_records).filter(|n| !(drop_first_hour && n % 3 == 0)).map(|n| format!("c{n}")).collect();
    if let Some(part) = &batch {
        expected.extend(part.expected(s.b.meta.as_ref(), drop_first_hour, |kind| s.count(kind)).await);
    }
    expected.sort();
    let seen = visible_values(s.b.meta.as_ref(), s.b.store.as_ref(), &name, "id").await;
    assert_eq!(
        seen.len(),
        expected.len(),
        "schedule {k} (seed {seed}): {} rows for {} records; {}",
        seen.len(),
        expected.len(),
        differences(&s.b, &name, &seen, &expected).await
    );
    assert!(seen == expected, "schedule {k} (seed {seed}): some record is missing or twice");
    // The queries' cache kept the timeline it read while nothing visible changed: read through
    // it now, every record is there once.
    let queried = query_counts_each_row_once(&s.b, &cache, &name, (k, seed), DAY).await;
    assert!(queried.as_ref() == Some(&expected), "schedule {k} (seed {seed}): the kept timeline is stale");
    // Hour by hour (read by interval, through the cache and without it), every record once.
    let mut hours = Vec::new();
    for h in 0..24 {
        let through = query_counts_each_row_once(&s.b, &cache, &name, (k, seed), &hour(h)).await;
        let cold = SegmentCache::new(cache_dir.path());
        let fresh = query_counts_each_row_once(&s.b, &cold, &name, (k, seed), &hour(h)).await;
        assert_eq!(through, fresh, "schedule {k} (seed {seed}): hour {h} through the cache");
        hours.extend(through.unwrap_or_default());
    }
    hours.sort();
    assert!(hours == expected, "schedule {k} (seed {seed}): the hours' queries do not count every record once");
    if realtime {
        s.count("real-time schedule");
    }
    if compaction {
        s.count("compaction schedule");
    }
    // The taskCount changes the autoscaler made, under the faults.
    let pk = sluice_pipeline::keys::datasource_pk(&name);
    if let Ok(Some(item)) = s.b.meta.get(&pk, sluice_pipeline::keys::AUTOSCALER_SK).await {
        let made = item.body["changes"].as_array().map_or(0, Vec::len);
        *s.counts.lock().expect("counts").entry("autoscaler taskCount change").or_default() += made as u64;
    }
    eprintln!(
        "chaos: schedule {k} passed: {num_records} records exactly once after {iteration} passes in {:?}",
        started.elapsed()
    );
    // What a passed schedule wrote goes: a long run would otherwise slow the endpoint down.
    s.b.discard(&name).await;
}

/// What a failed count saw: the ids missing and those seen twice, then every visible segment
/// (key, rows, task or replace).
async fn differences(b: &Backends, name: &str, seen: &[String], expected: &[String]) -> String {
    let missing: Vec<&String> = expected.iter().filter(|id| seen.binary_search(id).is_err()).collect();
    let twice: Vec<&String> = seen.windows(2).filter(|w| w[0] == w[1]).map(|w| &w[0]).collect();
    let segments = match sluice_pipeline::timeline::visible_segments(b.meta.as_ref(), name).await {
        Ok(records) => records
            .iter()
            .map(|r| format!("  {} rows {} task {:?} replace {:?}", r.key, r.num_rows, r.task, r.replace))
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("(timeline unreadable: {e})"),
    };
    format!("missing {missing:?}, twice {twice:?}; visible segments:\n{segments}")
}

/// Every task not published, a line each: id, state, attempt, ranges, positions, error.
async fn unpublished(meta: &dyn sluice_store::metadata::MetadataStore, name: &str) -> String {
    let items = match sluice_pipeline::task::task_items(meta, name).await {
        Ok(items) => items,
        Err(e) => return format!("(tasks unreadable: {e})"),
    };
    let mut lines = Vec::new();
    for item in items {
        let Ok(t) = serde_json::from_value::<sluice_pipeline::task::TaskItem>(item.body) else { continue };
        if t.state != sluice_pipeline::task::TaskState::Published {
            lines.push(format!(
                "  {} {:?} attempt {} ranges {:?} positions {:?} error {:?}",
                t.id.sk(),
                t.state,
                t.attempt,
                t.ranges,
                t.positions,
                t.error
            ));
        }
    }
    lines.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_record_exactly_once_under_faults() {
    let schedules: usize = std::env::var("SLUICE_CHAOS_SCHEDULES").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    let base: u64 =
        std::env::var("SLUICE_CHAOS_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| now() as u64);
    // Replays schedule k of a run alone, exactly as the run had it.
    let only: Option<usize> = std::env::var("SLUICE_CHAOS_ONLY").ok().and_then(|v| v.parse().ok());
    if std::env::var_os("RUST_LOG").is_some() {
        // The pipeline's own log, for a replay: `RUST_LOG=sluice_pipeline=info`.
        let filter = tracing_subscriber::EnvFilter::from_default_env();
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    }
    eprintln!("chaos: {schedules} schedules, SLUICE_CHAOS_SEED={base}");
    let counts = FaultCounts::default();
    let started = Instant::now();
    let mut ran = 0u64;
    for k in 0..schedules {
        if only.is_some_and(|o| o != k) {
            continue;
        }
        ran += 1;
        let seed = base ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        run_schedule(k, seed, &counts, k == schedules / 2).await;
        if (k + 1) % 25 == 0 {
            eprintln!("chaos: {} schedules so far; faults injected: {:?}", k + 1, counts.lock().expect("counts"));
        }
    }
    let counts = counts.lock().expect("counts");
    eprintln!("chaos: {ran} schedules passed in {:?}; faults injected: {counts:?}", started.elapsed());
    assert!(counts.get("kill").copied().unwrap_or(0) >= ran, "kills were injected: {counts:?}");
}

//! `sluice bench spike`: `sluice-sim spike`'s burst on a real broker (tansu from
//! `localstack/up.sh`), scaled down: 4 partitions, 100 records/s, 10 times that for 40 s, the
//! supervisor every 4 s (the schedule's minute divided by 15, every timing of the autoscaler
//! with it), tasks of at most 300 records so that one group (4 tasks in flight a period) keeps
//! up with the base rate and not with the burst. The scale is set by the broker: tansu on
//! SQLite times out under tens of consumers at thousands of records a second. A pass that fails (a broker timeout) is counted and the next one runs a
//! period later, as on the schedule. The pipeline runs in this process, its jobs concurrently as
//! Lambda runs them. Prints the lag at each pass, when it went over `scaleOutThreshold` and back
//! under it, the taskCount changes, and the requests the burst cost; checks that every record
//! produced is published once (committed offsets at the high watermarks, rows processed equal
//! to records produced).

use super::rig::{Rig, RigTuning, TASK_BUDGET};
use super::{default_sample, Sample};
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use sluice_format::time::now_ms;
use sluice_pipeline::datasource::{load, submit};
use sluice_pipeline::runner::JobPool;
use sluice_pipeline::supervisor::status;
use sluice_report::Functions;
use std::time::{Duration, Instant};

/// Options of `bench spike`.
#[derive(Args, Clone)]
pub struct SpikeArgs {
    /// The Kafka broker (a new topic on it).
    #[arg(long, env = "SLUICE_KAFKA")]
    broker: String,
    /// Partitions of the topic (and `taskCountMax`).
    #[arg(long, default_value_t = 4)]
    partitions: i32,
    /// Base produce rate, records/s.
    #[arg(long, default_value_t = 100)]
    rate: u64,
    /// The burst's rate over the base rate.
    #[arg(long, default_value_t = 10)]
    factor: u64,
    /// Seconds before the burst.
    #[arg(long, default_value_t = 40)]
    before_secs: u64,
    /// Seconds the burst lasts.
    #[arg(long, default_value_t = 40)]
    burst_secs: u64,
    /// Seconds of base rate after it.
    #[arg(long, default_value_t = 80)]
    after_secs: u64,
    /// Supervisor period, milliseconds: the autoscaler's timings follow it.
    #[arg(long, default_value_t = 4_000)]
    period_ms: u64,
    /// `sluiceConfig.maxRecordsPerTask`.
    #[arg(long, default_value_t = 300)]
    max_records_per_task: u64,
}

/// The autoscaler `sluice-sim spike` runs on AWS, its timings scaled to `period_ms` (a sample
/// every half period, a decision every period) and its thresholds to the burst's rate: over
/// `scaleOutThreshold` is 75 schedule-seconds of the burst, as 75 M records at 1 M/s is.
fn autoscaler(a: &SpikeArgs) -> serde_json::Value {
    let burst = (a.rate * a.factor) as f64;
    let scale = a.period_ms as f64 / 60_000.0;
    serde_json::json!({
        "enableTaskAutoScaler": true, "taskCountMin": 1, "taskCountMax": a.partitions,
        "lagCollectionIntervalMillis": a.period_ms / 2, "lagCollectionRangeMillis": a.period_ms * 2,
        "scaleActionStartDelayMillis": 0, "scaleActionPeriodMillis": a.period_ms,
        "minTriggerScaleActionFrequencyMillis": a.period_ms,
        "scaleOutThreshold": (75.0 * scale * burst) as u64, "triggerScaleOutFractionThreshold": 0.3,
        "scaleInThreshold": (8.0 * scale * burst) as u64, "triggerScaleInFractionThreshold": 0.9,
        "scaleOutStep": (a.partitions - 1).max(1), "scaleInStep": (a.partitions / 4).max(1),
    })
}

/// Runs `bench spike`.
pub fn run(args: SpikeArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(bench(&args))
}

/// What one burst found.
struct Burst {
    /// Seconds from the burst's start until the lag went over the threshold, and came back
    /// under it for good.
    over: Option<f64>,
    under: Option<f64>,
    /// The taskCount changes, as (seconds from the burst's start, new count).
    changes: Vec<(f64, u32)>,
    /// Seconds from the burst's end until the groups were back at taskCountMin.
    at_min_after: Option<f64>,
    /// Seconds from the burst's end until the lag was back at the base rate's (two periods of
    /// records at most).
    drained_after: Option<f64>,
    /// Largest lag seen at a pass.
    max_lag: i64,
    /// DynamoDB write units and S3 PUTs per second, before the burst and during it.
    before: (f64, f64),
    during: (f64, f64),
    failed: usize,
}

async fn bench(a: &SpikeArgs) -> Result<()> {
    let config = autoscaler(a);
    let threshold = config["scaleOutThreshold"].as_i64().unwrap_or(i64::MAX);
    println!(
        "{} partitions on {}, {} records/s, {}x for {} s after {} s, supervisor every {} ms, maxRecordsPerTask {}; autoscaler {config}",
        a.partitions, a.broker, a.rate, a.factor, a.burst_secs, a.before_secs, a.period_ms, a.max_records_per_task
    );
    let secs = |t: Option<f64>| t.map_or("never".into(), |t| format!("{t:.1} s"));
    for (label, scaled) in [("autoscaler", true), ("taskCount fixed at 1 (the peer)", false)] {
        println!("run: {label}");
        let b = burst(a, scaled.then_some(&config), threshold).await?;
        let changes: Vec<String> = b.changes.iter().map(|(t, to)| format!("{to} at {t:.1} s")).collect();
        println!(
            "{label}: lag max {}, over scaleOutThreshold ({threshold}) {} after the burst's start, back under it {} ({} supervisor periods); the backlog published {} after the burst's end",
            b.max_lag,
            secs(b.over),
            secs(b.under),
            b.under.map_or("-".into(), |t| format!("{:.1}", t * 1000.0 / a.period_ms as f64)),
            secs(b.drained_after)
        );
        if scaled {
            println!(
                "  taskCount changes from the burst's start: {}; back at taskCountMin {} after the burst's end",
                changes.join(", "),
                secs(b.at_min_after)
            );
        }
        println!(
            "  requests per second: DynamoDB write units {:.1} before the burst, {:.1} during it; S3 PUTs {:.2} before, {:.2} during; {} passes failed",
            b.before.0, b.during.0, b.before.1, b.during.1, b.failed
        );
    }
    Ok(())
}

/// One burst on a fresh rig and topic, with the autoscaler `config` or at taskCount 1.
async fn burst(a: &SpikeArgs, config: Option<&serde_json::Value>, threshold: i64) -> Result<Burst> {
    let tuning =
        RigTuning { task_count: 1, max_rows_in_memory: None, max_total_rows: None, max_rows_per_segment: None };
    let rig = Rig::start_with(a.partitions, tuning, "wikipedia_spike", None, Some(&a.broker)).await?;
    let (mut item, _) = load(rig.meta.as_ref(), &rig.datasource).await?;
    if let Some(config) = config {
        item.spec["ioConfig"]["autoScalerConfig"] = config.clone();
    }
    item.spec["sluiceConfig"] = serde_json::json!({"maxRecordsPerTask": a.max_records_per_task});
    submit(rig.meta.as_ref(), item.spec, now_ms()).await?;
    let sample = Sample::load(&default_sample())?;
    let records = sample.records_in_one_day(0, 20_000)?;
    let (burst_at, burst_end) = (a.before_secs as f64, (a.before_secs + a.burst_secs) as f64);
    let start = Instant::now();
    let producer = {
        let (bootstrap, topic, a) = (rig.bootstrap.clone(), rig.topic.clone(), a.clone());
        std::thread::spawn(move || produce(&bootstrap, &topic, &records, &a, start))
    };
    let (mut functions, mut pool) = (Functions::default(), JobPool::default());
    let period = Duration::from_millis(a.period_ms);
    let mut next_pass = start;
    let mut b = Burst {
        over: None,
        under: None,
        changes: Vec::new(),
        at_min_after: None,
        drained_after: None,
        max_lag: 0,
        before: (0.0, 0.0),
        during: (0.0, 0.0),
        failed: 0,
    };
    let mut requests_at = Vec::new();
    loop {
        if Instant::now() >= next_pass {
            next_pass = (next_pass + period).max(Instant::now());
            let pass = match rig.pass(&mut functions).await {
                Ok(pass) => pass,
                Err(e) => {
                    b.failed += 1;
                    println!("{:6.1} s  pass failed: {e}", start.elapsed().as_secs_f64());
                    continue;
                }
            };
            let t = start.elapsed().as_secs_f64();
            let count = status(rig.meta.as_ref(), &rig.datasource).await?.task_count.unwrap_or(1);
            let lag = pass.lag();
            b.max_lag = b.max_lag.max(lag);
            println!("{t:6.1} s  lag {lag:7}  taskCount {count}");
            if let Some(to) = pass.scaled_to {
                b.changes.push((t - burst_at, to));
            }
            if lag >= threshold && t >= burst_at {
                b.over.get_or_insert(t - burst_at);
                b.under = None;
            } else if b.over.is_some() && b.under.is_none() && lag < threshold {
                b.under = Some(t - burst_at);
            }
            let scaled_in = count == 1;
            if t >= burst_end && scaled_in && b.at_min_after.is_none() {
                b.at_min_after = Some(t - burst_end);
            }
            let base_lag = (2 * a.rate * a.period_ms / 1000) as i64;
            if t >= burst_end && lag <= base_lag && b.drained_after.is_none() {
                b.drained_after = Some(t - burst_end);
            }
            requests_at.push((t, rig.meters.read()));
            if producer.is_finished() && pass.caught_up && b.at_min_after.is_some() {
                break;
            }
            if t > burst_end + a.after_secs as f64 + 1200.0 {
                bail!("the pipeline did not catch up and scale in within 1,200 s of the producer's end");
            }
        }
        pool.start(&rig.meta, &rig.store, &rig.queue, TASK_BUDGET);
        if let Ok(Some(done)) = tokio::time::timeout(Duration::from_millis(20), pool.join_next()).await {
            done.map_err(|e| anyhow!("a job panicked: {e}"))?;
        }
    }
    let sent = producer.join().map_err(|_| anyhow!("the producer panicked"))??;
    while let Some(done) = pool.join_next().await {
        done.map_err(|e| anyhow!("a job panicked: {e}"))?;
    }
    let st = status(rig.meta.as_ref(), &rig.datasource).await?;
    let committed: i64 = st.partitions.iter().filter_map(|p| p.committed).sum();
    if committed != sent as i64 || st.totals.processed != sent {
        bail!("{sent} records produced, {committed} committed, {} processed", st.totals.processed);
    }
    println!("every record once: {sent} produced, committed and processed");
    let rates = |from: f64, to: f64| -> (f64, f64) {
        let at = |t: f64| requests_at.iter().find(|(x, _)| *x >= t).or(requests_at.last()).map(|(_, m)| *m);
        match (at(from), at(to)) {
            (Some(x), Some(y)) => {
                let used = y.since(&x);
                (used.write_units / (to - from), used.s3_puts as f64 / (to - from))
            }
            _ => (0.0, 0.0),
        }
    };
    b.before = rates(0.0, burst_at);
    b.during = rates(burst_at, burst_end);
    Ok(b)
}

/// Sends records round-robin over the partitions at the base rate, `factor` times it during the
/// burst; returns how many it sent.
fn produce(bootstrap: &str, topic: &str, records: &[Vec<u8>], a: &SpikeArgs, start: Instant) -> Result<u64> {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .context("producer")?;
    let (before, burst, after) = (a.before_secs as f64, a.burst_secs as f64, a.after_secs as f64);
    let due_at = |t: f64| -> f64 {
        let t = t.min(before + burst + after);
        a.rate as f64 * (t + (a.factor as f64 - 1.0) * (t.min(before + burst) - before).max(0.0))
    };
    let total = due_at(f64::MAX) as u64;
    let mut sent = 0u64;
    while sent < total {
        let due = (due_at(start.elapsed().as_secs_f64()) as u64).min(total);
        while sent < due {
            let p = (sent % a.partitions as u64) as i32;
            let value = &records[(sent % records.len() as u64) as usize];
            producer
                .send(BaseRecord::<(), _>::to(topic).partition(p).payload(value))
                .map_err(|(e, _)| anyhow!("produce: {e}"))?;
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    producer.flush(Duration::from_secs(60))?;
    Ok(sent)
}

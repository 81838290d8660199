//! The steady phase of `bench pipeline`: a producer thread sends records at a steady rate
//! while the pipeline runs a supervisor pass every period and then the jobs it queued.
//! Freshness is the time from a record's send to the publish that makes it queryable; lag is
//! the records behind the high watermarks at each pass, as the supervisor reports it.

use super::rig::{PipelineArgs, Rig};
use super::Sample;
use anyhow::{anyhow, bail, Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use sluice_pipeline::invoker::Job;
use sluice_pipeline::merger::MergeOutcome;
use sluice_pipeline::runner::JobOutcome;
use sluice_pipeline::task::{TaskId, TaskItem};
use sluice_report::{Freshness, Steady};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Distinct records the producer cycles through.
const DISTINCT: usize = 50_000;

type SendTimes = Arc<Mutex<Vec<Vec<Instant>>>>;

/// Runs the steady phase on a fresh rig.
pub(super) async fn run(rig: &Rig, sample: &Sample, args: &PipelineArgs) -> Result<Steady> {
    let Production { sends, total, start, producer } = Production::start(rig, sample, args)?;
    let mut s = Steady { rate: args.rate, period_ms: args.period_ms, ..Steady::default() };
    let period = Duration::from_millis(args.period_ms);
    let (mut next, mut last_publish) = (start, start);
    let mut published: Vec<(TaskId, Instant)> = Vec::new();
    let mut freshness: Vec<f64> = Vec::with_capacity(total);
    loop {
        tokio::time::sleep_until(next.into()).await;
        next += period;
        let done = producer.is_finished();
        let pass = rig.pass(&mut s.functions).await?;
        let lag = pass.lag();
        s.lag.push((start.elapsed().as_secs_f64(), lag));
        if done && pass.caught_up && pass.high_total() == total as i64 {
            break;
        }
        if start.elapsed() > Duration::from_secs(args.steady_secs + 300) {
            bail!("the pipeline did not catch up within 300 s of the producer's end");
        }
        rig.drain(&mut s.functions, |job: &Job, outcome, _, _| {
            if let (Job::Merge { task }, JobOutcome::Merged(Ok(MergeOutcome::Published { .. }))) = (job, outcome) {
                published.push((task.clone(), Instant::now()));
            }
        })
        .await?;
        for (id, at) in published.drain(..) {
            let item = rig.meta.get(&id.pk(), &id.sk()).await?.ok_or_else(|| anyhow!("task {id} vanished"))?;
            let task: TaskItem = serde_json::from_value(item.body).context("task item")?;
            let sends = sends.lock().map_err(|_| anyhow!("producer panicked"))?;
            for r in &task.ranges {
                for offset in r.start..r.end {
                    let sent = sends[r.partition as usize].get(offset as usize).ok_or_else(|| {
                        anyhow!("partition {} offset {offset} published before it was sent", r.partition)
                    })?;
                    freshness.push(at.duration_since(*sent).as_secs_f64() * 1000.0);
                }
            }
            s.tasks += 1;
            last_publish = at;
        }
    }
    s.secs = last_publish.duration_since(start).as_secs_f64();
    summarize(&mut s, producer, freshness)?;
    Ok(s)
}

/// The producer thread of a steady phase, and when each record was sent.
pub(super) struct Production {
    pub sends: SendTimes,
    pub total: usize,
    pub start: Instant,
    pub producer: std::thread::JoinHandle<Result<(u64, f64)>>,
}

impl Production {
    /// Starts sending `args.rate` records/s for `args.steady_secs`.
    pub fn start(rig: &Rig, sample: &Sample, args: &PipelineArgs) -> Result<Self> {
        let records = Arc::new(sample.records_in_one_day(0, DISTINCT)?);
        let sends: SendTimes = Arc::new(Mutex::new(vec![Vec::new(); rig.partitions as usize]));
        let total = (args.rate * args.steady_secs) as usize;
        let start = Instant::now();
        let producer = {
            let (bootstrap, topic) = (rig.bootstrap.clone(), rig.topic.clone());
            let (sends, records) = (sends.clone(), records.clone());
            let (rate, partitions) = (args.rate, rig.partitions as usize);
            std::thread::spawn(move || {
                produce(&bootstrap, &topic, &records, Rate { total, per_sec: rate, partitions }, &sends, start)
            })
        };
        Ok(Self { sends, total, start, producer })
    }
}

/// Fills the produced counts, lag and freshness figures of `s` once the producer ended;
/// every record produced must have been measured once.
pub(super) fn summarize(
    s: &mut Steady,
    producer: std::thread::JoinHandle<Result<(u64, f64)>>,
    mut freshness: Vec<f64>,
) -> Result<()> {
    let (produced, produce_secs) = producer.join().map_err(|_| anyhow!("producer panicked"))??;
    s.produced = produced;
    s.produce_secs = produce_secs;
    s.rows = freshness.len() as u64;
    if s.rows != produced {
        bail!("{} records became queryable of {produced} produced", s.rows);
    }
    let running: Vec<i64> = s.lag.iter().filter(|(t, _)| *t <= produce_secs).map(|(_, l)| *l).collect();
    s.mean_lag = running.iter().sum::<i64>() as f64 / running.len().max(1) as f64;
    s.max_lag = s.lag.iter().map(|(_, l)| *l).max().unwrap_or(0);
    freshness.sort_by(f64::total_cmp);
    let at = |q: f64| freshness[((freshness.len() - 1) as f64 * q).round() as usize];
    let mean = freshness.iter().sum::<f64>() / freshness.len().max(1) as f64;
    s.freshness_ms = Freshness { mean, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: at(1.0) };
    Ok(())
}

/// How many records a producer sends, how fast, over how many partitions.
struct Rate {
    total: usize,
    per_sec: u64,
    partitions: usize,
}

/// Sends `total` records at `per_sec` round-robin over `partitions` of `topic`, recording each
/// send's instant by partition and offset (this producer is the topic's only writer). Returns
/// the records sent and the seconds it took.
fn produce(
    bootstrap: &str,
    topic: &str,
    records: &[Vec<u8>],
    rate: Rate,
    sends: &SendTimes,
    start: Instant,
) -> Result<(u64, f64)> {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("compression.type", "lz4")
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .context("producer")?;
    let Rate { total, per_sec, partitions } = rate;
    let mut sent = 0usize;
    while sent < total {
        let due = ((start.elapsed().as_secs_f64() * per_sec as f64) as usize).min(total);
        let now = Instant::now();
        let mut times = sends.lock().map_err(|_| anyhow!("poisoned"))?;
        while sent < due {
            let p = sent % partitions;
            producer
                .send(BaseRecord::<(), _>::to(topic).partition(p as i32).payload(&records[sent % records.len()]))
                .map_err(|(e, _)| anyhow!("produce: {e}"))?;
            times[p].push(now);
            sent += 1;
        }
        drop(times);
        std::thread::sleep(Duration::from_millis(2));
    }
    producer.flush(Duration::from_secs(60))?;
    Ok((sent as u64, start.elapsed().as_secs_f64()))
}

/// Prints the steady phase.
pub(super) fn print(args: &PipelineArgs, s: &Steady) {
    let broker = args.broker.as_deref().map_or("the mock cluster".to_string(), |b| format!("the broker at {b}"));
    let mode = match s.checkpoint_ms {
        Some(ms) => format!("real-time tasks checkpointing every {ms} ms"),
        None => "planned ranges".to_string(),
    };
    println!(
        "steady: {} records at {} records/s over {:.1} s into {broker}, {mode}, supervisor every {} ms; {} tasks",
        s.produced, s.rate, s.produce_secs, args.period_ms, s.tasks
    );
    println!(
        "throughput {:.0} rows/s (first send -> last publish); lag mean {:.0} records, max {}",
        s.rows as f64 / s.secs,
        s.mean_lag,
        s.max_lag
    );
    if let Some(secs) = s.recovery_secs {
        println!("crash: every running job dropped; an attempt started after it checkpointed {secs:.1} s later");
    }
    let f = &s.freshness_ms;
    println!(
        "freshness (produce -> queryable): mean {:.0} ms, p50 {:.0} ms, p95 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        f.mean, f.p50, f.p95, f.p99, f.max
    );
}

//! `sluice bench catalog`: what one query over one hour costs as a datasource's history grows.
//! For each size (`--records`, 100 to 1,000,000 segment records), a datasource gets one day of
//! Druid's Wikipedia sample as a real segment and `records - 1` records of hourly segments
//! before it (records only, published visible: the query's hour never reads them), written in
//! transactions of 100 into the metadata store `--metadata` names (embedded files by default;
//! `dynamodb://TABLE` with `AWS_ENDPOINT_URL` for moto). A timeseries over the day's first hour
//! is then asked through the query path `sluice serve` runs (its segment cache): once cold, then
//! `--repeat` times warm, then once after another record is published. Printed per size and
//! mode (planned; real time, the README's setting): latency, items and DynamoDB read units per
//! query (and metadata requests). Not yet measured: the record published "after" is written
//! visible with its group's offsets, where a real publish leaves it to be marked (and queries
//! read the group's task items meanwhile); the real-time datasource has no open task, so its
//! figures leave out the checkpoints a running one reads. The head is made ready at once, as the
//! supervisor's pass does fifteen minutes after it is first written.

use super::billing::Billing;
use super::publish::publish_segment;
use super::segment::{build_indexes, parse_all};
use super::{default_sample, Sample, TUTORIAL_SPEC};
use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use sluice_format::index::IndexConfig;
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::segment::Segment;
use sluice_format::spec::load_spec;
use sluice_format::time::{now_ms, Interval};
use sluice_metastore::timeline::head;
use sluice_pipeline::datasource::submit;
use sluice_pipeline::keys::{offsets_sk, plan_sk};
use sluice_pipeline::layout::datasource::{OffsetsItem, PlanItem};
use sluice_pipeline::layout::timeline_log::Change;
use sluice_pipeline::task::TaskId;
use sluice_pipeline::timeline::SegmentRecord;
use sluice_query::SegmentCache;
use sluice_store::metadata::{open_metadata, Condition, Item, MetadataStore, MeteredMeta, TxOp};
use sluice_store::storage::{open_store, ObjectStore};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Options of `bench catalog`.
#[derive(Args)]
pub struct CatalogArgs {
    /// Segment records per datasource, one run each.
    #[arg(long, value_delimiter = ',', default_values_t = [100usize, 10_000, 100_000, 1_000_000])]
    records: Vec<usize>,
    /// The metadata store (`file:///...`, `dynamodb://TABLE`); a temporary folder by default.
    #[arg(long)]
    metadata: Option<String>,
    /// The object store (`file:///...`, `s3://bucket/prefix`); a temporary folder by default.
    #[arg(long)]
    storage: Option<String>,
    /// Warm queries per run; the median is printed.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    repeat: u32,
    /// The Wikipedia sample (newline-delimited JSON, gzipped).
    #[arg(long)]
    sample: Option<PathBuf>,
    /// The datasources' modes measured.
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["planned", "realtime"])]
    modes: Vec<Mode>,
}

/// A datasource's mode: queries read its published segments, or also what running tasks
/// checkpointed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// Published segments only.
    Planned,
    /// Real-time tasks (`sluiceConfig.realtime`).
    Realtime,
}

/// One hour in milliseconds.
const HOUR_MS: i64 = 3_600_000;

/// What one query cost.
struct Asked {
    millis: f64,
    requests: u64,
    read_units: f64,
    items: u64,
}

/// Runs `bench catalog`.
pub fn run(args: CatalogArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let meta_url = args.metadata.clone().unwrap_or_else(|| format!("file://{}/meta", dir.path().display()));
    let store_url = args.storage.clone().unwrap_or_else(|| format!("file://{}/store", dir.path().display()));
    let (day, bytes) = day_segment(&args)?;
    runtime.block_on(async {
        let meta = open_metadata(&meta_url).await?;
        let store = open_store(&store_url).await?;
        println!(
            "metadata {meta_url}; one timeseries over {} (one segment); warm: median of {}",
            hour(day),
            args.repeat
        );
        println!(
            "{:<10} {:>9} {:>10} {:>10} {:>10} {:>8} {:>9} {:>10} {:>10} {:>10} {:>10}",
            "mode", "records", "first ms", "items", "units", "warm ms", "items", "units", "after ms", "items", "units"
        );
        for &n in &args.records {
            for realtime in args.modes.iter().map(|m| *m == Mode::Realtime) {
                let mode = if realtime { "real time" } else { "planned" };
                let datasource = format!("catalog-{n}-{}-{}", u8::from(realtime), std::process::id());
                let one = Setup { meta: meta.clone(), store: store.clone(), datasource: &datasource, day };
                one.build(n, realtime, bytes.clone()).await.with_context(|| format!("{mode}, {n} records"))?;
                let cache = SegmentCache::new(dir.path().join(format!("cache-{datasource}")));
                let first = one.ask(&cache).await?;
                let mut warm = Vec::with_capacity(args.repeat as usize);
                for _ in 0..args.repeat {
                    warm.push(one.ask(&cache).await?);
                }
                warm.sort_by(|a, b| a.millis.total_cmp(&b.millis));
                let median = &warm[warm.len() / 2];
                one.publish_one(n as u64).await?;
                let after = one.ask(&cache).await?;
                // A warm query that read as many items as the first re-read the timeline (kept
                // at most MAX_KEPT_AGE from the start of its read).
                println!(
                    "{mode:<10} {n:>9} {:>10.1} {:>10} {:>10.1} {:>8.2} {:>9} {:>10.1} {:>10.1} {:>10} {:>10.1}",
                    first.millis,
                    first.items,
                    first.read_units,
                    median.millis,
                    median.items,
                    median.read_units,
                    after.millis,
                    after.items,
                    after.read_units
                );
                eprintln!(
                    "  metadata requests per query: first {}, warm {}, after a publish {}",
                    first.requests, median.requests, after.requests
                );
            }
        }
        Ok(())
    })
}

/// `[start, start + 1 h)` in ISO 8601.
fn hour(start: i64) -> String {
    let f = sluice_format::time::format_iso;
    format!("{}/{}", f(start), f(start + HOUR_MS))
}

/// The sample's main day as one segment: its chunk's start and bytes.
fn day_segment(args: &CatalogArgs) -> Result<(i64, bytes::Bytes)> {
    let sample = Sample::load(&args.sample.clone().unwrap_or_else(default_sample))?;
    let records = sample.records_in_one_day(0, 39_244)?;
    let spec = load_spec(TUTORIAL_SPEC)?.spec;
    let config = IndexConfig::from_spec(&spec);
    let (rows, parser) = parse_all(&spec, &records)?;
    let options = MergeOptions { max_rows_per_segment: u64::MAX, compression: spec.tuning.index };
    let mut indexes = build_indexes(&config, rows, parser.dimensions());
    let [index] = indexes.as_mut_slice() else { bail!("the sample's day is {} chunks, not one", indexes.len()) };
    let hydrant = Segment::from_bytes("hydrant", index.persist(spec.tuning.index)?)?;
    let [bytes] = merge(&[hydrant], &options)?.try_into().map_err(|_| anyhow::anyhow!("one segment"))?;
    Ok((index.interval().start, bytes::Bytes::from(bytes)))
}

/// One datasource of the run.
struct Setup<'a> {
    meta: Arc<dyn MetadataStore>,
    store: Arc<dyn ObjectStore>,
    datasource: &'a str,
    day: i64,
}

impl Setup<'_> {
    /// Submits the datasource (real time or planned), publishes the day's segment and
    /// `records - 1` hourly records before it.
    async fn build(&self, records: usize, realtime: bool, day_bytes: bytes::Bytes) -> Result<()> {
        let mut spec: serde_json::Value = serde_json::from_str(TUTORIAL_SPEC)?;
        spec["dataSchema"]["dataSource"] = self.datasource.into();
        if realtime {
            spec["sluiceConfig"] = json!({"realtime": {"checkpointPeriod": "PT1S", "idleAfter": "PT1M"}});
        }
        submit(self.meta.as_ref(), spec, now_ms()).await?;
        let day = Interval::new(self.day, self.day + 24 * HOUR_MS);
        let task = TaskId { datasource: self.datasource.into(), group: 0, seq: 0 };
        let real = publish_segment(
            self.meta.as_ref(),
            self.store.as_ref(),
            self.datasource,
            (day, "2015-09-12T00:00:00.000Z", 0),
            day_bytes,
            Some(task),
        )
        .await?;
        let pk = sluice_pipeline::keys::datasource_pk(self.datasource);
        let mut batch = Vec::with_capacity(100);
        for k in 1..records as u64 {
            let record = self.history_record(&real, k);
            // Unconditional: a transaction the SDK sends again after a timeout writes the same.
            batch.push(TxOp::Put {
                item: Item::new(&pk, record.sk(), serde_json::to_value(&record)?),
                condition: Condition::None,
            });
            if batch.len() == 100 {
                self.meta.transact(std::mem::take(&mut batch)).await?;
            }
        }
        if !batch.is_empty() {
            self.meta.transact(batch).await?;
        }
        // The group's plan and offsets as its tasks left them: every task numbered below the
        // plan's next, the last published.
        let plan = PlanItem { next_seq: records as u64 + 1, ..PlanItem::fresh(1, 0) };
        let offsets = OffsetsItem { last_seq: Some(records as u64), ..OffsetsItem::fresh(1) };
        self.meta
            .transact(vec![
                TxOp::Put {
                    item: Item::new(&pk, plan_sk(0), serde_json::to_value(&plan)?),
                    condition: Condition::Absent,
                },
                TxOp::Put {
                    item: Item::new(&pk, offsets_sk(0), serde_json::to_value(&offsets)?),
                    condition: Condition::Absent,
                },
            ])
            .await?;
        // The head made ready at once (the records were all written by this release): the
        // supervisor's pass does it fifteen minutes after the head is first written.
        head::prepare(self.meta.as_ref(), self.datasource, now_ms(), 0).await?;
        Ok(())
    }

    /// The `k`-th hourly record before the day, shaped as the day's (published, visible).
    fn history_record(&self, day: &SegmentRecord, k: u64) -> SegmentRecord {
        let start = self.day - k as i64 * HOUR_MS;
        SegmentRecord {
            interval: Interval::new(start, start + HOUR_MS),
            key: format!("{}/history/{k}", self.datasource),
            task: Some(TaskId { datasource: self.datasource.into(), group: 0, seq: k }),
            summary: None,
            visible: true,
            ..day.clone()
        }
    }

    /// Publishes one more hourly record (the `k`-th before the day).
    async fn publish_one(&self, k: u64) -> Result<()> {
        let pk = sluice_pipeline::keys::datasource_pk(self.datasource);
        let day =
            self.meta.get(&pk, &sluice_pipeline::keys::segment_sk(self.day, "2015-09-12T00:00:00.000Z", 0)).await?;
        let day: SegmentRecord = serde_json::from_value(day.context("the day's record")?.body)?;
        let record = self.history_record(&day, k.max(1));
        // As a task's publish: the record and the group's offsets in one transaction, with the
        // timeline's head and change entry.
        let offsets = self.meta.get(&pk, &offsets_sk(0)).await?.context("the group's offsets")?;
        let mut body: OffsetsItem = serde_json::from_value(offsets.body)?;
        let seq = body.last_seq.unwrap_or(0) + 1;
        body.last_seq = Some(seq);
        let ops = vec![
            TxOp::Put { item: Item::new(&pk, record.sk(), serde_json::to_value(&record)?), condition: Condition::None },
            TxOp::Put {
                item: Item::new(&pk, offsets_sk(0), serde_json::to_value(&body)?),
                condition: Condition::Version(offsets.version),
            },
        ];
        let change = Change::Task {
            task: TaskId { datasource: self.datasource.into(), group: 0, seq },
            merge: record.merge.clone(),
        };
        head::transact_visible(self.meta.as_ref(), self.datasource, ops, change, (&[record.interval], &[]), now_ms())
            .await?;
        Ok(())
    }

    /// Asks the timeseries over the day's first hour through `cache`, metered.
    async fn ask(&self, cache: &SegmentCache) -> Result<Asked> {
        let billing = Arc::new(Billing::default());
        let counting = Arc::new(ItemCount::default());
        let meta = MeteredMeta::new(self.meta.clone(), billing.clone());
        let meta = MeteredMeta::new(Arc::new(meta), counting.clone());
        let query = json!({"queryType": "timeseries", "dataSource": self.datasource, "granularity": "all",
            "intervals": [hour(self.day)], "aggregations": [{"type": "count", "name": "rows"}]});
        let started = Instant::now();
        let answer =
            sluice_query::source::run_query(&meta, self.store.as_ref(), Some(cache), &query.to_string()).await?;
        let millis = started.elapsed().as_secs_f64() * 1e3;
        if answer[0]["result"]["rows"].as_u64().unwrap_or(0) == 0 {
            bail!("{}: the hour answered no rows: {answer}", self.datasource);
        }
        let m = billing.read();
        Ok(Asked { millis, requests: m.meta_requests, read_units: m.read_units, items: counting.items() })
    }
}

/// Counts the items metadata reads return.
#[derive(Debug, Default)]
struct ItemCount(std::sync::atomic::AtomicU64);

impl ItemCount {
    fn items(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl sluice_store::meter::Meter for ItemCount {
    fn record(&self, call: sluice_store::meter::Call, _took: std::time::Duration) {
        if let sluice_store::meter::Call::MetaRead { items, .. } = call {
            self.0.fetch_add(items as u64, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

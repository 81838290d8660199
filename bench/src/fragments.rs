//! `sluice bench fragments`: what compaction buys queries, and what it costs. One day of Druid's
//! Wikipedia sample is published as a stream that publishes every minute leaves it
//! (`--per-chunk` segments per time chunk, 1,440 by default, each a consecutive slice of the
//! chunk's rows in time order) into embedded stores; then a compaction pass (the one `sluice
//! compact` and the compactor function run) compacts it, on one core, through metered stores.
//! Printed: the segments before and after against ceil(rows / `maxRowsPerSegment`), the pass's
//! rows per second and its requests (`bench cost` prices them), and
//! the query benchmark's five queries over both layouts in one run. Both layouts must give the
//! same answers; the run fails if they do not. `--out` writes the figures for `bench cost`.

use super::billing::Billing;
use super::publish::publish_segment;
use super::query::{best_run, queries};
use super::segment::{build_indexes, parse_all};
use super::{default_sample, Sample, TUTORIAL_SPEC};
use anyhow::{bail, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use sluice_format::index::IndexConfig;
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::row::Row;
use sluice_format::segment::Segment;
use sluice_format::spec::load_spec;
use sluice_format::time::{now_ms, Interval};
use sluice_pipeline::coordinator;
use sluice_pipeline::coordinator::{compact, CompactOptions};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::task::TaskId;
use sluice_pipeline::timeline::visible_segments;
use sluice_query::QuerySegment;
use sluice_report::Meters;
use sluice_store::metadata::{open_metadata, MetadataStore, MeteredMeta};
use sluice_store::storage::{open_store, MeteredStore};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Options of `bench fragments`.
#[derive(Args)]
pub struct FragmentsArgs {
    /// Rows of the sample, all moved into its main day (39,244 is the sample once).
    #[arg(long, default_value_t = 39_244)]
    rows: usize,
    /// Segments per time chunk as the stream leaves them (1,440: one a minute for a day).
    #[arg(long, default_value_t = 1_440)]
    per_chunk: usize,
    /// Runs per query; the best is reported.
    #[arg(long, default_value_t = 20)]
    repeat: usize,
    /// The Wikipedia sample (newline-delimited JSON, gzipped).
    #[arg(long)]
    sample: Option<PathBuf>,
    /// Writes the compaction figures (JSON) for `bench cost`.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// What a compaction pass over the fragmented day measured (`bench fragments --out`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRun {
    /// Rows of the day.
    pub rows: u64,
    /// Segments before compaction.
    pub segments_before: u64,
    /// Segments after.
    pub segments_after: u64,
    /// ceil(rows / `maxRowsPerSegment`) per chunk, summed.
    pub segments_target: u64,
    /// Rows merged (more than `rows` when a chunk is compacted in parts).
    pub rows_merged: u64,
    /// Seconds of the pass, on one core.
    pub pass_secs: f64,
    /// Seconds of it spent merging.
    pub merge_secs: f64,
    /// Requests and units of the pass.
    pub meters: Meters,
    /// One read of the fragmented day's timeline (what a query or a pass reads first).
    pub timeline: TimelineRead,
    /// One read of the compacted day's timeline, its replaced records cleaned up.
    pub compacted_timeline: TimelineRead,
}

/// One read of a datasource's visible segment records through metered embedded stores.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineRead {
    /// Records read.
    pub records: u64,
    /// DynamoDB read units the read counts.
    pub read_units: f64,
    /// Seconds it took (reading the embedded store's files and parsing the records).
    pub secs: f64,
}

/// Memory of the compactor function in `template.yaml`.
pub const COMPACTOR_MB: f64 = 2048.0;

/// Runs `bench fragments`.
pub fn run(args: FragmentsArgs) -> Result<()> {
    let sample = args.sample.clone().unwrap_or_else(default_sample);
    let records = Sample::load(&sample)?.records_in_one_day(0, args.rows)?;
    let spec = load_spec(TUTORIAL_SPEC)?.spec;
    let config = IndexConfig::from_spec(&spec);
    let (mut rows, parser) = parse_all(&spec, &records)?;
    rows.sort_by_key(|r| r.time);
    let num_rows = rows.len();
    let dir = tempfile::tempdir()?;
    let options =
        MergeOptions { max_rows_per_segment: spec.tuning.max_rows_per_segment, compression: spec.tuning.index };
    let mut by_chunk: BTreeMap<i64, Vec<Row>> = BTreeMap::new();
    for row in rows {
        by_chunk.entry(config.segment_granularity.bucket(row.time).start).or_default().push(row);
    }
    let target: u64 = by_chunk.values().map(|c| (c.len() as u64).div_ceil(spec.tuning.max_rows_per_segment)).sum();
    let mut fragments: Vec<(Interval, Vec<u8>)> = Vec::new();
    for chunk in by_chunk.into_values() {
        // `per_chunk` consecutive slices of nearly equal size (none empty).
        let n = args.per_chunk.clamp(1, chunk.len());
        for k in 0..n {
            let part = chunk[k * chunk.len() / n..(k + 1) * chunk.len() / n].to_vec();
            for index in build_indexes(&config, part, parser.dimensions()) {
                let hydrant = Segment::from_bytes("hydrant", index.persist(spec.tuning.index)?)?;
                fragments.extend(merge(&[hydrant], &options)?.into_iter().map(|b| (index.interval(), b)));
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (run, fragmented, compacted) =
        runtime.block_on(compact_day(dir.path(), &fragments, num_rows as u64, target))?;

    println!(
        "{num_rows} rows of one day: {} segments as a stream leaves them; compaction left {} (target ceil(rows / maxRowsPerSegment) = {})",
        run.segments_before, run.segments_after, run.segments_target
    );
    println!(
        "compaction pass, one core: {:.2} s ({:.2} s merging), {:.0} rows/s, {} rows merged; {} S3 GETs, {} PUTs, {:.0} DynamoDB read and {:.0} write units (its cost: `bench cost`)",
        run.pass_secs,
        run.merge_secs,
        num_rows as f64 / run.pass_secs,
        run.rows_merged,
        run.meters.s3_gets,
        run.meters.s3_puts,
        run.meters.read_units,
        run.meters.write_units,
    );
    for (when, t) in [("before", &run.timeline), ("after", &run.compacted_timeline)] {
        println!(
            "timeline read {when} the pass: {} records in {:.1} ms ({:.1} µs and {:.2} read units per record)",
            t.records,
            t.secs * 1e3,
            t.secs * 1e6 / t.records.max(1) as f64,
            t.read_units / t.records.max(1) as f64
        );
    }
    if let Some(out) = &args.out {
        std::fs::write(out, serde_json::to_string_pretty(&run)? + "\n")?;
    }
    println!("queries: best of {} runs, one thread", args.repeat);
    println!("{:<52} {:>14} {:>14} {:>9}", "query", "fragmented ms", "compacted ms", "speedup");
    for q in queries() {
        let (many_ms, many) = best_run(&q, &fragmented, args.repeat)?;
        let (few_ms, few) = best_run(&q, &compacted, args.repeat)?;
        if many != few {
            bail!("{}: the two layouts answer differently:\n{many}\n{few}", q.name);
        }
        println!("{:<52} {:>14.2} {:>14.2} {:>8.1}x", q.name, many_ms, few_ms, many_ms / few_ms);
    }
    Ok(())
}

/// Publishes `fragments` as a datasource's visible segments in embedded stores under `dir`,
/// runs a compaction pass through metered stores, and opens both layouts for queries.
async fn compact_day(
    dir: &Path,
    fragments: &[(Interval, Vec<u8>)],
    rows: u64,
    target: u64,
) -> Result<(CompactionRun, Vec<QuerySegment>, Vec<QuerySegment>)> {
    let meta = open_metadata(&format!("file://{}/meta", dir.display())).await?;
    let store = open_store(&format!("file://{}/store", dir.display())).await?;
    let mut spec: serde_json::Value = serde_json::from_str(TUTORIAL_SPEC)?;
    let datasource = "fragments";
    spec["dataSchema"]["dataSource"] = datasource.into();
    submit(meta.as_ref(), spec, now_ms()).await?;
    coordinator::config::submit(
        meta.as_ref(),
        serde_json::json!({"dataSource": datasource, "skipOffsetFromLatest": "PT0S"}),
    )
    .await?;
    let files = dir.join("files");
    std::fs::create_dir_all(&files)?;
    let mut fragmented = Vec::with_capacity(fragments.len());
    for (seq, (interval, bytes)) in fragments.iter().enumerate() {
        let task = TaskId { datasource: datasource.into(), group: 0, seq: seq as u64 };
        let object = bytes::Bytes::from(bytes.clone());
        let at = (*interval, "2015-09-12T00:00:00.000Z", seq as u32);
        publish_segment(meta.as_ref(), store.as_ref(), datasource, at, object, Some(task)).await?;
        fragmented.push(segment_file(&files, &format!("fragment-{seq}"), *interval, bytes.clone())?);
    }
    let timeline = read_timeline(meta.clone(), datasource).await?;
    let billing = Arc::new(Billing::default());
    let metered_meta = MeteredMeta::new(meta.clone(), billing.clone());
    let metered_store = MeteredStore::new(store.clone(), billing.clone());
    let report = compact(&metered_meta, &metered_store, datasource, &CompactOptions::at(now_ms())).await?;
    // Once the grace has passed, a pass cleans up the replaced records: the timeline as it stays.
    let after_grace = CompactOptions { grace_ms: 0, ..CompactOptions::at(now_ms()) };
    compact(meta.as_ref(), store.as_ref(), datasource, &after_grace).await?;
    let compacted_timeline = read_timeline(meta.clone(), datasource).await?;
    let mut compacted = Vec::new();
    for (i, r) in visible_segments(meta.as_ref(), datasource).await?.into_iter().enumerate() {
        let bytes = store.get(&r.key).await?.to_vec();
        compacted.push(segment_file(&files, &format!("compacted-{i}"), r.interval, bytes)?);
    }
    let run = CompactionRun {
        rows,
        segments_before: fragments.len() as u64,
        segments_after: compacted.len() as u64,
        segments_target: target,
        rows_merged: report.rows_compacted,
        pass_secs: report.pass_secs,
        merge_secs: report.merge_secs,
        meters: billing.read(),
        timeline,
        compacted_timeline,
    };
    Ok((run, fragmented, compacted))
}

/// Reads `datasource`'s timeline once through a metered store: its records, units and seconds.
async fn read_timeline(meta: Arc<dyn MetadataStore>, datasource: &str) -> Result<TimelineRead> {
    let billing = Arc::new(Billing::default());
    let metered = MeteredMeta::new(meta, billing.clone());
    let started = std::time::Instant::now();
    let records = visible_segments(&metered, datasource).await?.len() as u64;
    let secs = started.elapsed().as_secs_f64();
    Ok(TimelineRead { records, read_units: billing.read().read_units, secs })
}

fn segment_file(dir: &Path, name: &str, interval: Interval, bytes: Vec<u8>) -> Result<QuerySegment> {
    let path = dir.join(format!("{name}.seg"));
    std::fs::write(&path, bytes)?;
    Ok(QuerySegment { id: name.to_string(), interval, segment: Segment::open_file(&path)? })
}

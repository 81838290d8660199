//! `sluice bench pipeline`: the whole pipeline in this process (supervisor passes, indexers,
//! mergers, publish) on the embedded backends, fed by librdkafka's in-process mock cluster.
//!
//! Three phases, each on fresh stores:
//! 1. indexer only: the speed pass of `bench indexer` on the same number of records;
//! 2. throughput: records produced in waves (the mock cluster keeps about 5 MB per partition),
//!    each wave taken from first record read to last segment published; time split per stage,
//!    peak resident memory, bytes written per row, requests and capacity units per function;
//! 3. steady: records produced at a steady rate while the supervisor runs every period;
//!    freshness (produce to queryable) per record and lag per pass.

use super::rig::{PipelineArgs, Rig, RigTuning};
use super::{default_sample, indexer, realtime_steady, steady, throughput, Sample};
use anyhow::{Context, Result};
use sluice_report::PipelineReport;

/// Runs `bench pipeline`.
pub fn run(args: PipelineArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let report = runtime.block_on(bench(&args))?;
    output(&args, &report, |r| print(&args, r))
}

/// Writes `report` to `--out` when given, and prints it as JSON (`--json`) or with `print`.
pub(super) fn output<T: serde::Serialize>(args: &PipelineArgs, report: &T, print: impl FnOnce(&T)) -> Result<()> {
    if let Some(out) = &args.out {
        std::fs::write(out, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("write {}", out.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print(report);
    }
    Ok(())
}

async fn bench(args: &PipelineArgs) -> Result<PipelineReport> {
    eprintln!("phase 1/3: indexer only, {} records", args.rows);
    let only = indexer::speed_pass(args.sample.as_deref(), args.rows, args.partitions, args.wave).await?;
    let indexer_only = only.rows as f64 / only.task_secs;
    let raw_read = only.rows as f64 / only.raw_secs;
    let sample = Sample::load(&args.sample.clone().unwrap_or_else(default_sample))?;
    eprintln!("phase 2/3: the pipeline, {} records in waves", args.rows);
    let tuning = RigTuning::of(args);
    let mut rig = Rig::start_with(args.partitions, tuning, "wikipedia", None, None).await?;
    let throughput = throughput::run(&mut rig, &sample, args, only.raw_secs / only.rows as f64).await?;
    drop(rig);
    eprintln!("phase 3/3: steady production at {} records/s for {} s", args.rate, args.steady_secs);
    let rig = Rig::start_with(
        args.partitions,
        tuning,
        "wikipedia_steady",
        args.realtime.then_some(args.checkpoint_ms),
        args.broker.as_deref(),
    )
    .await?;
    let steady = if args.realtime {
        realtime_steady::run(&rig, &sample, args, None).await?
    } else {
        steady::run(&rig, &sample, args).await?
    };
    Ok(PipelineReport {
        partitions: args.partitions,
        task_count: args.task_count,
        max_rows_in_memory: args.max_rows_in_memory,
        max_total_rows: args.max_total_rows,
        max_rows_per_segment: args.max_rows_per_segment,
        record_bytes: only.bytes as f64 / only.rows as f64,
        indexer_only_rows_per_sec: indexer_only,
        raw_read_rows_per_sec: raw_read,
        throughput,
        steady,
    })
}

fn print(args: &PipelineArgs, r: &PipelineReport) {
    let t = &r.throughput;
    let e2e = r.end_to_end_rows_per_sec();
    println!(
        "source: librdkafka mock cluster in this process, {} partitions in {} task groups, {} records ({:.0} bytes of JSON each), rollup off",
        r.partitions, r.task_count, t.rows, r.record_bytes
    );
    println!("stores: embedded metadata and local files, metered as DynamoDB and S3 bill them");
    println!();
    println!("{:<48} {:>12}", "rate", "rows/s");
    println!("{:<48} {:>12.0}", "raw consume (empty handler)", r.raw_read_rows_per_sec);
    println!("{:<48} {:>12.0}", "indexer only (Kafka -> hydrants)", r.indexer_only_rows_per_sec);
    println!("{:<48} {:>12.0}", "end to end (first read -> last publish)", e2e);
    println!("end to end / indexer only: {:.0}% (target 70%)", 100.0 * e2e / r.indexer_only_rows_per_sec);
    println!();
    let s = &t.stages;
    let total = s.total();
    println!("{:<44} {:>8} {:>7}", "stage", "secs", "share");
    for (name, secs) in [
        ("consumer open", s.open),
        ("read (raw consume rate)", s.read),
        ("parse + index", s.parse_index),
        ("persist (index -> hydrant bytes, spills)", s.persist),
        ("merge spilled hydrants (indexer)", s.spill_merge),
        ("upload hydrants", s.upload),
        ("checkpoints, claims", s.checkpoint),
        ("merge", s.merge),
        ("merger storage (hydrants in, segments out)", s.merge_storage),
        ("publish (metadata: order, records, txn)", s.publish),
        ("supervisor passes", s.supervisor),
    ] {
        println!("{name:<44} {secs:>8.3} {:>6.1}%", 100.0 * secs / total);
    }
    println!("{:<44} {total:>8.3}", "sum");
    println!();
    let rows = t.rows as f64;
    let f = &t.functions;
    let written = f.indexer.meters.bytes_put + f.merger.meters.bytes_put;
    let meta_bytes = f.indexer.meters.meta_bytes + f.merger.meters.meta_bytes + f.supervisor.meters.meta_bytes;
    println!(
        "peak memory above the process before: {:.0} MiB; {} tasks, {} persists, {} hydrants checkpointed, {} segments",
        t.peak_rss_bytes as f64 / (1 << 20) as f64,
        t.tasks,
        t.persists,
        t.hydrants,
        t.segments
    );
    println!(
        "bytes written per row: {:.1} to the object store (hydrants + segments), {:.1} to metadata; segments hold {:.1} bytes/row",
        written as f64 / rows,
        meta_bytes as f64 / rows,
        t.segment_bytes as f64 / rows
    );
    println!();
    println!(
        "{:<12} {:>6} {:>9} {:>10} {:>10} {:>8} {:>8}",
        "function", "calls", "secs", "read RU", "write RU", "S3 PUT", "S3 GET"
    );
    for (name, u) in [("supervisor", &f.supervisor), ("indexer", &f.indexer), ("merger", &f.merger)] {
        println!(
            "{name:<12} {:>6} {:>9.3} {:>10.0} {:>10.0} {:>8} {:>8}",
            u.invocations, u.secs, u.meters.read_units, u.meters.write_units, u.meters.s3_puts, u.meters.s3_gets
        );
    }
    println!();
    steady::print(args, &r.steady);
}

//! The throughput phase of `bench pipeline`: records produced in waves (the mock cluster keeps
//! about 5 MB per partition), each wave taken from first record read to last segment
//! published; time split per stage, peak resident memory, bytes written per row, requests and
//! capacity units per function.

use super::rig::{PipelineArgs, Rig};
use super::{process, Sample};
use anyhow::{anyhow, bail, Result};
use rdkafka::producer::Producer;
use sluice_pipeline::indexer::TaskOutcome;
use sluice_pipeline::merger::MergeOutcome;
use sluice_pipeline::runner::JobOutcome;
use sluice_pipeline::timeline::visible_segments;
use sluice_report::Throughput;
use std::time::{Duration, Instant};

pub(super) async fn run(
    rig: &mut Rig,
    sample: &Sample,
    args: &PipelineArgs,
    read_secs_per_row: f64,
) -> Result<Throughput> {
    let mut t = Throughput::default();
    let wave_rows = args.wave * rig.partitions as usize;
    let (mut produced, mut read_rows) = (0usize, 0u64);
    let rss_before = process::rss();
    process::reset_peak();
    while produced < args.rows {
        let n = (args.rows - produced).min(wave_rows);
        rig.send(&sample.records_in_one_day(produced, n)?, produced)?;
        rig.producer.flush(Duration::from_secs(60))?;
        produced += n;
        let mut first_read: Option<Instant> = None;
        let mut last_publish = Instant::now();
        let mut caught_up = false;
        for _ in 0..50 {
            let supervisor_secs = t.functions.supervisor.secs;
            let pass = rig.pass(&mut t.functions).await?;
            t.stages.supervisor += t.functions.supervisor.secs - supervisor_secs;
            if pass.caught_up && pass.high_total() == produced as i64 {
                caught_up = true;
                break;
            }
            let stages = &mut t.stages;
            let (mut tasks, mut hydrants, mut persists) = (0u64, 0u64, 0u64);
            rig.drain(&mut t.functions, |_, outcome, used, took| match outcome {
                JobOutcome::Indexed(Ok(outcome @ (TaskOutcome::Complete(r) | TaskOutcome::Incomplete(r)))) => {
                    let started = Instant::now() - took;
                    first_read = Some(first_read.map_or(started, |f| f.min(started)));
                    let read = read_secs_per_row * r.num_records_read as f64;
                    read_rows += r.num_records_read;
                    stages.open += r.times.open.as_secs_f64();
                    stages.read += read;
                    stages.parse_index += (r.times.read_index.as_secs_f64() - read).max(0.0);
                    stages.persist += r.times.persist.as_secs_f64();
                    stages.upload += r.times.upload.as_secs_f64();
                    stages.checkpoint += r.times.metadata.as_secs_f64();
                    stages.spill_merge += r.times.merge.as_secs_f64();
                    persists += r.num_persists;
                    if matches!(outcome, TaskOutcome::Complete(_)) {
                        hydrants += r.hydrants.len() as u64;
                    }
                }
                JobOutcome::Merged(Ok(MergeOutcome::Published { .. })) => {
                    last_publish = Instant::now();
                    tasks += 1;
                    stages.merge += (took.as_secs_f64() - used.store_secs - used.meta_secs).max(0.0);
                    stages.merge_storage += used.store_secs;
                    stages.publish += used.meta_secs;
                }
                _ => {}
            })
            .await?;
            t.tasks += tasks;
            t.hydrants += hydrants;
            t.persists += persists;
        }
        if !caught_up {
            bail!("the pipeline did not catch up with wave ending at record {produced}");
        }
        let first = first_read.ok_or_else(|| anyhow!("no record was read in a wave"))?;
        t.secs += last_publish.duration_since(first).as_secs_f64();
    }
    t.peak_rss_bytes = process::peak_rss().saturating_sub(rss_before);
    let visible = visible_segments(rig.meta.as_ref(), &rig.datasource).await?;
    t.rows = visible.iter().map(|s| s.num_rows).sum();
    if t.rows != args.rows as u64 || read_rows != args.rows as u64 {
        bail!("{} rows published and {read_rows} read of {} produced", t.rows, args.rows);
    }
    t.segments = visible.len() as u64;
    t.segment_bytes = visible.iter().map(|s| s.num_bytes).sum();
    Ok(t)
}

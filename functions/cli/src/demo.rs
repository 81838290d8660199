//! `sluice demo`: the whole path on one machine with nothing installed. An in-process Kafka
//! (librdkafka's mock cluster) receives Druid's Wikipedia sample in a 4-partition topic,
//! Druid's tutorial spec is submitted, the supervisor, indexers and merger run in this process
//! until the committed offsets reach the high watermarks, a compaction pass merges each day's
//! segments into one, and three of Druid's tutorial queries are answered from the compacted
//! segments. Everything lives under
//! `./.sluice/demo`, removed at the start of each run.

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use comfy_table::{presets::UTF8_BORDERS_ONLY, Table};
use indicatif::{ProgressBar, ProgressStyle};
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use serde_json::Value;
use sluice_format::time::now_ms;
use sluice_pipeline::coordinator;
use sluice_pipeline::coordinator::{compact, CompactOptions};
use sluice_pipeline::datasource::submit;
use sluice_pipeline::indexer::TaskOutcome;
use sluice_pipeline::invoker::QueueInvoker;
use sluice_pipeline::merger::MergeOutcome;
use sluice_pipeline::runner::{drain, JobOutcome};
use sluice_pipeline::supervisor::{run_pass, SupervisorOptions};
use sluice_pipeline::timeline::visible_segments;
use sluice_query::{run_query, SegmentCache};
use sluice_store::metadata::open_metadata;
use sluice_store::storage::open_store;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const SAMPLE: &[u8] = include_bytes!("../../../data/wikiticker-2015-09-12-sampled.json.gz");
const SPEC: &str = include_str!("../../../data/specs/wikipedia-kafka-supervisor.json");
const TOP_PAGES: &str = include_str!("../../../data/queries/wikipedia-top-pages.json");
const DELETED_BY_HOUR: &str = include_str!("../../../data/queries/wikipedia-deleted-by-hour.json");
const ROBOT_EDITS: &str = include_str!("../../../data/queries/wikipedia-robot-edits-by-namespace.json");
const TOPIC: &str = "wikipedia";
const PARTITIONS: i32 = 4;

/// Options of `sluice demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Working folder (removed first).
    #[arg(long, default_value = ".sluice/demo")]
    dir: PathBuf,
    /// Prints the query results as Druid's JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Runs `sluice demo`.
pub async fn run(args: DemoArgs) -> Result<()> {
    let started = Instant::now();
    if args.dir.exists() {
        std::fs::remove_dir_all(&args.dir).with_context(|| format!("remove {}", args.dir.display()))?;
    }
    std::fs::create_dir_all(&args.dir).with_context(|| format!("create {}", args.dir.display()))?;
    let root = std::fs::canonicalize(&args.dir)?;
    let meta = open_metadata(&format!("file://{}/metadata", root.display())).await?;
    let store = open_store(&format!("file://{}/storage", root.display())).await?;
    let cache = SegmentCache::new(root.join("cache"));
    eprintln!("sluice demo: working in {}", args.dir.display());

    // 1. Kafka in this process, the sample in a 4-partition topic.
    let step = Instant::now();
    let cluster = MockCluster::new(1).context("start the in-process Kafka")?;
    cluster.create_topic(TOPIC, PARTITIONS, 1).context("create the topic")?;
    let records = produce(&cluster.bootstrap_servers())?;
    println!("1. produced {records} records of Druid's Wikipedia sample into topic {TOPIC:?} ({PARTITIONS} partitions) in {:.2} s", secs(step));

    // 2. Druid's tutorial spec, pointed at this Kafka and at the earliest offsets.
    let step = Instant::now();
    let mut spec: Value = serde_json::from_str(SPEC)?;
    spec["ioConfig"]["consumerProperties"]["bootstrap.servers"] = Value::String(cluster.bootstrap_servers());
    spec["ioConfig"]["useEarliestOffset"] = Value::Bool(true);
    // Tasks of 5,000 records, as a stream publishes them: several segments per day to compact.
    spec["sluiceConfig"] = serde_json::json!({"maxRecordsPerTask": 5_000});
    let (datasource, _, warnings) = submit(meta.as_ref(), spec, now_ms()).await?;
    println!(
        "2. submitted Druid's tutorial spec for datasource {datasource:?} ({} options noted as not applicable) in {:.2} s",
        warnings.len(),
        secs(step)
    );

    // 3. Supervisor passes, indexers and mergers in this process until caught up.
    let step = Instant::now();
    let bar = ProgressBar::new(records);
    bar.set_style(
        ProgressStyle::with_template("   {bar:40} {pos}/{len} records indexed, {msg}").map_err(|e| anyhow!(e))?,
    );
    let queue = QueueInvoker::default();
    let (mut published, mut segments_written) = (0usize, 0usize);
    let mut caught_up = false;
    for _ in 0..200 {
        let options = SupervisorOptions::at(now_ms());
        let passes = run_pass(meta.as_ref(), store.as_ref(), &queue, &options, Some(&datasource)).await?;
        let (_, pass) = passes.into_iter().next().ok_or_else(|| anyhow!("the supervisor skipped {datasource}"))?;
        let pass = pass?;
        if pass.caught_up && !pass.high.is_empty() {
            caught_up = true;
            break;
        }
        drain(meta.as_ref(), store.as_ref(), &queue, Duration::from_secs(600), |_, outcome| match outcome {
            JobOutcome::Indexed(Ok(TaskOutcome::Complete(r) | TaskOutcome::Incomplete(r))) => {
                bar.inc(r.num_records_read)
            }
            JobOutcome::Merged(Ok(MergeOutcome::Published { segments })) => {
                published += 1;
                segments_written += segments.len();
                bar.set_message(format!("{published} tasks published"));
            }
            JobOutcome::Indexed(Err(e)) => bar.suspend(|| eprintln!("indexer: {e}")),
            JobOutcome::Merged(Err(e)) => bar.suspend(|| eprintln!("merger: {e}")),
            _ => {}
        })
        .await;
    }
    bar.finish_and_clear();
    if !caught_up {
        bail!("the pipeline did not catch up after 200 supervisor passes");
    }
    let visible = visible_segments(meta.as_ref(), &datasource).await?;
    let rows: u64 = visible.iter().map(|s| s.num_rows).sum();
    println!(
        "3. indexed and published: {published} tasks, {} visible segments, {rows} rows, offsets committed, in {:.2} s",
        visible.len(),
        secs(step)
    );
    // Druid's auto-compaction with nothing skipped: each day's segments into one.
    let step = Instant::now();
    coordinator::config::submit(
        meta.as_ref(),
        serde_json::json!({"dataSource": datasource, "skipOffsetFromLatest": "PT0S"}),
    )
    .await?;
    let compacted = compact(meta.as_ref(), store.as_ref(), &datasource, &CompactOptions::at(now_ms())).await?;
    println!(
        "   compacted: {} segments of {} time chunks into {}, atomically, in {:.2} s; {} visible segments",
        compacted.segments_compacted,
        compacted.chunks_compacted,
        compacted.segments_written,
        secs(step),
        visible_segments(meta.as_ref(), &datasource).await?.len()
    );

    // 4. Druid's tutorial queries.
    let queries = [
        ("top pages on 2015-09-12 (topN)", TOP_PAGES),
        ("lines deleted per hour (timeseries)", DELETED_BY_HOUR),
        ("robot edits on en/de by namespace, more than 100 (filtered groupBy)", ROBOT_EDITS),
    ];
    for (i, (title, text)) in queries.iter().enumerate() {
        let step = Instant::now();
        let result = run_query(meta.as_ref(), store.as_ref(), Some(&cache), text).await?;
        let took = secs(step);
        println!("\n{}. {title}: {:.1} ms", i + 4, took * 1000.0);
        if args.json {
            println!("{}", serde_json::to_string_pretty(&result)?);
        } else {
            println!("{}", table(&result)?);
        }
    }
    let (total, root) = (secs(started), root.display());
    println!("\ndone in {total:.2} s; query it yourself:");
    println!("  sluice --metadata file://{root}/metadata --storage file://{root}/storage query data/queries/wikipedia-scan.json");
    drop(cluster);
    Ok(())
}

fn secs(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}

/// Produces the sample's records round-robin over the partitions; returns how many.
fn produce(bootstrap: &str) -> Result<u64> {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("compression.type", "lz4")
        .set("linger.ms", "20")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .context("producer")?;
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(SAMPLE));
    let mut n = 0u64;
    for line in reader.lines() {
        let line = line.context("read the sample")?;
        let partition = (n % PARTITIONS as u64) as i32;
        producer
            .send(BaseRecord::<(), String>::to(TOPIC).payload(&line).partition(partition))
            .map_err(|(e, _)| anyhow!("produce: {e}"))?;
        n += 1;
    }
    producer.flush(Duration::from_secs(30)).context("flush the producer")?;
    Ok(n)
}

/// Renders a timeseries, topN or groupBy result as a table.
fn table(result: &Value) -> Result<String> {
    let rows: Vec<(String, &serde_json::Map<String, Value>)> = match result.as_array() {
        Some(items) => {
            let mut rows = Vec::new();
            for item in items {
                let ts = item["timestamp"].as_str().unwrap_or("").to_string();
                match (&item["result"], &item["event"]) {
                    (Value::Array(list), _) => {
                        rows.extend(list.iter().filter_map(Value::as_object).map(|o| (ts.clone(), o)))
                    }
                    (Value::Object(o), _) | (_, Value::Object(o)) => rows.push((ts, o)),
                    _ => bail!("unexpected result shape"),
                }
            }
            rows
        }
        None => bail!("unexpected result shape"),
    };
    let mut table = Table::new();
    table.load_preset(UTF8_BORDERS_ONLY);
    let Some((_, first)) = rows.first() else {
        return Ok("(no rows)".to_string());
    };
    let with_time = rows.iter().any(|(t, _)| t != &rows[0].0);
    let mut header: Vec<String> = if with_time { vec!["timestamp".into()] } else { Vec::new() };
    // Dimensions first: string-valued columns, then the numbers.
    let mut names: Vec<&String> = first.keys().collect();
    names.sort_by_key(|k| !first[*k].is_string());
    header.extend(names.iter().map(|s| s.to_string()));
    table.set_header(header);
    for (i, name) in names.iter().enumerate() {
        if first[*name].is_number() {
            if let Some(column) = table.column_mut(i + usize::from(with_time)) {
                column.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
        }
    }
    for (ts, row) in &rows {
        let mut cells: Vec<String> = if with_time { vec![ts.clone()] } else { Vec::new() };
        cells.extend(names.iter().map(|k| match &row[*k] {
            Value::String(s) => s.clone(),
            Value::Number(n) if n.is_f64() => format!("{:.2}", n.as_f64().unwrap_or(0.0)),
            other => other.to_string(),
        }));
        table.add_row(cells);
    }
    Ok(table.to_string())
}

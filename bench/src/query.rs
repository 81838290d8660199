//! `sluice bench query`: six Druid queries over Druid's Wikipedia sample repeated to ~400k
//! rows (a filtered topN, a timeseries by hour, a groupBy on two dimensions, a full count, a
//! count filtered on one page, a full column sum), on one thread by default or on each of
//! `--threads` in the same run (the answers checked equal), beside the same queries in DuckDB
//! over zstd Parquet and in chdb over a MergeTree table, measured in the same run with the
//! most threads asked (`bench/query_peers.py`, run with `--python`).

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};
use sluice_format::index::IndexConfig;
use sluice_format::merge::{merge, MergeOptions};
use sluice_format::segment::Segment;
use sluice_format::spec::load_spec_value;
use sluice_query::{execute, execute_within, parse_query, PartialCache, Query, QuerySegment};
use std::io::Write;
use std::path::PathBuf;

use super::segment::{build_indexes, export_rows, parse_all};
use super::{default_sample, TUTORIAL_SPEC};

/// Options of `bench query`.
#[derive(Args)]
pub struct QueryArgs {
    /// Rows to generate from the sample.
    #[arg(long, default_value_t = 400_000)]
    rows: usize,
    /// Runs per query; the best is reported.
    #[arg(long, default_value_t = 20)]
    repeat: usize,
    /// The Wikipedia sample (newline-delimited JSON, gzipped).
    #[arg(long)]
    sample: Option<PathBuf>,
    /// A Python with duckdb and chdb installed, for the peers (`bench/query.sh` provides one);
    /// without it only Sluice is measured.
    #[arg(long, env = "SLUICE_BENCH_PYTHON")]
    python: Option<PathBuf>,
    /// String dimensions written without bitmaps (Druid's `createBitmapIndex: false`), e.g.
    /// `comment,page,user`: what the queries cost on that layout.
    #[arg(long, value_delimiter = ',')]
    without_bitmaps: Vec<String>,
    /// Segment granularity instead of the tutorial spec's `DAY`, e.g. `HOUR`: each segment
    /// then holds one hour, as a datasource ingesting thousands of rows a second has them.
    #[arg(long)]
    segment_granularity: Option<String>,
    /// Rows per segment (Druid's `maxRowsPerSegment`): a smaller number gives more segments.
    #[arg(long, default_value_t = 5_000_000)]
    rows_per_segment: u64,
    /// Thread counts to run Sluice's queries with, e.g. `1,2`: each query on a pool of each
    /// size in turn, its answers checked equal; the peers run with the largest.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    threads: Vec<usize>,
    /// Prints one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Records parsed and indexed at a time while the segments are built (appended partitions of
/// the same days, as successive tasks write them), so that memory does not grow with `--rows`.
const BUILD_CHUNK_ROWS: usize = 1_000_000;

/// One benchmark query in Druid JSON, in Druid SQL, and in both peers' SQL.
pub(super) struct BenchQuery {
    pub(super) name: &'static str,
    pub(super) druid: Value,
    sql: &'static str,
    duckdb: &'static str,
    chdb: &'static str,
}

pub(super) fn queries() -> Vec<BenchQuery> {
    let interval = json!(["2015-09-01/2015-10-01"]);
    vec![
        BenchQuery {
            name: "filtered topN (top 10 pages of #en.wikipedia)",
            druid: json!({"queryType": "topN", "dataSource": "wikipedia", "intervals": interval, "granularity": "all",
                "filter": {"type": "selector", "dimension": "channel", "value": "#en.wikipedia"},
                "dimension": "page", "metric": "count", "threshold": 10, "aggregations": [{"type": "count", "name": "count"}]}),
            sql: r#"SELECT page, COUNT(*) AS "count" FROM wikipedia WHERE channel = '#en.wikipedia' GROUP BY page ORDER BY "count" DESC LIMIT 10"#,
            duckdb: "SELECT page, count(*) AS c FROM wiki WHERE channel = '#en.wikipedia' GROUP BY page ORDER BY c DESC, page LIMIT 10",
            chdb: "SELECT page, count(*) AS c FROM wiki WHERE channel = '#en.wikipedia' GROUP BY page ORDER BY c DESC, page LIMIT 10",
        },
        BenchQuery {
            name: "timeseries by hour (count, sum added)",
            druid: json!({"queryType": "timeseries", "dataSource": "wikipedia", "intervals": interval, "granularity": "hour",
                "context": {"skipEmptyBuckets": true},
                "aggregations": [{"type": "count", "name": "count"}, {"type": "longSum", "name": "added", "fieldName": "added"}]}),
            sql: r#"SELECT TIME_FLOOR(__time, 'PT1H') AS h, COUNT(*) AS "count", SUM(added) AS added FROM wikipedia GROUP BY 1"#,
            duckdb: "SELECT date_trunc('hour', __time) AS h, count(*), sum(added) FROM wiki GROUP BY h ORDER BY h",
            chdb: "SELECT toStartOfHour(__time) AS h, count(*), sum(added) FROM wiki GROUP BY h ORDER BY h",
        },
        BenchQuery {
            name: "groupBy channel, namespace (count, sum delta)",
            druid: json!({"queryType": "groupBy", "dataSource": "wikipedia", "intervals": interval, "granularity": "all",
                "dimensions": ["channel", "namespace"],
                "aggregations": [{"type": "count", "name": "count"}, {"type": "longSum", "name": "delta", "fieldName": "delta"}]}),
            sql: r#"SELECT channel, namespace, COUNT(*) AS "count", SUM(delta) AS delta FROM wikipedia GROUP BY channel, namespace"#,
            duckdb: "SELECT channel, namespace, count(*), sum(delta) FROM wiki GROUP BY channel, namespace ORDER BY channel NULLS FIRST, namespace NULLS FIRST",
            chdb: "SELECT channel, namespace, count(*), sum(delta) FROM wiki GROUP BY channel, namespace ORDER BY channel NULLS FIRST, namespace NULLS FIRST",
        },
        BenchQuery {
            name: "count(*) over everything",
            druid: json!({"queryType": "timeseries", "dataSource": "wikipedia", "intervals": interval, "granularity": "all",
                "aggregations": [{"type": "count", "name": "count"}]}),
            sql: r#"SELECT COUNT(*) AS "count" FROM wikipedia"#,
            duckdb: "SELECT count(*) FROM wiki",
            chdb: "SELECT count(*) FROM wiki",
        },
        BenchQuery {
            name: "count of one page (a filter on a 35,000-value dimension)",
            druid: json!({"queryType": "timeseries", "dataSource": "wikipedia", "intervals": interval, "granularity": "all",
                "filter": {"type": "selector", "dimension": "page", "value": "Jeremy Corbyn"},
                "aggregations": [{"type": "count", "name": "count"}]}),
            sql: r#"SELECT COUNT(*) AS "count" FROM wikipedia WHERE page = 'Jeremy Corbyn'"#,
            duckdb: "SELECT count(*) FROM wiki WHERE page = 'Jeremy Corbyn'",
            chdb: "SELECT count(*) FROM wiki WHERE page = 'Jeremy Corbyn'",
        },
        BenchQuery {
            name: "sum(added) over everything (a full column scan)",
            druid: json!({"queryType": "timeseries", "dataSource": "wikipedia", "intervals": interval, "granularity": "all",
                "aggregations": [{"type": "longSum", "name": "added", "fieldName": "added"}]}),
            sql: r#"SELECT SUM(added) AS added FROM wikipedia"#,
            duckdb: "SELECT sum(added) FROM wiki",
            chdb: "SELECT sum(added) FROM wiki",
        },
    ]
}

/// Runs `bench query`.
pub fn run(args: QueryArgs) -> Result<()> {
    let threads: Vec<usize> = args.threads.iter().copied().filter(|&t| t > 0).collect();
    if threads.is_empty() {
        bail!("--threads: expected at least one thread count above 0");
    }
    let dir = tempfile::tempdir()?;
    let (segments, num_rows) = build_segments(&args, dir.path())?;
    let segment_bytes: usize = segments.iter().map(|s| s.segment.size()).sum();
    let segments = std::sync::Arc::new(segments);

    let list = queries();
    let mut sluice: Vec<Vec<(f64, Value)>> = Vec::new();
    for &t in &threads {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build()?;
        let runs =
            pool.install(|| list.iter().map(|q| best_run(q, &segments, args.repeat)).collect::<Result<Vec<_>>>())?;
        if let Some(first) = sluice.first() {
            for ((q, (_, want)), (_, got)) in list.iter().zip(first).zip(&runs) {
                if want != got {
                    bail!("{}: {t} threads answered differently from {}: {got} against {want}", q.name, threads[0]);
                }
            }
        }
        sluice.push(runs);
    }
    let one = rayon::ThreadPoolBuilder::new().num_threads(threads[0]).build()?;
    let sql = one.install(|| {
        list.iter()
            .map(|q| super::query_sql::measure(q.sql, &q.druid, segments.clone(), args.repeat))
            .collect::<Result<Vec<_>>>()
    })?;

    let most = threads.iter().copied().max().unwrap_or(1);
    let peers = match &args.python {
        None => None,
        Some(python) => Some(run_peers(python, &segments, &list, args.repeat, most, dir.path())?),
    };
    let read_bytes = list
        .iter()
        .map(|q| Ok(super::read_bytes::of(&parse_query(&q.druid.to_string())?, &segments)))
        .collect::<Result<Vec<_>>>()?;
    let layout =
        Layout { rows: num_rows, segments: segments.len(), bytes: segment_bytes, threads: threads.clone(), read_bytes };
    let most_pool = rayon::ThreadPoolBuilder::new().num_threads(most).build()?;
    let growth = most_pool.install(|| growing(&list, &segments, args.repeat))?;
    report(&args, &layout, &list, &sluice, &sql, peers.as_ref(), &growth)
}

/// A dashboard query repeated while its datasource grows, with the per-segment partial cache.
struct Growth {
    query: &'static str,
    /// Without the cache, over every segment.
    uncached_ms: f64,
    /// With the cache after a run over the first nine tenths of the segments: the rest new.
    grown_ms: f64,
    grown_hits: u64,
    grown_misses: u64,
    /// Repeated over the same segments: every segment from the cache.
    repeat_ms: f64,
}

/// Runs the aggregation queries of `list` as a dashboard would while the datasource grows
/// by a tenth: the answers checked equal to uncached ones.
fn growing(list: &[BenchQuery], segments: &[QuerySegment], repeat: usize) -> Result<Vec<Growth>> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3600);
    let old = segments.len() - segments.len() / 10;
    let mut out = Vec::new();
    for q in list.iter().filter(|q| q.druid["queryType"] != "timeseries" || q.druid["granularity"] != "all") {
        let query: Query = parse_query(&q.druid.to_string())?;
        let (uncached, want) = super::best(repeat, || Ok(execute(&query, segments)?))?;
        let (mut grown, mut hits, mut misses) = (f64::INFINITY, 0, 0);
        for _ in 0..repeat.max(1) {
            let cache = std::sync::Arc::new(PartialCache::default());
            execute_within(&query, &segments[..old], deadline, 3_600_000, Some(&cache))?;
            let before = cache.stats();
            let start = std::time::Instant::now();
            let got = execute_within(&query, segments, deadline, 3_600_000, Some(&cache))?;
            grown = grown.min(start.elapsed().as_secs_f64() * 1000.0);
            if got != want {
                bail!("{}: the cached answer differs: {got} against {want}", q.name);
            }
            let after = cache.stats();
            (hits, misses) = (after.hits - before.hits, after.misses - before.misses);
        }
        let cache = std::sync::Arc::new(PartialCache::default());
        execute_within(&query, segments, deadline, 3_600_000, Some(&cache))?;
        let (again, _) =
            super::best(repeat, || Ok(execute_within(&query, segments, deadline, 3_600_000, Some(&cache))?))?;
        out.push(Growth {
            query: q.name,
            uncached_ms: uncached.as_secs_f64() * 1000.0,
            grown_ms: grown,
            grown_hits: hits,
            grown_misses: misses,
            repeat_ms: again.as_secs_f64() * 1000.0,
        });
    }
    Ok(out)
}

fn growth_json(growth: &[Growth]) -> Value {
    growth
        .iter()
        .map(|g| {
            json!({"query": g.query, "uncached_ms": g.uncached_ms, "grown_ms": g.grown_ms,
                   "grown_hit_rate": g.grown_hits as f64 / (g.grown_hits + g.grown_misses).max(1) as f64,
                   "repeat_ms": g.repeat_ms})
        })
        .collect()
}

fn print_growth(growth: &[Growth]) {
    println!(
        "per-segment partial cache: a query repeated after the datasource grew by a tenth of its segments, then again"
    );
    println!(
        "  {:<52} {:>12} {:>10} {:>9} {:>11} {:>10}",
        "query", "uncached ms", "grown ms", "hit rate", "repeat ms", "uncached/repeat"
    );
    for g in growth {
        println!(
            "  {:<52} {:>12.2} {:>10.2} {:>8.0}% {:>11.2} {:>9.1}x",
            g.query,
            g.uncached_ms,
            g.grown_ms,
            100.0 * g.grown_hits as f64 / (g.grown_hits + g.grown_misses).max(1) as f64,
            g.repeat_ms,
            g.uncached_ms / g.repeat_ms
        );
    }
}

/// The benchmark's segments, written under `dir` and memory-mapped, in time order, and the
/// number of rows they hold.
fn build_segments(args: &QueryArgs, dir: &std::path::Path) -> Result<(Vec<QuerySegment>, usize)> {
    let sample = args.sample.clone().unwrap_or_else(default_sample);
    build_files(
        &sample,
        args.rows,
        args.rows_per_segment,
        args.segment_granularity.as_deref(),
        &args.without_bitmaps,
        dir,
    )
}

/// Segments of `rows` rows of the sample (each copy shifted within its day) in files under
/// `dir`, at most `rows_per_segment` rows each, in time order: the segments and the rows.
pub(super) fn build_files(
    sample: &std::path::Path,
    rows: usize,
    rows_per_segment: u64,
    segment_granularity: Option<&str>,
    without_bitmaps: &[String],
    dir: &std::path::Path,
) -> Result<(Vec<QuerySegment>, usize)> {
    let sample = super::Sample::load(sample)?;
    let mut raw: Value = serde_json::from_str(TUTORIAL_SPEC)?;
    if let Some(g) = segment_granularity {
        raw["dataSchema"]["granularitySpec"]["segmentGranularity"] = json!(g);
    }
    let spec = load_spec_value(raw)?.spec;
    let config = IndexConfig::from_spec(&spec);
    let options = MergeOptions { max_rows_per_segment: rows_per_segment.max(1), compression: spec.tuning.index };
    let (mut segments, mut num_rows) = (Vec::new(), 0);
    let mut first = 0;
    while first < rows {
        let n = BUILD_CHUNK_ROWS.min(rows - first);
        let (parsed, parser) = parse_all(&spec, &sample.records(first, n)?)?;
        num_rows += parsed.len();
        let plans = super::segment::without_bitmaps(parser.dimensions(), without_bitmaps);
        for (i, index) in build_indexes(&config, parsed, &plans).iter().enumerate() {
            let hydrant = Segment::from_bytes("hydrant", index.persist(spec.tuning.index)?)?;
            for (p, bytes) in merge(&[hydrant], &options)?.into_iter().enumerate() {
                let path = dir.join(format!("segment-{first}-{i}-{p}.seg"));
                std::fs::write(&path, bytes)?;
                let interval = index.interval();
                let id = format!("wikipedia_{interval}_{}", segments.len());
                segments.push(QuerySegment { id, interval, segment: Segment::open_file(&path)? });
            }
        }
        first += n;
    }
    segments.sort_by_key(|s| s.interval);
    Ok((segments, num_rows))
}

/// The best time of `repeat` runs of `q` over `segments`, in ms, and its answer.
pub(super) fn best_run(q: &BenchQuery, segments: &[QuerySegment], repeat: usize) -> Result<(f64, Value)> {
    let query: Query = parse_query(&q.druid.to_string())?;
    let (took, answer) = super::best(repeat, || Ok(execute(&query, segments)?))?;
    Ok((took.as_secs_f64() * 1000.0, answer))
}

fn run_peers(
    python: &PathBuf,
    segments: &[QuerySegment],
    list: &[BenchQuery],
    repeat: usize,
    threads: usize,
    dir: &std::path::Path,
) -> Result<Value> {
    let rows_path = dir.join("rows.ndjson");
    let mut all = std::fs::File::create(&rows_path)?;
    for (i, s) in segments.iter().enumerate() {
        let part = dir.join(format!("rows-{i}.ndjson"));
        export_rows(&s.segment, &part)?;
        all.write_all(&std::fs::read(&part)?)?;
    }
    drop(all);
    let sql: serde_json::Map<String, Value> =
        list.iter().map(|q| (q.name.to_string(), json!({"duckdb": q.duckdb, "chdb": q.chdb}))).collect();
    let sql_path = dir.join("queries.json");
    std::fs::write(&sql_path, Value::Object(sql).to_string())?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/query_peers.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(&rows_path)
        .arg(&sql_path)
        .arg(repeat.to_string())
        .arg(threads.to_string())
        .output()
        .with_context(|| format!("run {}", python.display()))?;
    if !out.status.success() {
        bail!("the peers failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).context("the peers' output")
}

/// The first row of a Sluice answer, as the peers print theirs.
fn first_row(answer: &Value) -> Vec<String> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let first = &answer[0];
    if let Some(list) = first["result"].as_array() {
        return list.first().and_then(Value::as_object).map(|o| o.values().map(text).collect()).unwrap_or_default();
    }
    let obj = first["result"].as_object().or_else(|| first["event"].as_object());
    obj.map(|o| o.values().map(text).collect()).unwrap_or_default()
}

/// The rows and segments the queries run over, and the thread counts they ran with.
struct Layout {
    rows: usize,
    segments: usize,
    bytes: usize,
    threads: Vec<usize>,
    /// What each query reads as a worker reads a large segment (`read_bytes::of`).
    read_bytes: Vec<super::read_bytes::ReadCost>,
}

fn report(
    args: &QueryArgs,
    layout: &Layout,
    list: &[BenchQuery],
    sluice: &[Vec<(f64, Value)>],
    sql: &[super::query_sql::SqlTimes],
    peers: Option<&Value>,
    growth: &[Growth],
) -> Result<()> {
    let (rows, num_segments, segment_bytes, threads) = (layout.rows, layout.segments, layout.bytes, &layout.threads);
    let mut results = Vec::new();
    for (i, (q, s)) in list.iter().zip(sql).enumerate() {
        let (ms, answer) = &sluice[0][i];
        let by_threads: Vec<Value> =
            threads.iter().zip(sluice).map(|(t, runs)| json!({"threads": t, "ms": runs[i].0})).collect();
        let fastest = sluice.iter().map(|runs| runs[i].0).fold(f64::INFINITY, f64::min);
        let most = sluice.last().map_or(*ms, |runs| runs[i].0);
        let peer = peers.map(|p| &p["queries"][q.name]);
        let duckdb_ms = peer.and_then(|p| p["duckdb_ms"].as_f64());
        let chdb_ms = peer.and_then(|p| p["chdb_ms"].as_f64());
        results.push(json!({
            "query": q.name, "sluice_ms": ms, "duckdb_ms": duckdb_ms, "chdb_ms": chdb_ms,
            "sluice_by_threads": by_threads, "speedup": ms / most, "sluice_best_ms": fastest,
            "sluice_rows_per_sec": rows as f64 / (ms / 1000.0),
            "read_bytes_per_row": layout.read_bytes[i].bytes_per_row,
            "read_gets_per_segment": layout.read_bytes[i].gets_per_segment,
            "read_runs_per_segment": layout.read_bytes[i].runs_per_segment,
            "sql": q.sql, "sql_query_type": s.query_type, "sql_rows": s.rows,
            "sql_ms": s.total_ms, "sql_plan_ms": s.plan_ms, "sql_catalog_ms": s.catalog_ms, "sql_over_native": s.total_ms / ms,
            "native_served_ms": s.native_served_ms, "sql_over_native_served": s.total_ms / s.native_served_ms,
            "sluice_first": first_row(answer),
            "duckdb_first": peer.map(|p| p["duckdb_first"].clone()),
            "chdb_first": peer.map(|p| p["chdb_first"].clone()),
        }));
    }
    let out = json!({
        "rows": rows, "segments": num_segments, "segment_bytes": segment_bytes, "repeat": args.repeat,
        "threads": threads, "duckdb": peers.map(|p| p["duckdb_version"].clone()), "chdb": peers.map(|p| p["chdb_version"].clone()),
        "parquet_bytes": peers.map(|p| p["parquet_bytes"].clone()), "peer_rows": peers.map(|p| p["rows"].clone()),
        "queries": results, "partial_cache": growth_json(growth),
    });
    if let Some(p) = peers {
        if p["rows"].as_u64() != Some(rows as u64) {
            return Err(anyhow!("the peers loaded {} rows, Sluice {rows}", p["rows"]));
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let most = threads.iter().copied().max().unwrap_or(1);
    println!(
        "{rows} rows (Druid's Wikipedia sample repeated), {num_segments} segments, {:.1} MB; best of {} runs; \
         sluice on {threads:?} threads, peers on {most}",
        segment_bytes as f64 / 1e6,
        args.repeat
    );
    if let Some(p) = peers {
        println!(
            "peers in the same run: DuckDB {} over zstd Parquet ({:.1} MB), chdb {} over MergeTree",
            p["duckdb_version"].as_str().unwrap_or("?"),
            p["parquet_bytes"].as_f64().unwrap_or(0.0) / 1e6,
            p["chdb_version"].as_str().unwrap_or("?")
        );
    }
    let heads: Vec<String> = threads.iter().map(|t| format!("ms @{t}")).collect();
    println!(
        "{:<52} {} {:>9} {:>10} {:>10} {:>14} {:>12}",
        "query",
        heads.iter().map(|h| format!("{h:>9}")).collect::<Vec<_>>().join(" "),
        "speedup",
        "duckdb ms",
        "chdb ms",
        "duckdb/sluice",
        "chdb/sluice"
    );
    for (r, i) in out["queries"].as_array().into_iter().flatten().zip(0..) {
        // The peers ran with the most threads: compared with Sluice's run on as many.
        let ms = sluice.last().map_or(0.0, |runs| runs[i].0);
        let cell = |k: &str| r[k].as_f64().map_or("-".to_string(), |v| format!("{v:.2}"));
        let ratio = |k: &str| r[k].as_f64().map_or("-".to_string(), |v| format!("{:.2}x", v / ms));
        let times: Vec<String> = sluice.iter().map(|runs| format!("{:>9.2}", runs[i].0)).collect();
        println!(
            "{:<52} {} {:>8.2}x {:>10} {:>10} {:>14} {:>12}",
            r["query"].as_str().unwrap_or(""),
            times.join(" "),
            r["speedup"].as_f64().unwrap_or(0.0),
            cell("duckdb_ms"),
            cell("chdb_ms"),
            ratio("duckdb_ms"),
            ratio("chdb_ms")
        );
    }
    println!(
        "Druid SQL form of each query, same run (native served: its JSON parsed, the engine on a blocking thread, as the API serves both)"
    );
    println!(
        "  {:<52} {:>8} {:>10} {:>10} {:>15} {:>8} {:>10}",
        "query", "sql ms", "sql/native", "served ms", "sql/served", "plan ms", "columns ms"
    );
    for r in out["queries"].as_array().into_iter().flatten() {
        let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
        println!(
            "  {:<52} {:>8.2} {:>9.2}x {:>10.2} {:>14.2}x {:>8.3} {:>10.3}",
            r["query"].as_str().unwrap_or("").chars().take(52).collect::<String>(),
            f("sql_ms"),
            f("sql_over_native"),
            f("native_served_ms"),
            f("sql_over_native_served"),
            f("sql_plan_ms"),
            f("sql_catalog_ms"),
        );
        println!("    planned as {}: {}", r["sql_query_type"].as_str().unwrap_or(""), r["sql"].as_str().unwrap_or(""));
    }
    for r in out["queries"].as_array().into_iter().flatten() {
        println!(
            "  {}: sluice {:.0} M rows/s; read by its parts: {:.2} bytes/row, {:.1} GETs and {:.1} runs of parts per segment; first row sluice {} duckdb {} chdb {}",
            r["query"].as_str().unwrap_or(""),
            r["sluice_rows_per_sec"].as_f64().unwrap_or(0.0) / 1e6,
            r["read_bytes_per_row"].as_f64().unwrap_or(0.0),
            r["read_gets_per_segment"].as_f64().unwrap_or(0.0),
            r["read_runs_per_segment"].as_f64().unwrap_or(0.0),
            r["sluice_first"],
            r["duckdb_first"],
            r["chdb_first"]
        );
    }
    print_growth(growth);
    Ok(())
}

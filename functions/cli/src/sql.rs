//! `sluice sql "SELECT ..."` (or `-` for standard input): answers Druid SQL against the
//! visible segments of the configured backends and prints a table, or the rows in one of
//! Druid's result formats.

use crate::backends::BackendArgs;
use anyhow::{anyhow, Result};
use clap::Args;
use sluice_query::SegmentCache;
use sluice_sql::{run_sql, ResultFormat, SqlRequest, StoreSegments};
use std::path::PathBuf;

/// Options of `sluice sql`.
#[derive(Args)]
pub struct SqlArgs {
    /// The SQL text, or `-` to read it from standard input.
    sql: String,
    /// `table` (default), or a Druid result format: object, array, objectLines, arrayLines, csv.
    #[arg(long, default_value = "table")]
    format: String,
    /// With a result format: a first row of column names (and `--types` rows).
    #[arg(long)]
    header: bool,
    /// With `--header`: rows of native and SQL types.
    #[arg(long)]
    types: bool,
    /// Query context entries, `key=value` (a JSON value or a string), e.g. `timeout=10000`.
    #[arg(long = "context", value_name = "KEY=VALUE")]
    context: Vec<String>,
    /// Where downloaded segments are kept.
    #[arg(long, env = "SLUICE_CACHE", default_value = ".sluice/cache")]
    cache: PathBuf,
    /// Reads only the parts of each segment the query needs, with ranged reads.
    #[arg(long)]
    no_cache: bool,
}

/// Runs `sluice sql`.
pub async fn run(args: SqlArgs, backends: &BackendArgs) -> Result<()> {
    let text = if args.sql == "-" { crate::input::read_text(std::path::Path::new("-"))? } else { args.sql.clone() };
    let mut request = SqlRequest::new(text);
    for entry in &args.context {
        let (key, value) = entry.split_once('=').ok_or_else(|| anyhow!("--context {entry:?}: expected KEY=VALUE"))?;
        let value = serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
        request.context.insert(key.to_string(), value);
    }
    let table = args.format == "table";
    if !table {
        request.result_format = ResultFormat::from_name(&args.format).ok_or_else(|| {
            anyhow!("--format {:?}: expected table, object, array, objectLines, arrayLines or csv", args.format)
        })?;
        (request.header, request.types_header, request.sql_types_header) = (args.header, args.types, args.types);
    }
    let b = backends.open().await?;
    let cache = (!args.no_cache).then(|| SegmentCache::new(args.cache));
    let segments = StoreSegments::new(b.meta.as_ref(), b.store.as_ref(), cache.as_ref());
    let source = sluice_http::sql_system::WithIngestion::new(&segments, b.meta.as_ref());
    let result = run_sql(&source, &request).await?;
    if !table {
        print!("{}", result.render(&request));
        if matches!(request.result_format, ResultFormat::Object | ResultFormat::Array) {
            println!();
        }
        return Ok(());
    }
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header(result.columns.iter().map(|c| c.name.clone()));
    for row in &result.rows {
        t.add_row(row.iter().map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => "null".to_string(),
            other => other.to_string(),
        }));
    }
    println!("{t}");
    println!("({} row{})", result.rows.len(), if result.rows.len() == 1 { "" } else { "s" });
    Ok(())
}

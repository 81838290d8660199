//! The SQL form of each `bench query` query, measured beside its native form: planning alone
//! (parse, and plan against the datasource's columns), reading the columns from the segments'
//! directories, and the whole SQL answer (columns, plan, native query, rows typed for SQL).

use anyhow::Result;
use sluice_query::QuerySegment;
use sluice_sql::{run_sql, MemorySegments, SqlRequest};
use std::sync::Arc;

/// Times of one SQL query, in milliseconds (best of the runs), and what it planned into.
pub(super) struct SqlTimes {
    /// Parse and plan, the columns known.
    pub plan_ms: f64,
    /// The datasource's columns read from its segments' directories.
    pub catalog_ms: f64,
    /// The whole answer.
    pub total_ms: f64,
    /// The native form served the same way (its JSON parsed, the engine on a blocking thread
    /// of the same runtime, as the API serves both).
    pub native_served_ms: f64,
    /// Rows answered.
    pub rows: usize,
    /// The native query type planned.
    pub query_type: String,
}

/// Measures `sql` over `segments` (datasource `wikipedia`), and `native` served alike.
pub(super) fn measure(
    sql: &str,
    native: &serde_json::Value,
    segments: Arc<Vec<QuerySegment>>,
    repeat: usize,
) -> Result<SqlTimes> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut source = MemorySegments::default();
    source.tables.insert("wikipedia".into(), segments);
    let request = SqlRequest::new(sql);
    let parsed = sluice_sql::parse::parse(sql, &[])?;
    let (catalog, schemas) = super::best(repeat, || {
        Ok(runtime.block_on(sluice_sql::schemas(&source, &parsed.query, &parsed.lookup_names))?)
    })?;
    let (plan, planned) = super::best(repeat, || {
        let parsed = sluice_sql::parse::parse(sql, &[])?;
        Ok(sluice_sql::plan(&parsed.query, &schemas, &request)?)
    })?;
    let (total, answer) = super::best(repeat, || Ok(runtime.block_on(run_sql(&source, &request))?))?;
    let text = native.to_string();
    let (served, _) = super::best(repeat, || {
        let query = sluice_query::parse_query(&text)?;
        let segments = source.tables["wikipedia"].clone();
        Ok(runtime.block_on(runtime.spawn_blocking(move || sluice_query::execute(&query, &segments)))??)
    })?;
    let query_type = planned.native.as_ref().and_then(|n| n["queryType"].as_str()).unwrap_or("none").to_string();
    Ok(SqlTimes {
        plan_ms: plan.as_secs_f64() * 1000.0,
        catalog_ms: catalog.as_secs_f64() * 1000.0,
        total_ms: total.as_secs_f64() * 1000.0,
        native_served_ms: served.as_secs_f64() * 1000.0,
        rows: answer.rows.len(),
        query_type,
    })
}

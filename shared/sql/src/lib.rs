//! Druid SQL over Sluice's segments, as Druid's broker answers `POST /druid/v2/sql`.
//!
//! ```text
//!  request JSON -> SqlRequest (query, resultFormat, header flags, parameters, context)
//!  SQL text --sqlparser--> one SELECT, `?` bound, EXPLAIN PLAN FOR noted          (parse)
//!  tables named -> their columns from the visible segments' directories         (catalog)
//!  SELECT -> Plan: one native query over a datasource, a subquery's rows or a
//!            metadata table, and how each result column is read                   (plan)
//!  native query -> sluice-query's engine -> rows typed for SQL                    (execute)
//!  rows -> object / array / objectLines / arrayLines / csv                         (output)
//! ```

pub mod catalog;
mod ctes;
mod error;
pub mod execute;
pub mod ingestion;
pub mod inline;
pub mod measure;
pub mod output;
pub mod parse;
pub mod plan;
pub mod request;
pub mod servers;
pub mod system;
pub mod types;
mod union_all;
mod window;

pub use error::SqlError;
pub use output::SqlResult;
pub use request::{ResultFormat, SqlRequest};

use catalog::Schemas;
pub use catalog::Table;
pub use ingestion::{SupervisorRow, TaskRow};
use plan::{object_path, Input, Options, Plan};
use serde_json::{json, Value};
pub use servers::ServerRow;
use sluice_format::lookup::Lookups;
use sluice_format::time::{Interval, ETERNITY_END, ETERNITY_START};
use sluice_query::{QueryError, QuerySegment, ReadPlan, SegmentCache};
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::collections::BTreeSet;
use std::sync::Arc;
use system::SystemTable;
use types::{Column, SqlType};

/// Where SQL reads segments from.
#[async_trait::async_trait]
pub trait Segments: Send + Sync {
    /// The datasources.
    async fn datasources(&self) -> Result<Vec<String>, SqlError>;
    /// The visible segments of `datasource` overlapping `intervals`, with the parts `plan`
    /// names readable (all when `None`; [`ReadPlan::directory_only`] reads only the
    /// directories).
    async fn segments(
        &self,
        datasource: &str,
        intervals: &[Interval],
        plan: Option<&ReadPlan>,
    ) -> Result<Arc<Vec<QuerySegment>>, SqlError>;
    /// The per-segment partial cache for the segments [`Segments::segments`] returns, when
    /// they are immutable under their object names (deep storage's).
    fn partials(&self) -> Option<Arc<sluice_query::PartialCache>> {
        None
    }
    /// The table of `datasource` (`None`: it has no visible segment); by default from
    /// [`Segments::segments`] over all time with no column readable.
    async fn table(&self, datasource: &str) -> Result<Option<Arc<Table>>, SqlError> {
        let eternity = [Interval::new(ETERNITY_START, ETERNITY_END)];
        let segments = self.segments(datasource, &eternity, Some(&ReadPlan::directory_only())).await?;
        Ok(Table::of(datasource, &segments).map(Arc::new))
    }
    /// Answers `native`, a timeseries, topN or groupBy of a deep-storage table, when this
    /// source fans such queries out to query workers (Druid's JSON result); `None`: the query
    /// is run here over [`Segments::segments`].
    async fn fan_out(&self, _native: &str) -> Option<Result<Value, SqlError>> {
        None
    }
    /// The supervisors, for `sys.supervisors`: a source that reads ingestion's metadata gives
    /// them; by default the table is refused by name.
    async fn supervisors(&self) -> Result<Vec<SupervisorRow>, SqlError> {
        Err(SqlError::unsupported("sys.supervisors here (`sluice serve`, `sluice sql` and the api function serve it)"))
    }
    /// The tasks, live and recently finished, for `sys.tasks` (refused by default, as
    /// [`Segments::supervisors`]).
    async fn tasks(&self) -> Result<Vec<TaskRow>, SqlError> {
        Err(SqlError::unsupported("sys.tasks here (`sluice serve`, `sluice sql` and the api function serve it)"))
    }
    /// The servers, for `sys.servers` and `sys.server_segments`: by default this process,
    /// reading every segment itself.
    fn servers(&self) -> Vec<ServerRow> {
        ServerRow::in_process(&servers::this_process())
    }
    /// The lookups of Druid's default tier among `names` (what a query could name a lookup by:
    /// [`parse::lookup_names`]), each at one version; none by default.
    async fn lookups(&self, _names: &BTreeSet<String>) -> Result<Arc<Lookups>, SqlError> {
        Ok(Arc::default())
    }
}

/// The stores' segments for one request: the metadata store's timelines and deep storage,
/// through a cache. With a cache, a datasource's segments opened whole to read its columns
/// are kept for the query that follows (the engine picks those in its intervals), so the
/// timeline is read once per request.
pub struct StoreSegments<'a> {
    meta: &'a dyn MetadataStore,
    store: &'a dyn ObjectStore,
    cache: Option<&'a SegmentCache>,
    opened: std::sync::Mutex<std::collections::BTreeMap<String, Arc<Vec<QuerySegment>>>>,
}

impl<'a> StoreSegments<'a> {
    /// Segments of `meta`'s timelines in `store`, downloaded into `cache` when given (else
    /// only the parts a query needs, with ranged reads).
    pub fn new(meta: &'a dyn MetadataStore, store: &'a dyn ObjectStore, cache: Option<&'a SegmentCache>) -> Self {
        Self { meta, store, cache, opened: Default::default() }
    }
}

#[async_trait::async_trait]
impl Segments for StoreSegments<'_> {
    async fn datasources(&self) -> Result<Vec<String>, SqlError> {
        sluice_metastore::datasource::list(self.meta)
            .await
            .map_err(|e| SqlError::Query(QueryError::Source(e.to_string())))
    }

    async fn segments(
        &self,
        datasource: &str,
        intervals: &[Interval],
        plan: Option<&ReadPlan>,
    ) -> Result<Arc<Vec<QuerySegment>>, SqlError> {
        let known = self.opened.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(datasource).cloned();
        if let Some(whole) = known {
            return Ok(whole);
        }
        let segments =
            sluice_query::load_segments(self.meta, self.store, self.cache, datasource, intervals, plan).await?;
        let segments = Arc::new(segments);
        // Opened whole from the cache, over all time: good for any query of this request.
        let all_time = intervals.iter().any(|i| i.start <= ETERNITY_START && i.end >= ETERNITY_END);
        if self.cache.is_some() && all_time {
            let mut o = self.opened.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            o.insert(datasource.to_string(), segments.clone());
        }
        Ok(segments)
    }

    fn partials(&self) -> Option<Arc<sluice_query::PartialCache>> {
        self.cache.map(|c| c.partials().clone())
    }

    async fn lookups(&self, names: &BTreeSet<String>) -> Result<Arc<Lookups>, SqlError> {
        let fresh = sluice_metastore::lookups::LookupCache::default();
        let cache = self.cache.map(|c| c.lookups().as_ref()).unwrap_or(&fresh);
        let tier = sluice_metastore::lookups::DEFAULT_TIER;
        let (lookups, _) = sluice_metastore::lookups::load(self.meta, self.store, cache, tier, names)
            .await
            .map_err(|e| SqlError::Query(QueryError::Source(e.to_string())))?;
        Ok(lookups)
    }
}

/// Segments held in memory, by datasource, and lookups: for tests and benchmarks.
#[derive(Default)]
pub struct MemorySegments {
    /// Each datasource's segments.
    pub tables: std::collections::BTreeMap<String, Arc<Vec<QuerySegment>>>,
    /// The lookups.
    pub lookups: Arc<Lookups>,
}

#[async_trait::async_trait]
impl Segments for MemorySegments {
    async fn datasources(&self) -> Result<Vec<String>, SqlError> {
        Ok(self.tables.keys().cloned().collect())
    }

    async fn segments(
        &self,
        datasource: &str,
        _intervals: &[Interval],
        _plan: Option<&ReadPlan>,
    ) -> Result<Arc<Vec<QuerySegment>>, SqlError> {
        Ok(self.tables.get(datasource).cloned().unwrap_or_default())
    }

    async fn lookups(&self, _names: &BTreeSet<String>) -> Result<Arc<Lookups>, SqlError> {
        Ok(self.lookups.clone())
    }
}

/// Text cut for an error message.
pub(crate) fn short(text: &str) -> std::borrow::Cow<'_, str> {
    sluice_format::text::excerpt(text, 120)
}

/// Answers a SQL request: parses, reads the schemas of the tables it names, plans, runs. The
/// parse and the plans run on the runtime's blocking threads, where the request's timeout
/// answers (the parse's rewrites stop at it; a plan is bounded by the tree the parse measured);
/// the rows the request returns (every branch of a `UNION ALL` together) are bounded by one
/// [`inline::AnswerBounds`].
pub async fn run_sql(source: &dyn Segments, request: &SqlRequest) -> Result<SqlResult, SqlError> {
    let timeout_ms = sluice_query::model::timeout_ms(&request.context)?;
    let bounds = inline::SubqueryBounds::from_context(&request.context)?;
    let mut answer = inline::AnswerBounds::from_context(&request.context)?;
    let deadline =
        execute::Deadline { at: std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms), timeout_ms };
    let request = Arc::new(request.clone());
    let work = async {
        let parsed = off_runtime({
            let request = request.clone();
            move || parse::parse_within(&request.query, &request.parameters, deadline.at, deadline.timeout_ms)
        })
        .await?;
        if let Some(branches) = union_all::branches(&parsed.query)? {
            if parsed.explain {
                return Err(SqlError::unsupported("EXPLAIN of a UNION ALL (explain each branch)"));
            }
            return union(source, &request, branches, &parsed.lookup_names, deadline, bounds, &mut answer).await;
        }
        let schemas = schemas(source, &parsed.query, &parsed.lookup_names).await?;
        let (plan, schemas) = plan_off_runtime(parsed.query, schemas, request.clone()).await?;
        if parsed.explain {
            return Ok(explain(&plan));
        }
        let rows = execute::rows(&plan, source, &schemas, deadline, bounds, &mut answer).await?;
        Ok(SqlResult { columns: plan.columns(), rows })
    };
    let zone = time_zone(&request)?;
    match tokio::time::timeout(std::time::Duration::from_millis(timeout_ms), work).await {
        Ok(Ok(mut result)) => {
            if let Some(z) = zone {
                zoned_timestamps(&mut result, plan::tz(&z)?);
            }
            Ok(result)
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(SqlError::Query(QueryError::Timeout(timeout_ms))),
    }
}

/// Runs CPU-bound work (parsing, planning) on the runtime's blocking threads, so that a slow
/// one does not hold an async worker and the caller's timeout answers while it runs; the work
/// itself is bounded (a parse stops at its deadline, a plan by the tree the parse measured).
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, SqlError> + Send + 'static,
) -> Result<T, SqlError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| SqlError::Query(QueryError::Source(format!("the SQL planner failed: {e}"))))?
}

/// [`plan`] off the runtime: the query and its schemas are handed over and the schemas back.
async fn plan_off_runtime(
    query: sqlparser::ast::Query,
    schemas: Schemas,
    request: Arc<SqlRequest>,
) -> Result<(Plan, Schemas), SqlError> {
    off_runtime(move || Ok((plan(&query, &schemas, &request)?, schemas))).await
}

/// TIMESTAMP values written on the wall clock of `zone`, with its offset, as Druid writes
/// them under a `sqlTimeZone` (`2015-09-11T17:46:58.771-07:00`).
fn zoned_timestamps(result: &mut SqlResult, zone: chrono_tz::Tz) {
    use chrono::{Offset, TimeZone};
    let at: Vec<usize> =
        (result.columns.iter().enumerate()).filter(|(_, c)| c.ty == SqlType::Timestamp).map(|(i, _)| i).collect();
    for row in &mut result.rows {
        for &i in &at {
            let Some(t) = row[i].as_str().and_then(|s| sluice_format::time::parse_iso_instant(s).ok()) else {
                continue;
            };
            if let chrono::LocalResult::Single(local) = zone.timestamp_millis_opt(t) {
                let zero = local.offset().fix().local_minus_utc() == 0;
                let offset = if zero { "Z".to_string() } else { local.format("%:z").to_string() };
                row[i] = Value::String(format!("{}{offset}", local.format("%Y-%m-%dT%H:%M:%S%.3f")));
            }
        }
    }
}

/// The request's `sqlTimeZone` when it is not UTC: a zone name; offsets and unknown names
/// are refused naming them.
fn time_zone(request: &SqlRequest) -> Result<Option<String>, SqlError> {
    Ok(match request.context.get("sqlTimeZone") {
        None | Some(Value::Null) => None,
        Some(Value::String(z)) if matches!(z.as_str(), "UTC" | "Etc/UTC" | "Z") => None,
        Some(Value::String(z)) => {
            sluice_format::expr::time_zone(z).map_err(|e| {
                SqlError::validation(format!(
                    "sqlTimeZone {:?}: {e} (a zone name such as America/Los_Angeles; offsets such as -08:00 are not supported)",
                    short(z)
                ))
            })?;
            Some(z.clone())
        }
        Some(other) => {
            return Err(SqlError::validation(format!(
                "sqlTimeZone {}: expected a zone name",
                short(&other.to_string())
            )))
        }
    })
}

/// The rows of each branch of a `UNION ALL`, in turn, under the first branch's columns, within
/// one answer's bounds.
async fn union(
    source: &dyn Segments,
    request: &Arc<SqlRequest>,
    branches: Vec<sqlparser::ast::Query>,
    lookup_names: &BTreeSet<String>,
    deadline: execute::Deadline,
    bounds: inline::SubqueryBounds,
    answer: &mut inline::AnswerBounds,
) -> Result<SqlResult, SqlError> {
    let mut out: Option<SqlResult> = None;
    for (i, branch) in branches.into_iter().enumerate() {
        let schemas = schemas(source, &branch, lookup_names).await?;
        let (plan, schemas) = plan_off_runtime(branch, schemas, request.clone()).await?;
        let rows = execute::rows(&plan, source, &schemas, deadline, bounds, answer).await?;
        match out.as_mut() {
            None => out = Some(SqlResult { columns: plan.columns(), rows }),
            Some(first) => {
                let (theirs, ours) = (plan.columns().len(), first.columns.len());
                if theirs != ours {
                    return Err(SqlError::validation(format!(
                        "UNION ALL branch {} has {theirs} columns, the first has {ours}",
                        i + 1
                    )));
                }
                first.rows.extend(rows);
            }
        }
    }
    out.ok_or_else(|| SqlError::validation("an empty UNION ALL"))
}

/// Plans a parsed query against `schemas`.
pub fn plan(query: &sqlparser::ast::Query, schemas: &Schemas, request: &SqlRequest) -> Result<Plan, SqlError> {
    let time_zone = time_zone(request)?;
    let mut context = serde_json::Map::new();
    for key in ["timeout", "maxScatterGatherBytes"] {
        if let Some(v) = request.context.get(key) {
            context.insert(key.into(), v.clone());
        }
    }
    let options = Options {
        catalog: schemas,
        now_ms: sluice_format::time::now_ms(),
        approximate_count_distinct: request.approximate_count_distinct(),
        context,
        time_zone,
    };
    stacker::grow(parse::PARSER_STACK, || plan::plan_query(query, &options))
}

/// Reads the columns of every datasource the query names (every datasource when it reads a
/// metadata table that lists them), the supervisors or tasks when it reads their tables, and
/// the lookups among `lookup_names` (the query's: [`parse::lookup_names`]).
pub async fn schemas(
    source: &dyn Segments,
    query: &sqlparser::ast::Query,
    lookup_names: &BTreeSet<String>,
) -> Result<Schemas, SqlError> {
    let mut named = BTreeSet::new();
    let mut system = BTreeSet::new();
    let _ = sqlparser::ast::visit_relations(query, |name| {
        let path = object_path(name);
        let lower: Vec<String> = path.iter().map(|p| p.to_ascii_lowercase()).collect();
        match lower.as_slice() {
            [schema, t] if schema == "information_schema" => system.extend(SystemTable::information_schema(t)),
            [schema, t] if schema == "sys" => system.extend(SystemTable::sys(t)),
            [schema, _] if schema == "lookup" => {}
            _ => {
                named.insert(path.last().cloned().unwrap_or_default());
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let everything = system.iter().any(|t| t.needs_schemas());
    let mut schemas = Schemas::default();
    if !lookup_names.is_empty() {
        schemas.lookups = source.lookups(lookup_names).await?;
    }
    if system.contains(&SystemTable::Supervisors) {
        schemas.supervisors = source.supervisors().await?;
    }
    if system.contains(&SystemTable::Tasks) {
        schemas.tasks = source.tasks().await?;
    }
    if system.contains(&SystemTable::Servers) || system.contains(&SystemTable::ServerSegments) {
        schemas.servers = source.servers();
    }
    if !everything && named.is_empty() {
        return Ok(schemas);
    }
    let all = source.datasources().await?;
    for datasource in all.iter().filter(|d| everything || named.contains(*d)) {
        if let Some(table) = source.table(datasource).await? {
            schemas.insert(datasource, &table);
        }
    }
    Ok(schemas)
}

/// EXPLAIN PLAN FOR's answer: the native query with its signature, the datasources read, and
/// the statement type (Druid's PLAN, RESOURCES and ATTRIBUTES columns).
fn explain(plan: &Plan) -> SqlResult {
    let mut queries = Vec::new();
    let mut p = Some(plan);
    while let Some(current) = p {
        let signature: Vec<Value> = current
            .outputs
            .iter()
            .take(current.visible)
            .map(|o| json!({"name": o.column.name, "type": o.column.ty.native_name()}))
            .collect();
        let mappings: Vec<Value> = current
            .outputs
            .iter()
            .take(current.visible)
            .map(|o| {
                let source = match &o.source {
                    plan::Source::Field(f) => json!(f),
                    plan::Source::Timestamp => json!("__time"),
                    plan::Source::Const(v) => v.clone(),
                    plan::Source::Expression(e) => json!({"expression": e}),
                };
                json!({"queryColumn": source, "outputColumn": o.column.name})
            })
            .collect();
        queries.push(json!({"query": current.native, "signature": signature, "columnMappings": mappings}));
        p = match &current.input {
            Input::Inline(inner) => Some(inner),
            Input::Windowed(stage) => Some(&stage.inner),
            _ => None,
        };
    }
    let resources: Vec<Value> =
        plan.datasources().into_iter().map(|d| json!({"name": d, "type": "DATASOURCE"})).collect();
    SqlResult {
        columns: vec![
            Column::new("PLAN", SqlType::Varchar),
            Column::new("RESOURCES", SqlType::Varchar),
            Column::new("ATTRIBUTES", SqlType::Varchar),
        ],
        rows: vec![vec![
            json!(Value::Array(queries).to_string()),
            json!(Value::Array(resources).to_string()),
            json!(json!({"statementType": "SELECT"}).to_string()),
        ]],
    }
}

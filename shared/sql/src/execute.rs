//! Running a plan: its native query over the datasource's segments (or over a subquery's or
//! metadata table's rows held as a segment; a timeseries, topN or groupBy of a table fanned out
//! to query workers when the source does), then each result column read out of Druid's native
//! result rows and typed for SQL.

use crate::catalog::Schemas;
use crate::inline::{AnswerBounds, SubqueryBounds, SubqueryRows};
use crate::plan::{Input, JoinSide, Plan, Source};
use crate::types::{Column, SqlType};
use crate::{Segments, SqlError};
use serde_json::{json, Map, Value};
use sluice_format::lookup::Lookups;
use sluice_query::QuerySegment;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

/// When the query must be answered by, and the timeout it names.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// The instant.
    pub at: Instant,
    /// The timeout in milliseconds.
    pub timeout_ms: u64,
}

/// Rows being computed (boxed: a subquery's plan is run by the same function).
pub type RowsFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<Vec<Value>>, SqlError>> + Send + 'a>>;

/// The rows of `plan`, its subqueries' rows bounded by `bounds` and the rows it returns by what
/// is left of `answer`, which counts them. Rows sorted after the query are bounded after they
/// are cut; the rows they are cut from are bounded by the engine.
pub fn rows<'a>(
    plan: &'a Plan,
    source: &'a dyn Segments,
    schemas: &'a Schemas,
    deadline: Deadline,
    bounds: SubqueryBounds,
    answer: &'a mut AnswerBounds,
) -> RowsFuture<'a> {
    Box::pin(async move {
        let mut out = SubqueryRows::answer(answer);
        if plan.after.order.is_empty() && plan.after.limit.is_none() && plan.after.offset == 0 {
            rows_into(plan, source, schemas, deadline, bounds, &mut out).await?;
            answer.count(&out);
            return Ok(cpu_bound(|| after(plan, out.into_rows())));
        }
        let mut all = SubqueryRows::unbounded();
        rows_into(plan, source, schemas, deadline, bounds, &mut all).await?;
        cpu_bound(|| after(plan, all.into_rows()).into_iter().try_for_each(|r| out.push(r)))?;
        answer.count(&out);
        Ok(out.into_rows())
    })
}

/// The rows of subquery `plan`, refused as soon as they pass `bounds` (its native query cut
/// one row past them). Rows sorted after the query are bounded after they are cut, as Druid
/// counts a subquery's rows; the rows they are cut from come from rows already bounded.
fn subquery_rows<'a>(
    plan: &'a Plan,
    source: &'a dyn Segments,
    schemas: &'a Schemas,
    deadline: Deadline,
    bounds: SubqueryBounds,
) -> RowsFuture<'a> {
    Box::pin(async move {
        if plan.after.order.is_empty() {
            let mut out = SubqueryRows::bounded(bounds);
            rows_into(plan, source, schemas, deadline, bounds, &mut out).await?;
            return Ok(cpu_bound(|| after(plan, out.into_rows())));
        }
        let mut out = SubqueryRows::bounded(SubqueryBounds::default());
        rows_into(plan, source, schemas, deadline, bounds, &mut out).await?;
        let rows = cpu_bound(|| after(plan, out.into_rows()));
        if rows.len() > bounds.rows {
            return Err(crate::inline::too_many_rows(bounds.rows));
        }
        Ok(rows)
    })
}

/// Adds the rows of `plan` to `out` as they are read out of its native answer (not yet
/// sorted and cut by [`After`](crate::plan::After)); when `out` is bounded, the native query
/// is cut one row past its bound.
fn rows_into<'a>(
    plan: &'a Plan,
    source: &'a dyn Segments,
    schemas: &'a Schemas,
    deadline: Deadline,
    bounds: SubqueryBounds,
    out: &'a mut SubqueryRows,
) -> Pin<Box<dyn Future<Output = Result<(), SqlError>> + Send + 'a>> {
    Box::pin(async move {
        if let Input::Windowed(stage) = &plan.input {
            // Druid bounds a window's rows as a subquery's.
            let rows = subquery_rows(&stage.inner, source, schemas, deadline, bounds).await?;
            let (columns, calls) = (stage.inner.columns(), stage.calls.clone());
            let answer = tokio::task::spawn_blocking(move || {
                crate::window::answer(&columns, &calls, rows, deadline.at, deadline.timeout_ms)
            })
            .await
            .map_err(|e| {
                SqlError::Query(sluice_query::QueryError::Source(format!("window functions failed: {e}")))
            })??;
            return cpu_bound(|| read_rows_into(plan, "scan", &answer, out, &schemas.lookups));
        }
        if let Input::Union(branches) = &plan.input {
            // Bounded as a subquery's rows, whole: Druid holds a union's rows the same way.
            let mut events = Vec::new();
            for branch in branches {
                for row in subquery_rows(branch, source, schemas, deadline, bounds).await? {
                    if events.len() >= bounds.rows {
                        return Err(crate::inline::too_many_rows(bounds.rows));
                    }
                    let fields: Map<String, Value> =
                        row.into_iter().enumerate().map(|(i, v)| (crate::plan::union_field(i), v)).collect();
                    events.push(Value::Object(fields));
                }
            }
            return cpu_bound(|| read_rows_into(plan, "scan", &json!([{"events": events}]), out, &schemas.lookups));
        }
        let Some(native) = &plan.native else {
            return out
                .push(plan.outputs.iter().take(plan.visible).map(|o| constant(&o.source, &o.column.ty)).collect());
        };
        let mut native = match out.bound_rows() {
            Some(max) if plan.after.order.is_empty() => crate::inline::capped(native, max.saturating_add(1)),
            _ => native.clone(),
        };
        // A join's subquery runs first, its rows inlined into the query as Druid's broker does.
        let mut sides = Vec::new();
        for j in &plan.joins {
            if let JoinSide::Rows(inner) = &j.right {
                let rows = subquery_rows(inner, source, schemas, deadline, bounds).await?;
                let columns = inner.columns();
                // As an inline segment holds them: TIMESTAMPs in milliseconds, booleans 0/1, so
                // that a key compares with the left side's.
                let rows = (rows.into_iter())
                    .map(|r| r.iter().zip(&columns).map(|(v, c)| crate::inline::stored(&c.ty, v)).collect())
                    .collect();
                sides.push((columns.into_iter().map(|c| c.name).collect::<Vec<_>>(), rows));
            }
        }
        if !sides.is_empty() {
            crate::plan::inline_rows(&mut native["dataSource"], &mut sides.into_iter());
        }
        let (text, mut query) = cpu_bound(|| {
            let text = native.to_string();
            sluice_query::parse_query(&text).map(|q| (text, q))
        })?;
        query.bind_lookups(schemas.lookups.clone());
        if matches!(plan.input, Input::Table(_)) && query.has_partials() {
            if let Some(answer) = source.fan_out(&text).await {
                let kind = native["queryType"].as_str().unwrap_or("");
                return cpu_bound(|| read_rows_into(plan, kind, &answer?, out, &schemas.lookups));
            }
        }
        // Only deep storage's segments are immutable under their names: inline ones are not.
        let partials = if matches!(plan.input, Input::Table(_)) { source.partials() } else { None };
        let segments: Arc<Vec<QuerySegment>> = match &plan.input {
            Input::Table(datasource) => {
                source.segments(datasource, &query.intervals(), sluice_query::ReadPlan::of(&query).as_ref()).await?
            }
            Input::Inline(inner) => {
                let inner_rows = subquery_rows(inner, source, schemas, deadline, bounds).await?;
                Arc::new(cpu_bound(|| crate::inline::segment(&inner.columns(), &inner_rows))?.into_iter().collect())
            }
            Input::System(table) => {
                let rows = cpu_bound(|| crate::inline::segment(&table.columns(), &table.rows(schemas)));
                Arc::new(rows?.into_iter().collect())
            }
            Input::Lookup(name) => {
                let rows: Vec<Vec<Value>> = (schemas.lookups.get(name).into_iter())
                    .flat_map(|t| t.rows())
                    .map(|r| r.iter().map(|v| v.as_str().map_or(Value::Null, |s| json!(s))).collect())
                    .collect();
                let columns = [Column::new("k", SqlType::Varchar), Column::new("v", SqlType::Varchar)];
                Arc::new(cpu_bound(|| crate::inline::segment(&columns, &rows))?.into_iter().collect())
            }
            Input::Nothing | Input::Windowed(_) | Input::Union(_) => Arc::new(Vec::new()),
        };
        let result = tokio::task::spawn_blocking(move || {
            sluice_query::execute_within(&query, &segments, deadline.at, deadline.timeout_ms, partials.as_ref())
        })
        .await
        .map_err(|e| SqlError::Query(sluice_query::QueryError::Source(format!("the query engine failed: {e}"))))??;
        let kind = native["queryType"].as_str().unwrap_or("");
        cpu_bound(|| read_rows_into(plan, kind, &result, out, &schemas.lookups))
    })
}

/// Runs CPU-bound work (reading, sorting and inlining rows: bounded by the rows' bounds) on
/// this thread, a multi-threaded runtime moving its other tasks to another worker meanwhile so
/// that they are not held up; on a current-thread runtime (tests) it simply runs.
fn cpu_bound<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// Reads the result columns out of a native answer, then sorts and cuts what the plan does
/// after the query.
pub fn read_rows(plan: &Plan, kind: &str, result: &Value) -> Result<Vec<Vec<Value>>, SqlError> {
    let mut out = SubqueryRows::unbounded();
    read_rows_into(plan, kind, result, &mut out, &Lookups::new())?;
    Ok(after(plan, out.into_rows()))
}

/// Reads the result columns out of a native answer into `out`, a row at a time, stopping at
/// the first row `out` refuses; the expressions computed on each row read `lookups`.
pub fn read_rows_into(
    plan: &Plan,
    kind: &str,
    result: &Value,
    out: &mut SubqueryRows,
    lookups: &Lookups,
) -> Result<(), SqlError> {
    let computed = Computed::new(plan, lookups)?;
    let empty = Map::new();
    let row = |timestamp: &Value, fields: &Map<String, Value>| -> Vec<Value> {
        plan.outputs
            .iter()
            .enumerate()
            .map(|(i, o)| match &o.source {
                Source::Field(name) => sql_value(fields.get(name).unwrap_or(&Value::Null), &o.column.ty),
                Source::Timestamp => sql_value(timestamp, &o.column.ty),
                Source::Const(v) => sql_value(v, &o.column.ty),
                Source::Expression(_) => sql_value(&computed.eval(i, fields), &o.column.ty),
            })
            .collect()
    };
    let held = out.len();
    let mut push = |timestamp: &Value, fields: &Map<String, Value>| out.push(row(timestamp, fields));
    for entry in result.as_array().map(Vec::as_slice).unwrap_or_default() {
        let ts = entry.get("timestamp").unwrap_or(&Value::Null);
        match kind {
            "timeseries" => push(ts, entry.get("result").and_then(Value::as_object).unwrap_or(&empty))?,
            "topN" => {
                for item in entry.get("result").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
                    push(ts, item.as_object().unwrap_or(&empty))?;
                }
            }
            "groupBy" => push(ts, entry.get("event").and_then(Value::as_object).unwrap_or(&empty))?,
            _ => {
                for event in entry.get("events").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
                    push(&Value::Null, event.as_object().unwrap_or(&empty))?;
                }
            }
        }
    }
    if let (true, Some(fields)) = (out.len() == held, &plan.one_row) {
        out.push(row(&Value::Null, fields))?;
    }
    Ok(())
}

/// `rows` sorted and cut as the plan does after its query, each cut to the visible columns.
fn after(plan: &Plan, mut out: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    let after = &plan.after;
    if !after.order.is_empty() {
        out.sort_by(|a, b| {
            after
                .order
                .iter()
                .map(|&(i, descending)| {
                    let o = crate::window::compare(&a[i], &b[i]);
                    if descending {
                        o.reverse()
                    } else {
                        o
                    }
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    // Set only where the native query could not cut (sorted here, or a window stage's rows).
    let offset = usize::try_from(after.offset).unwrap_or(usize::MAX).min(out.len());
    out.drain(..offset);
    if let Some(limit) = after.limit {
        out.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    for row in &mut out {
        row.truncate(plan.visible);
    }
    out
}

/// The outputs computed from other fields of a result row, parsed once.
struct Computed {
    /// Per output: the expression and the fields it reads, in slot order.
    exprs: Vec<Option<(sluice_format::expr::Expr, Vec<String>)>>,
}

impl Computed {
    fn new(plan: &Plan, lookups: &Lookups) -> Result<Self, SqlError> {
        let mut exprs = Vec::with_capacity(plan.outputs.len());
        for o in &plan.outputs {
            exprs.push(match &o.source {
                Source::Expression(text) => {
                    let mut names: Vec<String> = Vec::new();
                    let resolve = &mut |name: &str| {
                        names.iter().position(|n| n == name).unwrap_or_else(|| {
                            names.push(name.to_string());
                            names.len() - 1
                        })
                    };
                    let e = sluice_format::expr::parse_with(text, resolve, &|l| lookups.get(l).cloned())
                        .map_err(|e| SqlError::validation(e.to_string()))?;
                    Some((e, names))
                }
                _ => None,
            });
        }
        Ok(Self { exprs })
    }

    fn eval(&self, output: usize, fields: &Map<String, Value>) -> Value {
        let Some((e, names)) = &self.exprs[output] else { return Value::Null };
        let row: Vec<sluice_format::value::Value> = names
            .iter()
            .map(|n| sluice_format::value::Value::from_json(fields.get(n).cloned().unwrap_or(Value::Null)))
            .collect();
        sluice_query::json::value_json(&sluice_format::expr::eval(e, &row, 0))
    }
}

fn constant(source: &Source, ty: &SqlType) -> Value {
    match source {
        Source::Const(v) => sql_value(v, ty),
        _ => Value::Null,
    }
}

/// A native value typed for SQL: TIMESTAMPs as ISO 8601, BIGINTs as integers, BOOLEANs as
/// `true`/`false`.
pub fn sql_value(v: &Value, ty: &SqlType) -> Value {
    match (ty, v) {
        (_, Value::Null) => Value::Null,
        (SqlType::Timestamp, Value::Number(n)) => match n.as_i64() {
            Some(ms) => json!(sluice_format::time::format_iso(ms)),
            None => v.clone(),
        },
        (SqlType::Bigint, Value::Number(n)) if !n.is_i64() && !n.is_u64() => {
            n.as_f64().filter(|f| f.is_finite()).map(|f| json!(f.round() as i64)).unwrap_or(Value::Null)
        }
        (SqlType::Bigint, Value::String(s)) => s.parse::<i64>().map(|n| json!(n)).unwrap_or_else(|_| v.clone()),
        (SqlType::Double | SqlType::Float, Value::Number(n)) => n.as_f64().map(|f| json!(f)).unwrap_or(Value::Null),
        (SqlType::Double | SqlType::Float, Value::String(s)) => {
            s.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| json!(f)).unwrap_or(Value::Null)
        }
        (SqlType::Boolean, Value::Number(n)) => json!(n.as_f64().is_some_and(|f| f != 0.0)),
        _ => v.clone(),
    }
}

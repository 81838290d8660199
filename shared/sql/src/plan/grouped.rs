//! Aggregating SELECTs: GROUP BY keys (or DISTINCT's), aggregates and arithmetic over them,
//! HAVING, ORDER BY and LIMIT into a timeseries, topN or groupBy query.

use super::aggregate::{AggRef, Aggregates};
use super::filter::filter;
use super::names::function_name;
use super::parts::{has_aggregate, resolve_item, Parts};
use super::scalar::{quote_column, Scalar, Scope};
use super::virtuals::{fresh, Virtuals};
use super::{Output, Plan, Source};
use crate::types::{Column, SqlType};
use crate::SqlError;
use serde_json::{json, Value};
use sqlparser::ast::{BinaryOperator, Expr, GroupByExpr};
use std::cell::RefCell;

/// A grouping key.
struct Key {
    scalar: Scalar,
    /// Its field in groupBy and topN rows.
    name: String,
    /// The ISO period when it floors `__time`.
    period: Option<String>,
}

/// What a select item, HAVING operand or ORDER BY key reads from a result row.
#[derive(Debug, Clone)]
struct Read {
    source: Source,
    ty: SqlType,
}

/// A post-aggregation operand.
enum Post {
    Ref(AggRef),
    Spec(Value, SqlType),
}

/// The query type chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Timeseries,
    TopN,
    GroupBy,
}

struct Grouping<'p, 'a> {
    parts: &'p Parts<'a>,
    keys: Vec<Key>,
    kind: Kind,
    virtuals: RefCell<Virtuals>,
    aggregates: RefCell<Aggregates>,
}

/// Plans an aggregating SELECT.
pub fn plan(parts: &Parts<'_>) -> Result<Plan, SqlError> {
    let scope = parts.scope();
    let mut virtuals = Virtuals::new(&parts.relation.columns);
    let mut exprs: Vec<Expr> = match &parts.select.group_by {
        GroupByExpr::Expressions(e, _) => e.clone(),
        GroupByExpr::All(_) => Vec::new(),
    };
    if parts.select.distinct.is_some() {
        if !exprs.is_empty() || parts.items.iter().any(|i| has_aggregate(&i.expr)) {
            return Err(SqlError::unsupported("SELECT DISTINCT with GROUP BY or aggregates"));
        }
        exprs = parts.items.iter().map(|i| i.expr.clone()).collect();
    }
    let mut keys: Vec<Key> = Vec::new();
    let mut taken: Vec<String> = parts.relation.columns.iter().map(|c| c.name.clone()).collect();
    for e in &exprs {
        let e = match resolve_item(e, &parts.items, &parts.relation.columns, "GROUP BY", parts.options)? {
            Some(i) => &parts.items[i].expr,
            None => e,
        };
        if has_aggregate(e) {
            return Err(SqlError::validation(format!("aggregate in GROUP BY: {}", crate::short(&e.to_string()))));
        }
        let s = scope.scalar(e)?;
        const LISTS: [&str; 5] =
            ["array_append(", "array_prepend(", "array_concat(", "array_slice(", "string_to_array("];
        if LISTS.iter().any(|f| s.expr.contains(f)) {
            return Err(SqlError::unsupported(format!(
                "GROUP BY {}: grouping by a list an MV_ function builds (Druid groups by each of its values; not built)",
                crate::short(&e.to_string())
            )));
        }
        if s.constant.is_some() || keys.iter().any(|k| k.scalar.expr == s.expr) {
            continue;
        }
        let period = floor_period(&s.expr, parts.options.time_zone.as_deref());
        let name = fresh(&taken, "d", keys.len());
        taken.push(name.clone());
        keys.push(Key { scalar: s, name, period });
    }
    let kind = choose(parts, &keys, &scope)?;
    let has_filter = parts.filter(&mut virtuals)?;
    let g = Grouping {
        parts,
        keys,
        kind,
        virtuals: RefCell::new(virtuals),
        aggregates: RefCell::new(Aggregates::new(taken)),
    };
    let mut outputs = Vec::new();
    for item in &parts.items {
        let r = g.read(&item.expr)?;
        outputs.push(Output { column: Column::new(&item.name, r.ty), source: r.source });
    }
    let having = g.having()?;
    let order: Vec<(Read, bool)> = parts
        .order
        .iter()
        .map(|k| match k.item {
            Some(i) => Ok((Read { source: outputs[i].source.clone(), ty: outputs[i].column.ty.clone() }, k.descending)),
            None => g.read(&k.expr).map(|r| (r, k.descending)),
        })
        .collect::<Result<_, _>>()?;
    let native = g.native(has_filter, having, &order)?;
    let one_row = (g.keys.is_empty() && parts.select.having.is_none()).then(|| g.aggregates.borrow().empty_fields());
    let visible = outputs.len();
    Ok(Plan {
        input: parts.relation.input.clone(),
        native: Some(native),
        outputs,
        one_row,
        visible,
        after: Default::default(),
        joins: parts.relation.joins.clone(),
    })
}

/// The period of `timestamp_floor("__time", 'P...')` (with the request's zone when it has
/// one), when `expr` is exactly that.
fn floor_period(expr: &str, zone: Option<&str>) -> Option<String> {
    let inner = expr.strip_prefix("timestamp_floor(\"__time\", '")?;
    let inner = match zone {
        Some(z) => inner.strip_suffix(&format!("', null, {})", super::scalar::quote_string(z)))?,
        None => inner.strip_suffix("')")?,
    };
    (!inner.contains('\'')).then(|| inner.to_string())
}

/// Timeseries for no key or one time floor (ordered by it, without HAVING or OFFSET); topN
/// for one string key ordered by one aggregate with a LIMIT; groupBy otherwise.
fn choose(parts: &Parts<'_>, keys: &[Key], scope: &Scope<'_>) -> Result<Kind, SqlError> {
    let plain = parts.select.having.is_none() && parts.offset == 0 && parts.select.distinct.is_none();
    let time_only = keys.is_empty() || (keys.len() == 1 && keys[0].period.is_some());
    if plain && time_only {
        let by_time = parts.order.iter().all(|o| {
            !keys.is_empty()
                && !has_aggregate(&o.expr)
                && scope.scalar(&o.expr).is_ok_and(|s| s.expr == keys[0].scalar.expr)
        });
        if by_time && (parts.limit.is_none() || !keys.is_empty()) {
            return Ok(Kind::Timeseries);
        }
    }
    if plain
        && keys.len() == 1
        && keys[0].period.is_none()
        && keys[0].scalar.ty == SqlType::Varchar
        && parts.limit.is_some()
        && parts.order.len() == 1
        && has_aggregate(&parts.order[0].expr)
    {
        return Ok(Kind::TopN);
    }
    Ok(Kind::GroupBy)
}

impl Grouping<'_, '_> {
    fn read(&self, e: &Expr) -> Result<Read, SqlError> {
        if !has_aggregate(e) {
            let s = self.parts.scope().scalar(e)?;
            if let Some(c) = &s.constant {
                return Ok(Read { source: Source::Const(c.json()), ty: s.ty });
            }
            let Some(key) = self.keys.iter().find(|k| k.scalar.expr == s.expr) else {
                return self.of_keys(e);
            };
            let source =
                if self.kind == Kind::Timeseries { Source::Timestamp } else { Source::Field(key.name.clone()) };
            return Ok(Read { source, ty: key.scalar.ty.clone() });
        }
        match self.post(e) {
            Ok(Post::Ref(r)) => Ok(Read { source: Source::Field(r.name), ty: r.ty }),
            Ok(Post::Spec(spec, ty)) => {
                let r = self.aggregates.borrow_mut().add_post(spec, ty);
                Ok(Read { source: Source::Field(r.name), ty: r.ty })
            }
            // Anything else over aggregates and keys is computed on each result row.
            Err(SqlError::Unsupported(_)) if !is_aggregate_call(e) => {
                let substitute = |x: &Expr| self.result_column(x);
                let scope = self.result_scope(&substitute);
                let s = scope.scalar(e)?;
                Ok(Read { source: Source::Expression(s.expr), ty: s.ty })
            }
            Err(other) => Err(other),
        }
    }

    /// An expression of grouping keys (`UPPER(channel)` grouped by `channel`), computed on
    /// each result row from the keys' fields.
    fn of_keys(&self, e: &Expr) -> Result<Read, SqlError> {
        let refused = || {
            SqlError::validation(format!(
                "expression '{}' is not being grouped: add it to GROUP BY or aggregate it",
                crate::short(&e.to_string())
            ))
        };
        if self.kind == Kind::Timeseries {
            return Err(refused());
        }
        let substitute = |x: &Expr| -> Result<Option<Scalar>, SqlError> {
            let Ok(s) = self.parts.scope().scalar(x) else { return Ok(None) };
            let key = self.keys.iter().find(|k| s.constant.is_none() && k.scalar.expr == s.expr);
            Ok(key.map(|k| Scalar {
                expr: quote_column(&k.name),
                ty: k.scalar.ty.clone(),
                column: Some(k.name.clone()),
                constant: None,
            }))
        };
        match self.result_scope(&substitute).scalar(e) {
            Ok(s) => Ok(Read { source: Source::Expression(s.expr), ty: s.ty }),
            Err(_) => Err(refused()),
        }
    }

    /// The scope of result rows: aggregates and grouping keys read as result fields.
    fn result_scope<'s>(&self, substitute: &'s super::scalar::Substitute<'s>) -> Scope<'s> {
        Scope {
            columns: &[],
            qualifiers: Vec::new(),
            now_ms: self.parts.options.now_ms,
            zone: self.parts.options.time_zone.clone(),
            substitute: Some(substitute),
        }
    }

    /// `e` as a field of the result rows, when it is an aggregate or a grouping key.
    fn result_column(&self, e: &Expr) -> Result<Option<Scalar>, SqlError> {
        let column = if is_aggregate_call(e) {
            self.read(e)?
        } else if !has_aggregate(e) && !matches!(e, Expr::Value(_)) {
            match self.parts.scope().scalar(e) {
                Ok(s) if s.constant.is_none() => self.read(e)?,
                _ => return Ok(None),
            }
        } else {
            return Ok(None);
        };
        let Source::Field(name) = column.source else {
            return Err(SqlError::unsupported("an expression of the time bucket of a timeseries over aggregates"));
        };
        Ok(Some(Scalar { expr: quote_column(&name), ty: column.ty, column: Some(name), constant: None }))
    }

    /// Arithmetic over aggregates and constants.
    fn post(&self, e: &Expr) -> Result<Post, SqlError> {
        stacker::maybe_grow(super::scalar::RED_ZONE, super::scalar::STACK_GROWTH, || self.post_step(e))
    }

    fn post_step(&self, e: &Expr) -> Result<Post, SqlError> {
        match e {
            Expr::Nested(inner) => self.post(inner),
            Expr::Function(f) if super::aggregate::is_aggregate(&function_name(f)) => {
                let scope = self.parts.scope();
                let mut virtuals = self.virtuals.borrow_mut();
                let approximate = self.parts.options.approximate_count_distinct;
                let mut aggregates = self.aggregates.borrow_mut();
                let name = function_name(f);
                if super::names::is_sketch_function(&name) {
                    return Ok(Post::Ref(super::sketch_calls::call(&mut aggregates, &name, f, &scope, &mut virtuals)?));
                }
                Ok(Post::Ref(aggregates.call(f, &scope, &mut virtuals, approximate)?))
            }
            Expr::BinaryOp { left, op, right } => {
                let symbol = match op {
                    BinaryOperator::Plus => "+",
                    BinaryOperator::Minus => "-",
                    BinaryOperator::Multiply => "*",
                    BinaryOperator::Divide => "quotient",
                    other => return Err(SqlError::unsupported(format!("operator {other} over aggregates"))),
                };
                let (a, b) = (self.post(left)?, self.post(right)?);
                let ty = if symbol == "quotient" { SqlType::Double } else { post_type(&a).arithmetic(&post_type(&b)) };
                let spec =
                    json!({"type": "arithmetic", "name": "_", "fn": symbol, "fields": [post_json(a), post_json(b)]});
                Ok(Post::Spec(spec, ty))
            }
            other => {
                let s = self.parts.scope().scalar(other)?;
                match &s.constant {
                    Some(super::scalar::Const::Long(v)) => {
                        Ok(Post::Spec(json!({"type": "constant", "name": "_", "value": v}), SqlType::Bigint))
                    }
                    Some(super::scalar::Const::Double(v)) => {
                        Ok(Post::Spec(json!({"type": "constant", "name": "_", "value": v}), SqlType::Double))
                    }
                    _ => Err(SqlError::unsupported(format!(
                        "expression '{}' over aggregates (only + - * / of aggregates and numbers)",
                        crate::short(&other.to_string())
                    ))),
                }
            }
        }
    }

    /// HAVING as a filter over result rows.
    fn having(&self) -> Result<Option<Value>, SqlError> {
        let Some(h) = &self.parts.select.having else { return Ok(None) };
        let substitute = |x: &Expr| self.result_column(x);
        let scope = self.result_scope(&substitute);
        let mut virtuals = Virtuals::default();
        let f = filter(h, &scope, &mut virtuals)?;
        if !virtuals.is_empty() {
            return Err(SqlError::unsupported("HAVING on an expression of grouped columns"));
        }
        Ok(Some(f))
    }

    fn native(&self, filter: Option<Value>, having: Option<Value>, order: &[(Read, bool)]) -> Result<Value, SqlError> {
        let parts = self.parts;
        // Grouping keys that are expressions read virtual columns.
        let dimensions: Vec<Value> = match self.kind {
            Kind::Timeseries => Vec::new(),
            _ => {
                let mut virtuals = self.virtuals.borrow_mut();
                self.keys
                    .iter()
                    .map(|k| {
                        json!({"type": "default", "dimension": virtuals.column_for(&k.scalar), "outputName": k.name,
                               "outputType": k.scalar.ty.value_type()})
                    })
                    .collect()
            }
        };
        let aggregates = self.aggregates.borrow();
        let virtuals = self.virtuals.borrow();
        let mut q = json!({
            "dataSource": parts.datasource(),
            "intervals": parts.range.intervals(),
            "aggregations": aggregates.aggregators_json(),
        });
        if aggregates.has_post() {
            q["postAggregations"] = json!(aggregates.post_json());
        }
        if let Some(f) = filter {
            q["filter"] = f;
        }
        match self.kind {
            Kind::Timeseries => {
                q["queryType"] = json!("timeseries");
                match self.keys.first().and_then(|k| k.period.as_ref()) {
                    Some(p) => {
                        q["granularity"] = match &parts.options.time_zone {
                            Some(z) => json!({"type": "period", "period": p, "timeZone": z}),
                            None => json!({"type": "period", "period": p}),
                        };
                        q["context"] = parts.context(&[("skipEmptyBuckets", json!(true))]);
                    }
                    None => {
                        q["granularity"] = json!("all");
                        q["context"] = parts.context(&[]);
                    }
                }
                if order.first().is_some_and(|(_, desc)| *desc) {
                    q["descending"] = json!(true);
                }
                if let Some(l) = parts.limit {
                    q["limit"] = json!(l);
                }
            }
            Kind::TopN => {
                let (read, descending) = &order[0];
                let Source::Field(metric) = &read.source else {
                    return Err(SqlError::unsupported("topN ordered by a constant"));
                };
                q["queryType"] = json!("topN");
                q["granularity"] = json!("all");
                q["dimension"] = dimensions[0].clone();
                q["metric"] = if *descending {
                    json!({"type": "numeric", "metric": metric})
                } else {
                    json!({"type": "inverted", "metric": {"type": "numeric", "metric": metric}})
                };
                q["threshold"] = json!(parts.limit.unwrap_or(0));
                q["context"] = parts.context(&[]);
            }
            Kind::GroupBy => {
                q["queryType"] = json!("groupBy");
                q["granularity"] = json!("all");
                q["dimensions"] = json!(dimensions);
                let mut columns = Vec::new();
                for (read, descending) in order {
                    let field = match &read.source {
                        Source::Field(field) => field,
                        Source::Const(_) => continue,
                        _ => {
                            return Err(SqlError::unsupported(
                                "ORDER BY an expression over aggregates other than + - * /",
                            ))
                        }
                    };
                    let numeric = read.ty.is_numeric();
                    columns.push(
                        json!({"dimension": field, "direction": if *descending { "descending" } else { "ascending" },
                        "dimensionOrder": if numeric { "numeric" } else { "lexicographic" }}),
                    );
                }
                if !columns.is_empty() || parts.limit.is_some() || parts.offset > 0 {
                    let mut spec = json!({"type": "default", "columns": columns});
                    if let Some(l) = parts.limit {
                        spec["limit"] = json!(l);
                    }
                    if parts.offset > 0 {
                        spec["offset"] = json!(parts.offset);
                    }
                    q["limitSpec"] = spec;
                }
                if let Some(h) = having {
                    q["having"] = json!({"type": "filter", "filter": h});
                }
                q["context"] = parts.context(&[]);
            }
        }
        if !virtuals.is_empty() {
            q["virtualColumns"] = json!(virtuals.json());
        }
        Ok(q)
    }
}

fn is_aggregate_call(e: &Expr) -> bool {
    matches!(e, Expr::Function(f) if super::aggregate::is_aggregate(&function_name(f)))
}

fn post_type(p: &Post) -> SqlType {
    match p {
        Post::Ref(r) => r.ty.clone(),
        Post::Spec(_, ty) => ty.clone(),
    }
}

fn post_json(p: Post) -> Value {
    match p {
        Post::Ref(r) => json!({"type": "finalizingFieldAccess", "fieldName": r.name}),
        Post::Spec(spec, _) => spec,
    }
}

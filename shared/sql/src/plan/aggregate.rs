//! Aggregate calls into native aggregators (and the post-aggregators AVG and arithmetic over
//! aggregates need), each distinct one planned once.

use super::filter::filter;
pub use super::names::is_aggregate;
use super::names::{function_args, function_name, is_distinct, is_star};
use super::scalar::Scope;
use super::virtuals::{fresh, Virtuals};
use crate::types::SqlType;
use crate::SqlError;
use serde_json::{json, Value};
use sqlparser::ast::Function;

/// A planned aggregate: the result field that holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct AggRef {
    /// The aggregator or post-aggregator name.
    pub name: String,
    /// The SQL type of its value.
    pub ty: SqlType,
    /// Its value over no rows (0 for counts, null otherwise).
    pub empty: Value,
}

/// The aggregators and post-aggregators of one native query.
#[derive(Debug, Default)]
pub struct Aggregates {
    /// Native aggregators, each with the text it is deduplicated by.
    aggregators: Vec<(String, Value, AggRef)>,
    /// Native post-aggregators.
    post: Vec<(Value, AggRef)>,
    taken: Vec<String>,
}

impl Aggregates {
    /// Aggregates whose names avoid `taken` (the input columns).
    pub fn new(taken: Vec<String>) -> Self {
        Self { taken, ..Default::default() }
    }

    /// The native `aggregations`.
    pub fn aggregators_json(&self) -> Vec<Value> {
        self.aggregators.iter().map(|(_, v, _)| v.clone()).collect()
    }

    /// The native `postAggregations`.
    pub fn post_json(&self) -> Vec<Value> {
        self.post.iter().map(|(v, _)| v.clone()).collect()
    }

    /// Each aggregator's value over no rows, by name.
    pub fn empty_fields(&self) -> serde_json::Map<String, Value> {
        self.aggregators.iter().map(|(_, _, r)| (r.name.clone(), r.empty.clone())).collect()
    }

    /// Whether any post-aggregators were made.
    pub fn has_post(&self) -> bool {
        !self.post.is_empty()
    }

    /// Adds an aggregator (`spec` without its name), or finds the same one.
    pub(super) fn add(&mut self, mut spec: Value, ty: SqlType, empty: Value) -> AggRef {
        let key = spec.to_string();
        if let Some((_, _, r)) = self.aggregators.iter().find(|(k, _, _)| *k == key) {
            return r.clone();
        }
        let name = self.fresh("a");
        spec["name"] = json!(name);
        let r = AggRef { name, ty, empty };
        self.aggregators.push((key, spec, r.clone()));
        r
    }

    /// Adds a post-aggregator (`spec` without its name).
    pub fn add_post(&mut self, mut spec: Value, ty: SqlType) -> AggRef {
        let name = self.fresh("p");
        spec["name"] = json!(name);
        let r = AggRef { name, ty, empty: Value::Null };
        self.post.push((spec, r.clone()));
        r
    }

    fn fresh(&mut self, prefix: &str) -> String {
        let n = self.aggregators.len() + self.post.len();
        let name = fresh(&self.taken, prefix, n);
        self.taken.push(name.clone());
        name
    }

    /// Plans the aggregate call `f` over rows of `scope`.
    pub fn call(
        &mut self,
        f: &Function,
        scope: &Scope<'_>,
        virtuals: &mut Virtuals,
        approximate: bool,
    ) -> Result<AggRef, SqlError> {
        let name = function_name(f);
        let filter = match &f.filter {
            Some(cond) => Some(filter(cond, scope, virtuals)?),
            None => None,
        };
        let wrap = |spec: Value| match &filter {
            Some(fl) => json!({"type": "filtered", "filter": fl, "aggregator": with_name(spec)}),
            None => spec,
        };
        if name == "COUNT" && is_star(f) {
            return Ok(self.add(wrap(json!({"type": "count"})), SqlType::Bigint, json!(0)));
        }
        let args = function_args(f)?;
        let arg = |i: usize| -> Result<super::scalar::Scalar, SqlError> {
            let e = args.get(i).ok_or_else(|| SqlError::validation(format!("{name} needs an argument")))?;
            scope.scalar(e)
        };
        let distinct = is_distinct(f);
        match (name.as_str(), distinct) {
            ("COUNT", false) => {
                let x = arg(0)?;
                let column = virtuals.column_for(&x);
                let not_null = json!({"type": "not", "field": {"type": "null", "column": column}});
                let f = match &filter {
                    Some(fl) => json!({"type": "and", "fields": [fl, not_null]}),
                    None => not_null,
                };
                let spec = json!({"type": "filtered", "filter": f, "aggregator": {"type": "count", "name": "_"}});
                Ok(self.add(spec, SqlType::Bigint, json!(0)))
            }
            ("COUNT", true) | ("APPROX_COUNT_DISTINCT", _) | ("APPROX_COUNT_DISTINCT_DS_HLL", _) => {
                if name == "COUNT" && !approximate {
                    return Err(SqlError::unsupported(
                        "exact COUNT(DISTINCT ...) (context useApproximateCountDistinct: false); the approximate count is the default",
                    ));
                }
                let x = arg(0)?;
                let column = virtuals.column_for(&x);
                let spec = match &x.ty {
                    SqlType::Complex(kind) if kind.to_ascii_lowercase().contains("hll") || kind == "hyperUnique" => {
                        json!({"type": "HLLSketchMerge", "fieldName": column, "round": true})
                    }
                    SqlType::Complex(kind) => {
                        return Err(SqlError::validation(format!(
                            "cannot count distinct values of a COMPLEX<{kind}> column"
                        )))
                    }
                    _ => json!({"type": "HLLSketchBuild", "fieldName": column, "round": true}),
                };
                Ok(self.add(wrap(spec), SqlType::Bigint, json!(0)))
            }
            (_, true) => Err(SqlError::unsupported(format!("{name}(DISTINCT ...)"))),
            ("SUM" | "MIN" | "MAX", _) => {
                let x = numeric(arg(0)?, &name)?;
                let column = virtuals.column_for(&x);
                let (prefix, ty) = match &x.ty {
                    SqlType::Timestamp if name != "SUM" => ("long", SqlType::Timestamp),
                    t if t.is_integer() => ("long", SqlType::Bigint),
                    _ => ("double", SqlType::Double),
                };
                let op = match name.as_str() {
                    "SUM" => "Sum",
                    "MIN" => "Min",
                    _ => "Max",
                };
                Ok(self.add(wrap(json!({"type": format!("{prefix}{op}"), "fieldName": column})), ty, Value::Null))
            }
            ("AVG", _) => {
                let x = numeric(arg(0)?, &name)?;
                let column = virtuals.column_for(&x);
                let kind = if x.ty.is_integer() { "longSum" } else { "doubleSum" };
                let sum = self.add(wrap(json!({"type": kind, "fieldName": column})), x.ty.clone(), Value::Null);
                let not_null = json!({"type": "not", "field": {"type": "null", "column": column}});
                let f = match &filter {
                    Some(fl) => json!({"type": "and", "fields": [fl, not_null]}),
                    None => not_null,
                };
                let count = self.add(
                    json!({"type": "filtered", "filter": f, "aggregator": {"type": "count", "name": "_"}}),
                    SqlType::Bigint,
                    json!(0),
                );
                let spec = json!({"type": "arithmetic", "fn": "quotient", "fields": [
                    {"type": "fieldAccess", "fieldName": sum.name}, {"type": "fieldAccess", "fieldName": count.name}]});
                Ok(self.add_post(spec, SqlType::Double))
            }
            ("EARLIEST" | "LATEST" | "ANY_VALUE" | "EARLIEST_BY" | "LATEST_BY", _) => {
                let x = arg(0)?;
                let column = virtuals.column_for(&x);
                let which = if name.starts_with("LATEST") { "Last" } else { "First" };
                let by = name.ends_with("_BY");
                let time_column = if by {
                    let t = arg(1)?;
                    if t.ty != SqlType::Timestamp && !t.ty.is_integer() {
                        return Err(SqlError::validation(format!("{name}'s second argument must be a TIMESTAMP")));
                    }
                    Some(virtuals.column_for(&t))
                } else {
                    None
                };
                let (prefix, ty) = match &x.ty {
                    t if t.is_integer() => ("long", SqlType::Bigint),
                    SqlType::Double | SqlType::Float => ("double", SqlType::Double),
                    SqlType::Varchar => ("string", SqlType::Varchar),
                    other => return Err(SqlError::validation(format!("{name} of a {} column", other.sql_name()))),
                };
                let mut spec = json!({"type": format!("{prefix}{which}"), "fieldName": column});
                if let Some(t) = time_column {
                    spec["timeColumn"] = json!(t);
                }
                if let Some(max) = args.get(if by { 2 } else { 1 }) {
                    match scope.scalar(max)?.constant {
                        Some(super::scalar::Const::Long(n)) if n > 0 => spec["maxStringBytes"] = json!(n),
                        _ => {
                            return Err(SqlError::validation(format!(
                                "{name} maxBytesPerString must be a positive integer"
                            )))
                        }
                    }
                }
                Ok(self.add(wrap(spec), ty, Value::Null))
            }
            (other, _) => Err(SqlError::unsupported(format!("aggregate function {other}"))),
        }
    }
}

/// The inner aggregator of a `filtered` one keeps a name of its own.
fn with_name(mut spec: Value) -> Value {
    if spec.get("name").is_none() {
        spec["name"] = json!("_");
    }
    spec
}

fn numeric(x: super::scalar::Scalar, function: &str) -> Result<super::scalar::Scalar, SqlError> {
    if x.ty.is_numeric() {
        Ok(x)
    } else {
        Err(SqlError::validation(format!("{function} of a {} value ({})", x.ty.sql_name(), crate::short(&x.expr))))
    }
}

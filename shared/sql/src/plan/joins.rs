//! JOINs in FROM, planned as Druid's join datasource: the left table read segment by segment
//! (fanned out as any table), each right side a lookup or a subquery's rows (a datasource on
//! the right is read as `SELECT * FROM` it), held in memory and joined on equalities (one, or
//! several joined by AND) each between an expression of the left rows and a column of the
//! right. The right columns are named with the join's prefix (`j0.v`), as Druid's planner names
//! them; `t.v` and a bare `v` that only the right side has resolve to them.

use super::names::object_path;
pub use super::scalar::Qualifier;
use super::scalar::{quote_column, Scope};
use super::{plan_query, Input, Options, Plan, Relation};
use crate::types::Column;
use crate::SqlError;
use serde_json::{json, Value};
use sqlparser::ast::{BinaryOperator, Expr, Join, JoinConstraint, JoinOperator, TableFactor};

/// Most joins in one FROM clause (the engine's bound).
pub const MAX_SQL_JOINS: usize = sluice_query::model::MAX_JOINS;

/// One join of a FROM clause.
#[derive(Debug, Clone)]
pub struct JoinPlan {
    /// The right side.
    pub right: JoinSide,
    /// The prefix of the right columns' names.
    pub prefix: String,
    /// Druid's condition expression.
    pub condition: String,
    /// `LEFT` or `INNER`.
    pub kind: &'static str,
}

/// The right side of a join.
#[derive(Debug, Clone)]
pub enum JoinSide {
    /// A lookup, by name.
    Lookup(String),
    /// A subquery's rows, run before the query and inlined into it.
    Rows(Box<Plan>),
}

/// The left relation joined to each of `joins`, with the qualifiers of every side.
pub fn join_all(
    mut relation: Relation,
    mut qualifiers: Vec<Qualifier>,
    joins: &[Join],
    options: &Options<'_>,
) -> Result<(Relation, Vec<Qualifier>), SqlError> {
    if joins.len() > MAX_SQL_JOINS {
        return Err(SqlError::unsupported(format!("more than {MAX_SQL_JOINS} joins")));
    }
    for join in joins {
        let (kind, constraint) = match &join.join_operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) => ("INNER", c),
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => ("LEFT", c),
            JoinOperator::Right(_) | JoinOperator::RightOuter(_) => return Err(SqlError::unsupported("RIGHT JOIN")),
            JoinOperator::FullOuter(_) => return Err(SqlError::unsupported("FULL JOIN")),
            JoinOperator::CrossJoin(_) => return Err(SqlError::unsupported("CROSS JOIN")),
            other => return Err(SqlError::unsupported(crate::short(&format!("{other:?}")).into_owned())),
        };
        let JoinConstraint::On(on) = constraint else {
            return Err(SqlError::unsupported("a join without ON (USING, NATURAL or none)"));
        };
        let (side, columns, names) = right_side(&join.relation, options)?;
        let prefix = unused_prefix(&relation.columns);
        let condition = {
            let scope = Scope {
                columns: &relation.columns,
                qualifiers: qualifiers.clone(),
                now_ms: options.now_ms,
                zone: options.time_zone.clone(),
                substitute: None,
            };
            condition(on, &scope, &columns, &names, &prefix)?
        };
        relation.columns.extend(columns.into_iter().map(|c| Column { name: format!("{prefix}{}", c.name), ..c }));
        qualifiers.extend(names.into_iter().map(|n| (n, prefix.clone())));
        relation.joins.push(JoinPlan { right: side, prefix, condition, kind });
    }
    Ok((relation, qualifiers))
}

/// The right side of a join, its columns and the names it may be qualified by.
fn right_side(factor: &TableFactor, options: &Options<'_>) -> Result<(JoinSide, Vec<Column>, Vec<String>), SqlError> {
    match factor {
        TableFactor::Table { name, alias, args: None, .. } => {
            let path = object_path(name);
            let mut names = vec![path.last().cloned().unwrap_or_default()];
            names.extend(alias.as_ref().map(|a| a.name.value.clone()));
            let relation = options.catalog.relation(&path)?;
            let side = match relation.input {
                Input::Lookup(lookup) => JoinSide::Lookup(lookup),
                _ => {
                    // A table on the right is read whole, as Druid reads it: a subquery.
                    let text = format!("SELECT * FROM {name}");
                    let parsed = crate::parse::parse(&text, &[])?;
                    JoinSide::Rows(Box::new(plan_query(&parsed.query, options)?))
                }
            };
            Ok((side, relation.columns, names))
        }
        TableFactor::Derived { subquery, alias, lateral: false, .. } => {
            let (inner, columns) = derived(subquery, alias.as_ref(), options)?;
            let names = alias.iter().map(|a| a.name.value.clone()).collect();
            Ok((JoinSide::Rows(Box::new(inner)), columns, names))
        }
        other => Err(SqlError::unsupported(format!("JOIN {}", crate::short(&other.to_string())))),
    }
}

/// A subquery in FROM planned, with its columns named as its alias names them.
pub fn derived(
    subquery: &sqlparser::ast::Query,
    alias: Option<&sqlparser::ast::TableAlias>,
    options: &Options<'_>,
) -> Result<(Plan, Vec<Column>), SqlError> {
    let inner = plan_query(subquery, options)?;
    let mut columns = inner.columns();
    if let Some(a) = alias.filter(|a| !a.columns.is_empty()) {
        if a.columns.len() != columns.len() {
            return Err(SqlError::validation("the subquery alias names a different number of columns"));
        }
        for (c, n) in columns.iter_mut().zip(&a.columns) {
            c.name = n.name.value.clone();
        }
    }
    Ok((inner, columns))
}

/// `j0.`, with underscores before the `j` until no left column starts with that and a digit
/// (Druid's rule: the second join of a FROM clause is `_j0.`).
fn unused_prefix(left: &[Column]) -> String {
    let mut base = String::from("j");
    let taken = |base: &str| {
        left.iter()
            .any(|c| c.name.strip_prefix(base).is_some_and(|rest| rest.starts_with(|ch: char| ch.is_ascii_digit())))
    };
    while taken(&base) {
        base.insert(0, '_');
    }
    base + "0."
}

/// Druid's condition for `on`: equalities (joined by AND) each between an expression of the
/// left rows and a column of the right side.
fn condition(
    on: &Expr,
    left: &Scope<'_>,
    right: &[Column],
    names: &[String],
    prefix: &str,
) -> Result<String, SqlError> {
    let unsupported = || {
        SqlError::unsupported(format!(
            "join condition {}: only equalities (joined by AND) between the left side and a column of the right side",
            crate::short(&on.to_string())
        ))
    };
    let mut on = on;
    while let Expr::Nested(inner) = on {
        on = inner.as_ref();
    }
    if let Expr::BinaryOp { left: a, op: BinaryOperator::And, right: b } = on {
        let a = condition(a, left, right, names, prefix)?;
        let b = condition(b, left, right, names, prefix)?;
        return Ok(format!("({a} && {b})"));
    }
    let Expr::BinaryOp { left: a, op: BinaryOperator::Eq, right: b } = on else {
        return Err(unsupported());
    };
    let right_column = |e: &Expr| -> Option<String> {
        let path = super::names::ident_path(e)?;
        let (name, qualifier) = path.split_last()?;
        let ours = match qualifier.last() {
            Some(q) => names.iter().any(|n| n == q),
            None => left.column(&path).is_err(),
        };
        (ours && right.iter().any(|c| &c.name == name)).then(|| name.clone())
    };
    let (key, column) = match (right_column(a), right_column(b)) {
        (None, Some(c)) => (a, c),
        (Some(c), None) => (b, c),
        _ => return Err(unsupported()),
    };
    let key = left.scalar(key).map_err(|e| match e {
        SqlError::Validation(_) => unsupported(),
        other => other,
    })?;
    Ok(format!("({} == {})", key.expr, quote_column(&format!("{prefix}{column}"))))
}

/// The native datasource of `left` (a table name, or `inline` for rows held in memory) with
/// `joins`: Druid's join datasource, a subquery's side as `{"type": "query"}` until its rows
/// are inlined ([`inline_rows`]).
pub fn datasource(left: &str, joins: &[JoinPlan]) -> Value {
    let mut out = json!(left);
    for j in joins {
        let right = match &j.right {
            JoinSide::Lookup(name) => json!({"type": "lookup", "lookup": name}),
            JoinSide::Rows(plan) => json!({"type": "query", "query": plan.native}),
        };
        out = json!({"type": "join", "left": out, "right": right, "rightPrefix": j.prefix,
                     "condition": j.condition, "joinType": j.kind});
    }
    out
}

/// Replaces each `{"type": "query"}` right side of `datasource`, innermost join first, with
/// the next of `rows` (column names and rows) as an inline datasource.
pub fn inline_rows(datasource: &mut Value, rows: &mut impl Iterator<Item = (Vec<String>, Vec<Vec<Value>>)>) {
    if datasource.get("type").and_then(Value::as_str) != Some("join") {
        return;
    }
    if let Some(left) = datasource.get_mut("left") {
        inline_rows(left, rows);
    }
    if datasource["right"]["type"] == "query" {
        if let Some((columns, rows)) = rows.next() {
            datasource["right"] = json!({"type": "inline", "columnNames": columns, "rows": rows});
        }
    }
}

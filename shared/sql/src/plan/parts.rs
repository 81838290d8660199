//! The parts of a SELECT both planners read: the relation, the expanded select list, the
//! time range and remaining conditions, ORDER BY keys and LIMIT.

use super::filter::filter;
use super::intervals::TimeRange;
use super::names::{function_name, ident_path};
use super::scalar::{Const, Scope};
use super::virtuals::Virtuals;
use super::{Input, Options, Relation};
use crate::types::Column;
use crate::SqlError;
use serde_json::{json, Value};
use sqlparser::ast::{Expr, LimitClause, Query, Select};
use std::ops::ControlFlow;

/// One select-list item: its expression and result name.
#[derive(Debug, Clone)]
pub struct Item {
    /// The expression.
    pub expr: Expr,
    /// The result column name.
    pub name: String,
}

/// One ORDER BY key.
#[derive(Debug, Clone)]
pub struct OrderKey {
    /// The expression (a select item's when it names one).
    pub expr: Expr,
    /// The select item it names, if any.
    pub item: Option<usize>,
    /// Largest first.
    pub descending: bool,
}

/// The parts of a SELECT the planners share.
pub struct Parts<'a> {
    /// The relation read.
    pub relation: Relation,
    /// Table names and aliases, with their columns' prefixes.
    pub qualifiers: Vec<super::scalar::Qualifier>,
    /// The select list, expanded.
    pub items: Vec<Item>,
    /// The instants covered.
    pub range: TimeRange,
    /// Remaining WHERE conjuncts.
    pub conditions: Vec<Expr>,
    /// The SELECT.
    pub select: &'a Select,
    /// ORDER BY keys.
    pub order: Vec<OrderKey>,
    /// LIMIT.
    pub limit: Option<u64>,
    /// OFFSET.
    pub offset: u64,
    /// Planning options.
    pub options: &'a Options<'a>,
}

impl Parts<'_> {
    /// The scope of the relation's rows.
    pub fn scope(&self) -> Scope<'_> {
        Scope {
            columns: &self.relation.columns,
            qualifiers: self.qualifiers.clone(),
            now_ms: self.options.now_ms,
            zone: self.options.time_zone.clone(),
            substitute: None,
        }
    }

    /// The native filter of the WHERE conjuncts left after the intervals, if any.
    pub fn filter(&self, virtuals: &mut Virtuals) -> Result<Option<Value>, SqlError> {
        let scope = self.scope();
        let mut fields = Vec::new();
        for c in &self.conditions {
            fields.push(filter(c, &scope, virtuals)?);
        }
        Ok(match fields.len() {
            0 => None,
            1 => fields.pop(),
            _ => Some(json!({"type": "and", "fields": fields})),
        })
    }

    /// The native query's `dataSource`.
    pub fn datasource(&self) -> Value {
        let left = match &self.relation.input {
            Input::Table(t) => t.as_str(),
            _ => "inline",
        };
        super::joins::datasource(left, &self.relation.joins)
    }

    /// The native query's context.
    pub fn context(&self, extra: &[(&str, Value)]) -> Value {
        let mut c = self.options.context.clone();
        for (k, v) in extra {
            c.insert((*k).to_string(), v.clone());
        }
        Value::Object(c)
    }
}

/// A non-negative integer constant of LIMIT or OFFSET.
pub fn count(e: &Expr, what: &str, options: &Options<'_>) -> Result<u64, SqlError> {
    let scope = Scope { columns: &[], qualifiers: Vec::new(), now_ms: options.now_ms, zone: None, substitute: None };
    match scope.scalar(e)?.constant {
        Some(Const::Long(n)) if n >= 0 => Ok(n as u64),
        _ => Err(SqlError::validation(format!(
            "{what} must be a non-negative integer, got {}",
            crate::short(&e.to_string())
        ))),
    }
}

/// The select item an ORDER BY or GROUP BY expression names: `n` (1-based), an alias (unless
/// it names one of `columns` first, as GROUP BY reads input columns before aliases), or the
/// item's own expression.
pub fn resolve_item(
    e: &Expr,
    items: &[Item],
    columns: &[Column],
    clause: &str,
    options: &Options<'_>,
) -> Result<Option<usize>, SqlError> {
    if let Expr::Value(v) = e {
        if let sqlparser::ast::Value::Number(..) = v.value {
            let n = count(e, clause, options)?;
            if n == 0 || n as usize > items.len() {
                return Err(SqlError::validation(format!("{clause} ordinal {n} is out of range 1..{}", items.len())));
            }
            return Ok(Some(n as usize - 1));
        }
    }
    if let Some([name]) = ident_path(e).as_deref() {
        if !columns.iter().any(|c| &c.name == name) {
            if let Some(i) = items.iter().position(|it| &it.name == name) {
                return Ok(Some(i));
            }
        }
    }
    Ok(items.iter().position(|it| it.expr == *e))
}

/// Whether `e` calls an aggregate function.
pub fn has_aggregate(e: &Expr) -> bool {
    sqlparser::ast::visit_expressions(e, |x| match x {
        Expr::Function(f) if super::aggregate::is_aggregate(&function_name(f)) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// LIMIT and OFFSET of `query`.
pub fn limits(query: &Query, options: &Options<'_>) -> Result<(Option<u64>, u64), SqlError> {
    match &query.limit_clause {
        None => Ok((None, 0)),
        Some(LimitClause::LimitOffset { limit, offset, limit_by }) => {
            if !limit_by.is_empty() {
                return Err(SqlError::unsupported("LIMIT BY"));
            }
            let limit = limit.as_ref().map(|l| count(l, "LIMIT", options)).transpose()?;
            let offset = offset.as_ref().map(|o| count(&o.value, "OFFSET", options)).transpose()?.unwrap_or(0);
            Ok((limit, offset))
        }
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => {
            Ok((Some(count(limit, "LIMIT", options)?), count(offset, "OFFSET", options)?))
        }
    }
}

/// One ORDER BY key over result columns: the item it names (an ordinal or an alias) if any,
/// its expression, and whether it descends.
pub type ResultKey<'q> = (Option<usize>, &'q Expr, bool);

/// The ORDER BY keys of `query` over result columns `items`.
pub fn order_over<'q>(query: &'q Query, items: &[Item], options: &Options<'_>) -> Result<Vec<ResultKey<'q>>, SqlError> {
    let Some(order) = &query.order_by else { return Ok(Vec::new()) };
    let sqlparser::ast::OrderByKind::Expressions(keys) = &order.kind else {
        return Err(SqlError::unsupported("ORDER BY ALL"));
    };
    keys.iter()
        .map(|o| {
            let descending = matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc));
            Ok((resolve_item(&o.expr, items, &[], "ORDER BY", options)?, &o.expr, descending))
        })
        .collect()
}

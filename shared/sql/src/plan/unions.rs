//! `UNION ALL` inside a query (a subquery's, or a top-level one with ORDER BY or LIMIT over
//! it): each branch planned as a query of its own, their rows appended under the first
//! branch's column names (bounded as a subquery's rows), then ordered and cut.

use super::parts::{order_over, Item};
use super::{After, Input, Options, Output, Plan, Source};
use crate::SqlError;
use sqlparser::ast::{Expr, Ident, Query};

/// The field a union's column `i` is read from.
pub fn field(i: usize) -> String {
    format!("__u{i}")
}

/// Plans `query`, whose body is a set operation.
pub fn plan_union(query: &Query, options: &Options<'_>) -> Result<Plan, SqlError> {
    let mut bare = query.clone();
    bare.order_by = None;
    bare.limit_clause = None;
    let branches = crate::union_all::branches(&bare)?.ok_or_else(|| SqlError::unsupported("this set operation"))?;
    let plans: Vec<Plan> = branches.iter().map(|b| super::plan_query(b, options)).collect::<Result<_, _>>()?;
    let columns = plans[0].columns();
    for (i, p) in plans.iter().enumerate().skip(1) {
        let (theirs, ours) = (p.columns().len(), columns.len());
        if theirs != ours {
            return Err(SqlError::validation(format!(
                "UNION ALL branch {} has {theirs} columns, the first has {ours}",
                i + 1
            )));
        }
    }
    let outputs: Vec<Output> = (columns.iter().enumerate())
        .map(|(i, c)| Output { column: c.clone(), source: Source::Field(field(i)) })
        .collect();
    let items: Vec<Item> = columns
        .iter()
        .map(|c| Item { expr: Expr::Identifier(Ident::new(c.name.clone())), name: c.name.clone() })
        .collect();
    let mut after = After::default();
    for (item, _, descending) in order_over(query, &items, options)? {
        let at = item.ok_or_else(|| {
            SqlError::unsupported("ORDER BY an expression over a UNION ALL (order by its columns or ordinals)")
        })?;
        after.order.push((at, descending));
    }
    (after.limit, after.offset) = super::parts::limits(query, options)?;
    let visible = outputs.len();
    Ok(Plan { input: Input::Union(plans), native: None, outputs, one_row: None, visible, after, joins: Vec::new() })
}

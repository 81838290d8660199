//! `UNION ALL` at the top of a query, as Druid answers it: each branch is a query of its own,
//! run in turn, its rows appended to the first's under the first's column names (with ORDER
//! BY or LIMIT over the whole union, or inside a subquery, the planner's union reads them:
//! `plan::unions`). `UNION` without `ALL`, `INTERSECT` and `EXCEPT` are refused by name.

use crate::SqlError;
use sqlparser::ast::{Query, SetExpr, SetOperator, SetQuantifier, Table};

/// Branches a `UNION ALL` may have.
pub const MAX_BRANCHES: usize = 64;

/// The branches of `query` when it is a `UNION ALL` without ORDER BY or LIMIT over it, each a
/// query of its own; `None` when it is not a set operation or orders or cuts the union.
pub fn branches(query: &Query) -> Result<Option<Vec<Query>>, SqlError> {
    if !matches!(query.body.as_ref(), SetExpr::SetOperation { .. }) {
        return Ok(None);
    }
    if query.order_by.is_some() || query.limit_clause.is_some() {
        return Ok(None);
    }
    let mut bodies = Vec::new();
    collect(query.body.as_ref(), &mut bodies)?;
    if bodies.len() > MAX_BRANCHES {
        return Err(SqlError::unsupported(format!("a UNION ALL of more than {MAX_BRANCHES} queries")));
    }
    // Each branch is the query around the union with one branch as its body: the shell is
    // copied without the union, which a copy per branch would copy whole each time.
    let shell = Query {
        body: Box::new(SetExpr::Table(Box::new(Table { table_name: None, schema_name: None }))),
        ..query.clone()
    };
    let branch = |body: &SetExpr| Query { body: Box::new(body.clone()), ..shell.clone() };
    Ok(Some(bodies.into_iter().map(branch).collect()))
}

fn collect<'a>(body: &'a SetExpr, out: &mut Vec<&'a SetExpr>) -> Result<(), SqlError> {
    match body {
        SetExpr::SetOperation { op: SetOperator::Union, set_quantifier: SetQuantifier::All, left, right } => {
            if out.len() > MAX_BRANCHES {
                return Ok(());
            }
            collect(left, out)?;
            collect(right, out)
        }
        SetExpr::SetOperation { op: SetOperator::Union, .. } => {
            Err(SqlError::unsupported("UNION without ALL (Druid answers UNION ALL)"))
        }
        SetExpr::SetOperation { op, .. } => Err(SqlError::unsupported(format!("{op}"))),
        other => {
            out.push(other);
            Ok(())
        }
    }
}

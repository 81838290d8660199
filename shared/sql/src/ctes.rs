//! `WITH`: each common table expression is put, as a subquery in FROM, wherever its name is
//! read (in the later expressions of the same `WITH` too), so that the query runs as one
//! written with subqueries does. A name read many times is copied each time; the copies, with
//! the copies inside them (nested `WITH`s' too), are counted in the request's
//! [`Budget`] before each is made (subqueries, syntax nodes and bytes), so that expressions
//! reading each other twice cannot grow the query exponentially.
//!
//! A read is replaced after its table factor has been visited, so the subquery put in its place
//! is never visited again: a name reading a table of the same name
//! (`WITH t AS (SELECT ... FROM t)`) reads the table, and no marker is written into the tree
//! (a marker a user could also write in a quoted name would escape the bounds).
//! `WITH RECURSIVE` and column lists are refused by name.

use crate::measure::{self, Budget, Size};
use crate::SqlError;
use sqlparser::ast::{Ident, Query, TableAlias, TableFactor, VisitMut, VisitorMut};
use std::ops::ControlFlow;

/// Replaces `query`'s `WITH` by subqueries where its names are read, within `budget`.
pub fn inline(query: &mut Query, budget: &mut Budget) -> Result<(), SqlError> {
    let Some(with) = query.with.take() else { return Ok(()) };
    if with.recursive {
        return Err(SqlError::unsupported("WITH RECURSIVE"));
    }
    let mut ctes = Vec::new();
    for cte in with.cte_tables {
        if !cte.alias.columns.is_empty() {
            let name = &cte.alias.name;
            return Err(SqlError::unsupported(format!("WITH {name} (column, ...): name the columns in its SELECT")));
        }
        let mut body = *cte.query;
        let before = budget.num_copies();
        inline(&mut body, budget)?;
        substitute(&ctes, &mut body, budget)?;
        let weight = 1 + budget.num_copies() - before;
        let size = measure::size(&body);
        ctes.push(Cte { name: cte.alias.name, body, weight, size });
    }
    substitute(&ctes, query, budget)
}

struct Cte {
    name: Ident,
    body: Query,
    /// Subqueries a copy of it holds, itself included.
    weight: usize,
    /// What a copy of it holds.
    size: Size,
}

/// Puts the subqueries `ctes` name into `query`, counting each copy in `budget`.
fn substitute(ctes: &[Cte], query: &mut Query, budget: &mut Budget) -> Result<(), SqlError> {
    match query.visit(&mut Copying { ctes, budget }) {
        ControlFlow::Break(e) => Err(e),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Replaces each read of a defined name, once its table factor has been visited, by a copy of
/// the subquery it names.
struct Copying<'a> {
    ctes: &'a [Cte],
    budget: &'a mut Budget,
}

impl VisitorMut for Copying<'_> {
    type Break = SqlError;

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<SqlError> {
        let TableFactor::Table { name, alias, args: None, .. } = factor else { return ControlFlow::Continue(()) };
        let [part] = name.0.as_slice() else { return ControlFlow::Continue(()) };
        let Some(ident) = part.as_ident() else { return ControlFlow::Continue(()) };
        let Some(cte) = self.ctes.iter().rev().find(|c| c.name.value == ident.value) else {
            return ControlFlow::Continue(());
        };
        if let Err(e) = self.budget.copy(cte.weight, cte.size) {
            return ControlFlow::Break(e);
        }
        let alias = alias.take().unwrap_or_else(|| TableAlias {
            explicit: true,
            name: cte.name.clone(),
            columns: Vec::new(),
            at: None,
        });
        let subquery = Box::new(cte.body.clone());
        *factor = TableFactor::Derived { lateral: false, subquery, alias: Some(alias), sample: None };
        ControlFlow::Continue(())
    }
}

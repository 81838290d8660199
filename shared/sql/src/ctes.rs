//! `WITH`: each common table expression is put, as a subquery in FROM, wherever its name is
//! read (in the later expressions of the same `WITH` too), so that the query runs as one
//! written with subqueries does. A name read many times is copied each time; the copies, with
//! the copies inside them, are bounded by count ([`MAX_COPIES`]) and by the syntax nodes they
//! add ([`crate::measure::MAX_NODES`]), checked before each copy is made, so that expressions
//! reading each other twice cannot grow the query exponentially.
//!
//! A read is replaced after its table factor has been visited, so the subquery put in its place
//! is never visited again: a name reading a table of the same name
//! (`WITH t AS (SELECT ... FROM t)`) reads the table, and no marker is written into the tree
//! (a marker a user could also write in a quoted name would escape the bounds).
//! `WITH RECURSIVE` and column lists are refused by name.

use crate::measure::{self, Budget};
use crate::SqlError;
use sqlparser::ast::{Ident, Query, TableAlias, TableFactor, VisitMut, VisitorMut};
use std::ops::ControlFlow;

/// Subqueries a `WITH` may copy into its query, counting those inside each copy.
pub const MAX_COPIES: usize = 256;

/// Replaces `query`'s `WITH` by subqueries where its names are read, within `budget`.
pub fn inline(query: &mut Query, budget: &mut Budget) -> Result<(), SqlError> {
    let Some(with) = query.with.take() else { return Ok(()) };
    if with.recursive {
        return Err(SqlError::unsupported("WITH RECURSIVE"));
    }
    let mut defined = Defined { ctes: Vec::new(), copies: 0, budget };
    for cte in with.cte_tables {
        if !cte.alias.columns.is_empty() {
            let name = &cte.alias.name;
            return Err(SqlError::unsupported(format!("WITH {name} (column, ...): name the columns in its SELECT")));
        }
        let mut body = *cte.query;
        inline(&mut body, defined.budget)?;
        let weight = 1 + defined.substitute(&mut body)?;
        let nodes = measure::nodes(&body);
        defined.ctes.push(Cte { name: cte.alias.name, body, weight, nodes });
    }
    defined.substitute(query).map(|_| ())
}

struct Cte {
    name: Ident,
    body: Query,
    /// Subqueries a copy of it holds, itself included.
    weight: usize,
    /// Syntax nodes a copy of it holds.
    nodes: usize,
}

struct Defined<'b> {
    ctes: Vec<Cte>,
    copies: usize,
    budget: &'b mut Budget,
}

impl Defined<'_> {
    /// Puts the named subqueries into `query`; returns how many subqueries were copied in.
    fn substitute(&mut self, query: &mut Query) -> Result<usize, SqlError> {
        let before = self.copies;
        if let ControlFlow::Break(e) = query.visit(&mut Copying { defined: self }) {
            return Err(e);
        }
        Ok(self.copies - before)
    }
}

/// Replaces each read of a defined name, once its table factor has been visited, by a copy of
/// the subquery it names.
struct Copying<'a, 'b> {
    defined: &'a mut Defined<'b>,
}

impl VisitorMut for Copying<'_, '_> {
    type Break = SqlError;

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<SqlError> {
        let TableFactor::Table { name, alias, args: None, .. } = factor else { return ControlFlow::Continue(()) };
        let [part] = name.0.as_slice() else { return ControlFlow::Continue(()) };
        let Some(ident) = part.as_ident() else { return ControlFlow::Continue(()) };
        let defined = &mut *self.defined;
        let Some(cte) = defined.ctes.iter().rev().find(|c| c.name.value == ident.value) else {
            return ControlFlow::Continue(());
        };
        defined.copies += cte.weight;
        if defined.copies > MAX_COPIES {
            return ControlFlow::Break(SqlError::unsupported(format!(
                "a WITH whose names, read where they are read, copy more than {MAX_COPIES} subqueries"
            )));
        }
        if let Err(e) = defined.budget.add_nodes(cte.nodes, "a WITH's names copied where they are read") {
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

//! `WITH`: each common table expression is put, as a subquery in FROM, wherever its name is
//! read (in the later expressions of the same `WITH` too), so that the query runs as one
//! written with subqueries does. A name read many times is copied each time; the copies, with
//! the copies inside them, are bounded ([`MAX_COPIES`]) so that expressions reading each other
//! twice cannot grow the query exponentially. A name is replaced in two passes (a placeholder
//! first), so that a name reading a table of the same name (`WITH t AS (SELECT ... FROM t)`)
//! reads the table. `WITH RECURSIVE` and column lists are refused by name.

use crate::SqlError;
use sqlparser::ast::{Ident, ObjectName, Query, TableAlias, TableFactor, VisitMut, VisitorMut};
use std::ops::ControlFlow;

/// Subqueries a `WITH` may copy into its query, counting those inside each copy.
pub const MAX_COPIES: usize = 256;

/// A placeholder's prefix: no identifier a user writes holds a NUL.
const PLACEHOLDER: &str = "\u{0}with#";

/// Replaces `query`'s `WITH` by subqueries where its names are read.
pub fn inline(query: &mut Query) -> Result<(), SqlError> {
    let Some(with) = query.with.take() else { return Ok(()) };
    if with.recursive {
        return Err(SqlError::unsupported("WITH RECURSIVE"));
    }
    let mut defined = Defined { ctes: Vec::new(), copies: 0 };
    for cte in with.cte_tables {
        if !cte.alias.columns.is_empty() {
            let name = &cte.alias.name;
            return Err(SqlError::unsupported(format!("WITH {name} (column, ...): name the columns in its SELECT")));
        }
        let mut body = *cte.query;
        inline(&mut body)?;
        let weight = 1 + defined.substitute(&mut body)?;
        defined.ctes.push(Cte { name: cte.alias.name, body, weight });
    }
    defined.substitute(query).map(|_| ())
}

struct Cte {
    name: Ident,
    body: Query,
    /// Subqueries a copy of it holds, itself included.
    weight: usize,
}

struct Defined {
    ctes: Vec<Cte>,
    copies: usize,
}

impl Defined {
    /// Puts the named subqueries into `query`; returns how many subqueries were copied in.
    fn substitute(&mut self, query: &mut Query) -> Result<usize, SqlError> {
        let before = self.copies;
        let mut marking = Marking { defined: self };
        if let ControlFlow::Break(e) = query.visit(&mut marking) {
            return Err(e);
        }
        let _ = query.visit(&mut Filling { ctes: &self.ctes });
        Ok(self.copies - before)
    }
}

/// The first pass: each read of a name becomes a placeholder naming it.
struct Marking<'a> {
    defined: &'a mut Defined,
}

impl VisitorMut for Marking<'_> {
    type Break = SqlError;

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<SqlError> {
        let TableFactor::Table { name, args: None, .. } = factor else { return ControlFlow::Continue(()) };
        let [part] = name.0.as_slice() else { return ControlFlow::Continue(()) };
        let Some(ident) = part.as_ident() else { return ControlFlow::Continue(()) };
        let Some(i) = self.defined.ctes.iter().rposition(|c| c.name.value == ident.value) else {
            return ControlFlow::Continue(());
        };
        self.defined.copies += self.defined.ctes[i].weight;
        if self.defined.copies > MAX_COPIES {
            return ControlFlow::Break(SqlError::unsupported(format!(
                "a WITH whose names, read where they are read, copy more than {MAX_COPIES} subqueries"
            )));
        }
        *name = ObjectName::from(vec![Ident::new(format!("{PLACEHOLDER}{i}"))]);
        ControlFlow::Continue(())
    }
}

/// The second pass: each placeholder becomes the subquery it names.
struct Filling<'a> {
    ctes: &'a [Cte],
}

impl VisitorMut for Filling<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, alias, .. } = factor else { return ControlFlow::Continue(()) };
        let Some(i) = name.0.first().and_then(|p| p.as_ident()).and_then(|id| id.value.strip_prefix(PLACEHOLDER))
        else {
            return ControlFlow::Continue(());
        };
        let Some(cte) = i.parse::<usize>().ok().and_then(|i| self.ctes.get(i)) else {
            return ControlFlow::Continue(());
        };
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

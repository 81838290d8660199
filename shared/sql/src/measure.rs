//! The size of a query after every rewrite, and the deadline its rewrites run to.
//!
//! Parsing bounds the text (tokens, nesting); a rewrite (`WITH` names copied where they are
//! read, a `UNION ALL` split into branches) can still make the tree larger than the text. Each
//! rewrite adds what it copies to one [`Budget`] for the whole request before copying it, and
//! the tree is measured whole again before it is planned ([`Budget::measured`]), so that no
//! rewrite, present or future, hands the planner more than [`MAX_NODES`] nodes. The budget also
//! carries the request's deadline: a rewrite stops at it, on whatever thread it runs.

use crate::SqlError;
use sqlparser::ast::{Expr, Query, TableFactor, Visit, Visitor};
use std::ops::ControlFlow;
use std::time::Instant;

/// Most syntax nodes (expressions, queries and table factors) a request's query may hold after
/// its rewrites: two and a half times a statement of the most tokens parsing accepts.
pub const MAX_NODES: usize = 250_000;

/// The syntax nodes a request may still add, and the instant its rewrites stop at.
#[derive(Debug, Clone)]
pub struct Budget {
    num_nodes: usize,
    deadline: Instant,
    timeout_ms: u64,
}

impl Budget {
    /// A budget holding `query` as parsed, its rewrites due by `deadline` (the request's
    /// `timeout_ms` from now).
    pub fn new(query: &Query, deadline: Instant, timeout_ms: u64) -> Result<Self, SqlError> {
        let mut budget = Self { num_nodes: 0, deadline, timeout_ms };
        budget.add_nodes(nodes(query), "the statement")?;
        Ok(budget)
    }

    /// Counts `num_nodes` more, refusing them when the request passes [`MAX_NODES`] or its
    /// deadline; `what` names what adds them.
    pub fn add_nodes(&mut self, num_nodes: usize, what: &str) -> Result<(), SqlError> {
        if Instant::now() >= self.deadline {
            return Err(SqlError::Query(sluice_query::QueryError::Timeout(self.timeout_ms)));
        }
        self.num_nodes = self.num_nodes.saturating_add(num_nodes);
        if self.num_nodes > MAX_NODES {
            return Err(SqlError::unsupported(format!(
                "a query of more than {MAX_NODES} expressions, subqueries and tables once {what} \
                 (it would hold {} or more)",
                self.num_nodes
            )));
        }
        Ok(())
    }

    /// Refuses `query`, measured whole, when it holds more than [`MAX_NODES`] nodes or the
    /// deadline has passed.
    pub fn measured(&self, query: &Query) -> Result<(), SqlError> {
        Self { num_nodes: 0, ..self.clone() }.add_nodes(nodes(query), "rewritten")
    }
}

/// The expressions, queries and table factors `query` holds, itself included.
pub fn nodes(query: &Query) -> usize {
    let mut counting = Counting(0);
    let _ = query.visit(&mut counting);
    counting.0
}

struct Counting(usize);

impl Visitor for Counting {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.0 += 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, _factor: &TableFactor) -> ControlFlow<()> {
        self.0 += 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, _expr: &Expr) -> ControlFlow<()> {
        self.0 += 1;
        ControlFlow::Continue(())
    }
}

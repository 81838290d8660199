//! The size of a query after every rewrite, and the deadline its rewrites run to.
//!
//! Parsing bounds the text (tokens, nesting); a rewrite (`WITH` names copied where they are
//! read) can still make the tree far larger than the text. Each copy is counted in one
//! [`Budget`] for the whole request before it is made: the subqueries it adds (nested `WITH`s
//! included), its syntax nodes and the bytes of its text. The tree is measured
//! whole again before it is planned ([`Budget::measured`]), so that no rewrite, present or
//! future, hands the planner more than [`MAX_NODES`] nodes or [`MAX_TEXT_BYTES`] bytes of
//! text. The budget also carries the request's deadline: a rewrite stops at it, on whatever
//! thread it runs. (A top-level `UNION ALL` is split into its branches around one copy of the
//! query's shell: at most twice the measured tree.)

use crate::SqlError;
use sqlparser::ast::{Expr, Query, TableFactor, Visit, Visitor};
use std::ops::ControlFlow;
use std::time::Instant;

/// Most syntax nodes (expressions, queries and table factors) a request's query may hold after
/// its rewrites: two and a half times a statement of the most tokens parsing accepts.
pub const MAX_NODES: usize = 250_000;
/// Most bytes a request's query may hold after its rewrites, as printed: sixteen times the
/// longest text a request may send.
pub const MAX_TEXT_BYTES: usize = 16 * crate::request::MAX_SQL_BYTES;
/// Subqueries the `WITH`s of a request may copy into it, counting those inside each copy.
pub const MAX_COPIES: usize = 256;

/// What a tree holds: syntax nodes and the bytes of its text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Size {
    /// Expressions, queries and table factors.
    pub num_nodes: usize,
    /// Bytes of its text as printed.
    pub num_bytes: usize,
}

/// What a request's rewrites have added so far, and the instant they stop at.
#[derive(Debug, Clone)]
pub struct Budget {
    size: Size,
    num_copies: usize,
    deadline: Instant,
    timeout_ms: u64,
}

impl Budget {
    /// A budget holding `query` as parsed, its rewrites due by `deadline` (the request's
    /// `timeout_ms` from now).
    pub fn new(query: &Query, deadline: Instant, timeout_ms: u64) -> Result<Self, SqlError> {
        let mut budget = Self { size: Size::default(), num_copies: 0, deadline, timeout_ms };
        budget.add(size(query), "the statement")?;
        Ok(budget)
    }

    /// Subqueries copied so far.
    pub fn num_copies(&self) -> usize {
        self.num_copies
    }

    /// Counts a copy of `size` holding `num_copies` subqueries, refusing it when the request
    /// passes [`MAX_COPIES`], [`MAX_NODES`], [`MAX_TEXT_BYTES`] or its deadline.
    pub fn copy(&mut self, num_copies: usize, size: Size) -> Result<(), SqlError> {
        self.num_copies = self.num_copies.saturating_add(num_copies);
        if self.num_copies > MAX_COPIES {
            return Err(SqlError::unsupported(format!(
                "a WITH whose names, read where they are read, copy more than {MAX_COPIES} subqueries"
            )));
        }
        self.add(size, "a WITH's names are copied where they are read")
    }

    /// Counts `size` more, refusing it when the request passes [`MAX_NODES`],
    /// [`MAX_TEXT_BYTES`] or its deadline; `what` names what adds it.
    fn add(&mut self, size: Size, what: &str) -> Result<(), SqlError> {
        if Instant::now() >= self.deadline {
            return Err(SqlError::Query(sluice_query::QueryError::Timeout(self.timeout_ms)));
        }
        self.size.num_nodes = self.size.num_nodes.saturating_add(size.num_nodes);
        self.size.num_bytes = self.size.num_bytes.saturating_add(size.num_bytes);
        if self.size.num_nodes > MAX_NODES {
            return Err(SqlError::unsupported(format!(
                "a query of more than {MAX_NODES} expressions, subqueries and tables once {what}"
            )));
        }
        if self.size.num_bytes > MAX_TEXT_BYTES {
            return Err(SqlError::unsupported(format!(
                "a query of more than {MAX_TEXT_BYTES} bytes of text once {what}"
            )));
        }
        Ok(())
    }

    /// Refuses `query`, measured whole, when it holds more than [`MAX_NODES`] nodes or
    /// [`MAX_TEXT_BYTES`] bytes, or the deadline has passed.
    pub fn measured(&self, query: &Query) -> Result<(), SqlError> {
        let mut whole = Self { size: Size::default(), ..self.clone() };
        whole.add(size(query), "rewritten")
    }
}

/// The expressions, queries and table factors `query` holds, itself included, and the bytes of
/// its text as printed.
pub fn size(query: &Query) -> Size {
    Size { num_nodes: nodes(query), num_bytes: query.to_string().len() }
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

//! Conditions on `__time` that bound it, turned into the native query's intervals.

use super::scalar::{Const, Scope};
use super::time::parse_timestamp;
use crate::SqlError;
use sluice_format::time::{Interval, ETERNITY_END, ETERNITY_START};
use sqlparser::ast::Expr;

/// The instants a query covers, narrowed by conditions on `__time`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeRange {
    /// First instant (inclusive).
    pub start: i64,
    /// Last instant (exclusive).
    pub end: i64,
}

impl Default for TimeRange {
    fn default() -> Self {
        TimeRange { start: ETERNITY_START, end: ETERNITY_END }
    }
}

impl TimeRange {
    /// The native query's intervals.
    pub fn intervals(&self) -> Vec<String> {
        if self.start >= self.end {
            // Nothing matches: an empty interval at the epoch.
            return vec![Interval::new(0, 0).to_string()];
        }
        vec![Interval::new(self.start, self.end).to_string()]
    }

    /// Narrows by a conjunct when it is `__time <op> constant` (either side), `__time BETWEEN
    /// a AND b` or `TIME_IN_INTERVAL(__time, 'a/b')`; false when it is something else.
    pub fn narrow(&mut self, e: &Expr, scope: &Scope<'_>) -> Result<bool, SqlError> {
        use sqlparser::ast::BinaryOperator as B;
        let is_time = |x: &Expr| -> bool {
            super::names::ident_path(x).is_some_and(|p| p.last().is_some_and(|n| n == "__time"))
                && scope.scalar(x).is_ok_and(|s| s.column.as_deref() == Some("__time"))
        };
        let constant = |x: &Expr| -> Result<Option<i64>, SqlError> {
            let s = match scope.scalar(x) {
                Ok(s) => s,
                Err(_) => return Ok(None),
            };
            Ok(match s.constant {
                Some(Const::Long(v)) if s.ty == crate::types::SqlType::Timestamp => Some(v),
                Some(Const::Str(text)) => Some(parse_timestamp(&text, scope.zone())?),
                _ => None,
            })
        };
        match e {
            Expr::Nested(inner) => self.narrow(inner, scope),
            Expr::BinaryOp { left, op, right } => {
                let (op, t) = if is_time(left) {
                    (op.clone(), constant(right)?)
                } else if is_time(right) {
                    let flipped = match op {
                        B::Lt => B::Gt,
                        B::LtEq => B::GtEq,
                        B::Gt => B::Lt,
                        B::GtEq => B::LtEq,
                        other => other.clone(),
                    };
                    (flipped, constant(left)?)
                } else {
                    return Ok(false);
                };
                let Some(t) = t else { return Ok(false) };
                match op {
                    B::Gt => self.start = self.start.max(t.saturating_add(1)),
                    B::GtEq => self.start = self.start.max(t),
                    B::Lt => self.end = self.end.min(t),
                    B::LtEq => self.end = self.end.min(t.saturating_add(1)),
                    B::Eq => {
                        self.start = self.start.max(t);
                        self.end = self.end.min(t.saturating_add(1));
                    }
                    _ => return Ok(false),
                }
                Ok(true)
            }
            Expr::Between { expr, negated: false, low, high } if is_time(expr) => {
                let (Some(lo), Some(hi)) = (constant(low)?, constant(high)?) else { return Ok(false) };
                self.start = self.start.max(lo);
                self.end = self.end.min(hi.saturating_add(1));
                Ok(true)
            }
            Expr::Function(f) if super::names::function_name(f) == "TIME_IN_INTERVAL" => {
                let args = super::names::function_args(f)?;
                if args.len() != 2 || !is_time(args[0]) {
                    return Err(SqlError::unsupported("TIME_IN_INTERVAL on something other than __time"));
                }
                let text = match scope.scalar(args[1])?.constant {
                    Some(Const::Str(s)) => s,
                    _ => return Err(SqlError::validation("TIME_IN_INTERVAL needs an interval literal 'start/end'")),
                };
                let iv = Interval::parse(&text)
                    .map_err(|e| SqlError::validation(format!("TIME_IN_INTERVAL {:?}: {e}", crate::short(&text))))?;
                self.start = self.start.max(iv.start);
                self.end = self.end.min(iv.end);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

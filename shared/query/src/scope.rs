//! What one query keeps on the threads that run it: its deadline, which the engine checks each
//! time it opens a segment (so a query past its `context.timeout` stops within one segment's
//! work instead of running on after its caller gave up), the lookups it sees (one version
//! each, bound to the query by its caller), and its filter leaves compiled once
//! (a regular expression or LIKE pattern is compiled once per query, not once per segment).
//! [`crate::execute`] and [`crate::execute_within`] open the scope on their thread; work the
//! query hands to other threads takes it along ([`current`], [`enter`]). Outside a scope
//! nothing is kept.

use crate::QueryError;
use sluice_format::expr::{Expr, ExprError};
use sluice_format::filter::{Filter, RowFilter};
use sluice_format::lookup::{KeyedTable, Lookups};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// One query's deadline, lookups and compiled filter leaves, shared by the threads running it.
pub struct Scope {
    deadline: Option<(Instant, u64)>,
    /// The lookups the query sees, one version each.
    lookups: Arc<Lookups>,
    /// Compiled leaves by what they say (their `Debug` form), so equal leaves share one.
    compiled: Mutex<HashMap<String, Arc<RowFilter>>>,
}

thread_local! {
    static SCOPE: RefCell<Option<Arc<Scope>>> = const { RefCell::new(None) };
}

/// Runs `work` as one query on this thread, under `deadline` (the instant, and the timeout it
/// came from in milliseconds) when given, seeing `lookups`.
pub fn run<T>(deadline: Option<(Instant, u64)>, lookups: Arc<Lookups>, work: impl FnOnce() -> T) -> T {
    enter(Some(Arc::new(Scope { deadline, lookups, compiled: Mutex::default() })), work)
}

/// The lookup named `name` as this thread's query sees it.
pub fn lookup(name: &str) -> Option<Arc<KeyedTable>> {
    SCOPE.with(|s| s.borrow().as_ref().and_then(|s| s.lookups.get(name).cloned()))
}

/// Parses an expression of the query running on this thread: its fields resolved through
/// `resolve`, its lookups through the query's.
pub fn parse_expression(text: &str, resolve: &mut dyn FnMut(&str) -> usize) -> Result<Expr, ExprError> {
    sluice_format::expr::parse_with(text, resolve, &lookup)
}

/// The scope of the query running on this thread, to hand to [`enter`] on another.
pub fn current() -> Option<Arc<Scope>> {
    SCOPE.with(|s| s.borrow().clone())
}

/// Runs `work` on this thread inside `scope` (a query's, from [`current`]).
pub fn enter<T>(scope: Option<Arc<Scope>>, work: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<Scope>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPE.with(|s| *s.borrow_mut() = self.0.take());
        }
    }
    let outer = SCOPE.with(|s| std::mem::replace(&mut *s.borrow_mut(), scope));
    let _restore = Restore(outer);
    work()
}

/// [`QueryError::Timeout`] once this thread's query is past its deadline.
pub fn check_deadline() -> Result<(), QueryError> {
    match SCOPE.with(|s| s.borrow().as_ref().and_then(|s| s.deadline)) {
        Some((deadline, timeout_ms)) if Instant::now() >= deadline => Err(QueryError::Timeout(timeout_ms)),
        _ => Ok(()),
    }
}

/// `leaf` compiled for one value slot: once per query inside a scope.
pub fn compiled(leaf: &Filter) -> Result<Arc<RowFilter>, QueryError> {
    let key = format!("{leaf:?}");
    let scope = current();
    let cache = |s: &Scope| s.compiled.lock().unwrap_or_else(PoisonError::into_inner).get(&key).cloned();
    if let Some(hit) = scope.as_deref().and_then(cache) {
        return Ok(hit);
    }
    let filter = Arc::new(leaf.compile(&mut |_| 0).map_err(|e| QueryError::invalid("filter", e.to_string()))?);
    if let Some(scope) = scope {
        // Bounded by the query's leaves (a query's size is bounded when it is read).
        scope.compiled.lock().unwrap_or_else(PoisonError::into_inner).insert(key, filter.clone());
    }
    Ok(filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_is_compiled_once_per_query() {
        let leaf = Filter::Regex { dimension: "page".into(), pattern: "^(a|b)+c$".into(), extraction_fn: None };
        let same = leaf.clone();
        run(None, Arc::default(), || {
            let (a, b) = (compiled(&leaf).expect("compiles"), compiled(&same).expect("compiles"));
            assert!(Arc::ptr_eq(&a, &b), "equal leaves share one compiled filter");
        });
        let (a, b) = (compiled(&leaf).expect("compiles"), compiled(&leaf).expect("compiles"));
        assert!(!Arc::ptr_eq(&a, &b), "outside a query nothing is kept");
        run(None, Arc::default(), || {
            assert!(!Arc::ptr_eq(&a, &compiled(&leaf).expect("compiles")), "a new query starts empty")
        });
    }

    #[test]
    fn the_deadline_belongs_to_the_query() {
        let past = Some((Instant::now(), 5));
        run(past, Arc::default(), || assert!(matches!(check_deadline(), Err(QueryError::Timeout(5)))));
        assert!(check_deadline().is_ok(), "no deadline outside the query");
    }
}

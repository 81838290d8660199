//! The virtual columns of one native query: each distinct expression a filter, grouping key,
//! aggregator or scan column needs is computed once, under a name no input column has.

use super::scalar::Scalar;
use crate::types::{Column, SqlType};
use serde_json::{json, Value};

/// Virtual columns being collected for a native query.
#[derive(Debug, Default)]
pub struct Virtuals {
    taken: Vec<String>,
    list: Vec<(String, String, SqlType)>,
}

impl Virtuals {
    /// Virtual columns beside `columns` (whose names they avoid).
    pub fn new(columns: &[Column]) -> Self {
        Self { taken: columns.iter().map(|c| c.name.clone()).collect(), list: Vec::new() }
    }

    /// The column that holds `s`: its own column, or a virtual column computing it.
    pub fn column_for(&mut self, s: &Scalar) -> String {
        if let Some(c) = &s.column {
            return c.clone();
        }
        if let Some((name, _, _)) = self.list.iter().find(|(_, e, _)| *e == s.expr) {
            return name.clone();
        }
        let name = fresh(&self.taken, "v", self.list.len());
        self.taken.push(name.clone());
        self.list.push((name.clone(), s.expr.clone(), s.ty.clone()));
        name
    }

    /// The native `virtualColumns`.
    pub fn json(&self) -> Vec<Value> {
        self.list
            .iter()
            .map(|(name, expr, ty)| {
                json!({"type": "expression", "name": name, "expression": expr, "outputType": ty.value_type()})
            })
            .collect()
    }

    /// Whether any were made.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// `{prefix}{n}` for the first n from `from` that no name in `taken` has.
pub fn fresh(taken: &[String], prefix: &str, from: usize) -> String {
    (from..)
        .map(|n| format!("{prefix}{n}"))
        .find(|name| !taken.iter().any(|t| t == name))
        .unwrap_or_else(|| format!("{prefix}{from}"))
}

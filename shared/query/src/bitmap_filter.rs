//! Filters evaluated on one segment as Roaring bitmaps, with SQL-compatible three-valued
//! logic: each filter yields the rows where it is true and the rows where it is unknown (a
//! comparison with null), so `not` keeps unknown rows out as Druid does.
//!
//! A filter on a string dimension tests the dictionary, not the rows: the matching values'
//! bitmaps are united (a selector or `in` finds its values by binary search). Numeric columns,
//! `__time`, virtual columns and `expression` filters are tested row by row.

use super::columns::{Column, SegmentColumns};
use super::QueryError;
use roaring::RoaringBitmap;
use sluice_format::expr;
use sluice_format::filter::{Filter, RowFilter};
use sluice_format::value::Value;

/// The rows where a filter is true and where it is unknown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Matches {
    /// Rows where the filter holds.
    pub yes: RoaringBitmap,
    /// Rows where it is unknown (neither true nor false).
    pub unknown: RoaringBitmap,
}

/// Evaluates `filter` on every row of the segment.
pub fn evaluate(filter: &Filter, cols: &mut SegmentColumns<'_>) -> Result<Matches, QueryError> {
    let n = cols.num_rows() as u32;
    let all = || {
        let mut b = RoaringBitmap::new();
        b.insert_range(0..n);
        b
    };
    Ok(match filter {
        Filter::True => Matches { yes: all(), unknown: RoaringBitmap::new() },
        Filter::False => Matches::default(),
        Filter::And { fields } => {
            let mut yes = all();
            let mut maybe = all();
            for f in fields {
                let m = evaluate(f, cols)?;
                maybe &= &(&m.yes | &m.unknown);
                yes &= m.yes;
            }
            Matches { unknown: maybe - &yes, yes }
        }
        Filter::Or { fields } => {
            let mut yes = RoaringBitmap::new();
            let mut unknown = RoaringBitmap::new();
            for f in fields {
                let m = evaluate(f, cols)?;
                yes |= m.yes;
                unknown |= m.unknown;
            }
            Matches { unknown: unknown - &yes, yes }
        }
        Filter::Not { field } => {
            let m = evaluate(field, cols)?;
            Matches { yes: all() - &m.yes - &m.unknown, unknown: m.unknown }
        }
        Filter::Expression { expression } => expression_rows(expression, cols)?,
        Filter::ColumnComparison { .. } => comparison_rows(filter, cols)?,
        leaf => leaf_rows(leaf, cols)?,
    })
}

fn leaf_rows(filter: &Filter, cols: &mut SegmentColumns<'_>) -> Result<Matches, QueryError> {
    let name = filter.column().unwrap_or_default();
    let compiled = crate::scope::compiled(filter)?;
    let column = cols.column(name)?;
    let mut out = Matches::default();
    match column.as_ref() {
        Column::String(dim) => {
            let (yes_ids, unknown_ids) = match compiled.as_ref() {
                RowFilter::InSet(_, set) => {
                    let mut ids: Vec<u32> = set.iter().flatten().filter_map(|v| dim.dictionary.find(v)).collect();
                    let null_in_set = set.iter().any(Option::is_none);
                    if null_in_set {
                        ids.push(0);
                    }
                    ids.sort_unstable();
                    ids.dedup();
                    (ids, if null_in_set { Vec::new() } else { vec![0] })
                }
                _ => {
                    let (mut yes, mut unknown) = (Vec::new(), Vec::new());
                    for id in 0..=dim.dictionary.len() as u32 {
                        let v = dim.dictionary.get(id).map(|s| Value::String(s.to_string())).unwrap_or(Value::Null);
                        match compiled.truth(std::slice::from_ref(&v), 0) {
                            Some(true) => yes.push(id),
                            None => unknown.push(id),
                            Some(false) => {}
                        }
                    }
                    (yes, unknown)
                }
            };
            let named = |e| QueryError::Segment(e);
            out.yes = dim.rows_with(&yes_ids).map_err(named)?;
            out.unknown = dim.rows_with(&unknown_ids).map_err(named)? - &out.yes;
        }
        Column::Absent => {
            match compiled.truth(&[Value::Null], 0) {
                Some(true) => out.yes.insert_range(0..cols.num_rows() as u32),
                None => out.unknown.insert_range(0..cols.num_rows() as u32),
                Some(false) => 0,
            };
        }
        other => {
            let times = cols.times()?;
            let mut slot = [Value::Null];
            for r in 0..cols.num_rows() {
                slot[0] = other.value(r, &times);
                match compiled.truth(&slot, times[r]) {
                    Some(true) => out.yes.insert(r as u32),
                    None => out.unknown.insert(r as u32),
                    Some(false) => true,
                };
            }
        }
    }
    Ok(out)
}

/// A filter over several columns (`columnComparison`), tested row by row.
fn comparison_rows(filter: &Filter, cols: &mut SegmentColumns<'_>) -> Result<Matches, QueryError> {
    let mut names: Vec<String> = Vec::new();
    let compiled = filter
        .compile(&mut |field| slot_of(&mut names, field))
        .map_err(|e| QueryError::invalid("filter", e.to_string()))?;
    rows_where(cols, &names, |row, time| compiled.truth(row, time))
}

fn expression_rows(expression: &str, cols: &mut SegmentColumns<'_>) -> Result<Matches, QueryError> {
    let mut names: Vec<String> = Vec::new();
    let parsed = crate::scope::parse_expression(expression, &mut |field| slot_of(&mut names, field))
        .map_err(|e| QueryError::invalid("filter.expression", e.to_string()))?;
    rows_where(cols, &names, |row, time| {
        let v = expr::eval(&parsed, row, time);
        (!v.is_null()).then(|| v.is_truthy())
    })
}

/// The slot of `field` among `names`, added when new.
fn slot_of(names: &mut Vec<String>, field: &str) -> usize {
    names.iter().position(|n| n == field).unwrap_or_else(|| {
        names.push(field.to_string());
        names.len() - 1
    })
}

/// The rows where `test` over the columns `names` (in slot order) holds or is unknown, row by
/// row.
fn rows_where(
    cols: &mut SegmentColumns<'_>,
    names: &[String],
    test: impl Fn(&[Value], i64) -> Option<bool>,
) -> Result<Matches, QueryError> {
    let inputs: Vec<_> = names.iter().map(|n| cols.column(n)).collect::<Result<_, _>>()?;
    let times = cols.times()?;
    let mut row = vec![Value::Null; inputs.len()];
    let mut out = Matches::default();
    for r in 0..cols.num_rows() {
        for (slot, c) in row.iter_mut().zip(&inputs) {
            *slot = c.value(r, &times);
        }
        match test(&row, times[r]) {
            Some(true) => out.yes.insert(r as u32),
            None => out.unknown.insert(r as u32),
            Some(false) => false,
        };
    }
    Ok(out)
}

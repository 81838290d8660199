//! `auto` dimensions when a hydrant is persisted. The index keeps each value's JSON text; the
//! persisted column takes the narrowest type holding every value of the hydrant: long when all
//! are integers, double when all are numbers, string when all are literals (arrays of literals
//! making multi-value rows), json otherwise.

use super::dims::{DimColumn, StrColumn};
use crate::json_path::literal_text;
use crate::row::DimValue;
use crate::spec::{DimensionType, MultiValueHandling};
use serde_json::Value as Json;

/// The column an `auto` dimension's codes (0 null, `id + 1`) over `values` are stored as, with
/// its type.
pub(super) fn typed(values: &[Box<str>], codes: &[u32], order: MultiValueHandling) -> (DimensionType, DimColumn) {
    let docs: Vec<Json> = values.iter().map(|v| serde_json::from_str(v).unwrap_or(Json::Null)).collect();
    let at = |code: u32| code.checked_sub(1).and_then(|id| docs.get(id as usize));
    let is_literal = |v: &Json| !matches!(v, Json::Array(_) | Json::Object(_));
    // A column of nulls only is a string column, as Druid types it.
    if !docs.is_empty() && docs.iter().all(|d| d.as_i64().is_some()) {
        let column = codes.iter().map(|&c| at(c).and_then(Json::as_i64)).collect();
        return (DimensionType::Long, DimColumn::Long(column));
    }
    if !docs.is_empty() && docs.iter().all(Json::is_number) {
        let column = codes.iter().map(|&c| at(c).and_then(Json::as_f64)).collect();
        return (DimensionType::Double, DimColumn::Double(column));
    }
    let literals = |d: &Json| match d {
        Json::Array(items) => items.iter().all(is_literal),
        other => is_literal(other),
    };
    if !docs.iter().all(literals) {
        // Documents: their text as it is.
        let mut column = StrColumn::default();
        let mut spare = Vec::new();
        for &c in codes {
            let v = c.checked_sub(1).map_or(DimValue::Null, |id| DimValue::Str(values[id as usize].to_string()));
            let code = column.encode(v, &mut spare);
            column.codes.push(code);
        }
        return (DimensionType::Json, DimColumn::Str(column));
    }
    // Literals (each document's value once, then per row).
    let per_doc: Vec<DimValue> = docs
        .iter()
        .map(|d| {
            let mut items: Vec<String> = match d {
                Json::Array(items) => items.iter().filter_map(literal_text).collect(),
                other => literal_text(other).into_iter().collect(),
            };
            match order {
                MultiValueHandling::Array => {}
                MultiValueHandling::SortedArray => items.sort_unstable(),
                MultiValueHandling::SortedSet => {
                    items.sort_unstable();
                    items.dedup();
                }
            }
            match items.len() {
                0 => DimValue::Null,
                1 => DimValue::Str(items.pop().unwrap_or_default()),
                _ => DimValue::Multi(items),
            }
        })
        .collect();
    let mut column = StrColumn::default();
    let mut spare = Vec::new();
    for &c in codes {
        let v = c.checked_sub(1).and_then(|id| per_doc.get(id as usize)).cloned().unwrap_or_default();
        let code = column.encode(v, &mut spare);
        column.codes.push(code);
    }
    (DimensionType::String, DimColumn::Str(column))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_of(values: &[&str]) -> DimensionType {
        let boxed: Vec<Box<str>> = values.iter().map(|v| (*v).into()).collect();
        let codes: Vec<u32> = (0..=values.len() as u32).collect();
        typed(&boxed, &codes, MultiValueHandling::SortedArray).0
    }

    #[test]
    fn an_auto_column_takes_the_narrowest_type_of_its_values() {
        assert_eq!(kind_of(&["1", "-7"]), DimensionType::Long);
        assert_eq!(kind_of(&["1", "2.5"]), DimensionType::Double);
        assert_eq!(kind_of(&["1", "\"x\""]), DimensionType::String);
        assert_eq!(kind_of(&["[\"a\",\"b\"]", "true"]), DimensionType::String);
        assert_eq!(kind_of(&["{\"a\":1}", "3"]), DimensionType::Json);
        assert_eq!(kind_of(&["[[1]]"]), DimensionType::Json);
        assert_eq!(kind_of(&[]), DimensionType::String, "a column of nulls only");
        let boxed: Vec<Box<str>> = ["[\"b\",\"a\"]", "\"c\""].iter().map(|v| (*v).into()).collect();
        let (_, column) = typed(&boxed, &[0, 1, 2], MultiValueHandling::SortedArray);
        let DimColumn::Str(s) = column else { panic!("strings") };
        let combo: Vec<&str> = s.combos[0].iter().map(|&id| &*s.dict.values()[id as usize]).collect();
        assert_eq!(combo, ["a", "b"], "an array's literals in the dimension's order");
        assert_eq!(s.codes[0], 0);
    }
}

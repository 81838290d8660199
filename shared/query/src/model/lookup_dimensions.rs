//! Dimension specs that map values through a lookup, as Druid writes them: the `lookup`
//! dimension spec (a registered lookup by `name`, or an inline `map`) and the `extraction`
//! dimension spec with a `registeredLookup` or `lookup` extraction function. Each is read as
//! a column of the rows keyed by the dimension ([`JoinedColumn`]), so that grouping reads it
//! as any other column.

use super::datasource::{JoinKey, JoinRight, JoinedColumn, Missing};
use super::extraction_error::ExtractionError;
use super::{DimensionSpec, VirtualColumn};
use serde_json::{Map, Value};
use sluice_format::expr::Expr;
use sluice_format::lookup::KeyedTable;
use std::sync::Arc;

/// How a dimension's values are mapped.
#[derive(Debug, Clone, PartialEq)]
pub struct DimensionLookup {
    /// The lookup.
    pub right: JoinRight,
    /// What a value the lookup does not hold becomes.
    pub missing: Missing,
}

/// Reads the lookup of a `lookup` dimension spec (`o` is the spec's object).
pub fn lookup_spec(o: &Map<String, Value>) -> Result<DimensionLookup, ExtractionError> {
    let right = match (o.get("name"), o.get("lookup")) {
        (Some(Value::String(name)), None) => JoinRight::Lookup(name.clone()),
        (None, Some(map)) => JoinRight::Inline(inline_map(map)?),
        _ => {
            return Err(ExtractionError::Needs {
                form: "a lookup dimension spec",
                field: "either \"name\" (a registered lookup) or \"lookup\" (a map)",
            })
        }
    };
    Ok(DimensionLookup { right, missing: missing(o)? })
}

/// Reads an `extractionFn` that is a lookup; any other is refused by name.
pub fn extraction(f: &Value) -> Result<DimensionLookup, ExtractionError> {
    let Value::Object(o) = f else {
        return Err(ExtractionError::NotAnObject);
    };
    let right = match o.get("type").and_then(Value::as_str) {
        Some("registeredLookup") => match o.get("lookup") {
            Some(Value::String(name)) => JoinRight::Lookup(name.clone()),
            _ => {
                return Err(ExtractionError::Needs {
                    form: "a registeredLookup extractionFn",
                    field: "\"lookup\": a lookup's name",
                })
            }
        },
        Some("lookup") => JoinRight::Inline(inline_map(
            o.get("lookup").ok_or(ExtractionError::Needs { form: "a lookup extractionFn", field: "\"lookup\"" })?,
        )?),
        Some(other) => return Err(ExtractionError::unknown_type(other, "registeredLookup or lookup")),
        None => return Err(ExtractionError::Needs { form: "extractionFn", field: "a \"type\"" }),
    };
    Ok(DimensionLookup { right, missing: missing(o)? })
}

fn inline_map(v: &Value) -> Result<Arc<KeyedTable>, ExtractionError> {
    if v.get("type").and_then(Value::as_str) != Some("map") {
        return Err(ExtractionError::Needs { form: "an inline lookup", field: "{\"type\": \"map\", \"map\": {...}}" });
    }
    let Some(Value::Object(map)) = v.get("map") else {
        return Err(ExtractionError::Needs { form: "an inline lookup", field: "\"map\": an object of strings" });
    };
    use sluice_format::value::Value as Cell;
    let mut keyed = Vec::with_capacity(map.len());
    for (k, v) in map {
        let v =
            v.as_str().ok_or_else(|| ExtractionError::NotAString(sluice_format::text::excerpt(k, 80).into_owned()))?;
        keyed.push(vec![Cell::String(k.clone()), Cell::String(v.to_string())]);
    }
    // Named by its content, so that equal maps share cached partials and others do not.
    KeyedTable::from_rows("inline", vec!["k".into(), "v".into()], "k", keyed).map_err(ExtractionError::InlineMap)
}

fn missing(o: &Map<String, Value>) -> Result<Missing, ExtractionError> {
    let retain = o.get("retainMissingValue").and_then(Value::as_bool).unwrap_or(false);
    let replace = o.get("replaceMissingValueWith").and_then(Value::as_str).filter(|s| !s.is_empty());
    match (retain, replace) {
        (true, Some(_)) => Err(ExtractionError::MissingValueConflict),
        (true, None) => Ok(Missing::Retain),
        (false, Some(r)) => Ok(Missing::Replace(r.to_string())),
        (false, None) => Ok(Missing::Null),
    }
}

/// The column of `dimension`'s values mapped through `lookup`, named `name`.
pub fn looked_up(name: String, dimension: &str, lookup: DimensionLookup) -> VirtualColumn {
    VirtualColumn::Joined(JoinedColumn {
        name,
        key: Arc::new(JoinKey { expr: Expr::Field(0), inputs: vec![Some(dimension.to_string())] }),
        right: lookup.right,
        column: "v".into(),
        missing: lookup.missing,
    })
}

/// Moves the lookups of `dims` into `virtuals`: each such dimension then reads a column of
/// its own, the lookup's value for the row's dimension value.
pub fn fold(dims: &mut [DimensionSpec], virtuals: &mut Vec<VirtualColumn>) {
    for (i, d) in dims.iter_mut().enumerate() {
        let Some(lookup) = d.lookup.take() else {
            continue;
        };
        let name = format!("__lookup{i}:{}", d.output_name);
        virtuals.push(looked_up(name.clone(), &d.dimension, lookup));
        d.dimension = name;
    }
}

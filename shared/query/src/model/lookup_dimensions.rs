//! Dimension specs that map values through a lookup, as Druid writes them: the `lookup`
//! dimension spec (a registered lookup by `name`, or an inline `map`) and the `extraction`
//! dimension spec with a `registeredLookup` or `lookup` extraction function. Each is read as
//! a column of the rows keyed by the dimension ([`JoinedColumn`]), so that grouping reads it
//! as any other column.

use super::datasource::{JoinKey, JoinRight, JoinedColumn, Missing};
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
pub fn lookup_spec(o: &Map<String, Value>) -> Result<DimensionLookup, String> {
    let right = match (o.get("name"), o.get("lookup")) {
        (Some(Value::String(name)), None) => JoinRight::Lookup(name.clone()),
        (None, Some(map)) => JoinRight::Inline(inline_map(map)?),
        _ => {
            return Err(
                "a lookup dimension spec needs either \"name\" (a registered lookup) or \"lookup\" (a map)".into()
            )
        }
    };
    Ok(DimensionLookup { right, missing: missing(o)? })
}

/// Reads an `extractionFn` that is a lookup; any other is refused by name.
pub fn extraction(f: &Value) -> Result<DimensionLookup, String> {
    let Value::Object(o) = f else {
        return Err("extractionFn: expected an object".into());
    };
    let right = match o.get("type").and_then(Value::as_str) {
        Some("registeredLookup") => match o.get("lookup") {
            Some(Value::String(name)) => JoinRight::Lookup(name.clone()),
            _ => return Err("a registeredLookup extractionFn needs \"lookup\": a lookup's name".into()),
        },
        Some("lookup") => {
            JoinRight::Inline(inline_map(o.get("lookup").ok_or("a lookup extractionFn needs \"lookup\"")?)?)
        }
        Some(other) => {
            return Err(format!(
                "extractionFn type {:?} is not supported: only registeredLookup and lookup are",
                sluice_format::text::excerpt(other, 40)
            ))
        }
        None => return Err("extractionFn needs a \"type\"".into()),
    };
    Ok(DimensionLookup { right, missing: missing(o)? })
}

fn inline_map(v: &Value) -> Result<Arc<KeyedTable>, String> {
    if v.get("type").and_then(Value::as_str) != Some("map") {
        return Err("an inline lookup must be {\"type\": \"map\", \"map\": {...}}".into());
    }
    let Some(Value::Object(map)) = v.get("map") else {
        return Err("an inline lookup needs \"map\": an object of strings".into());
    };
    use sluice_format::value::Value as Cell;
    let mut keyed = Vec::with_capacity(map.len());
    for (k, v) in map {
        let v = v.as_str().ok_or_else(|| format!("the inline lookup's value of {k:?} is not a string"))?;
        keyed.push(vec![Cell::String(k.clone()), Cell::String(v.to_string())]);
    }
    // Named by its content, so that equal maps share cached partials and others do not.
    KeyedTable::from_rows("inline", vec!["k".into(), "v".into()], "k", keyed).map_err(|e| e.to_string())
}

fn missing(o: &Map<String, Value>) -> Result<Missing, String> {
    let retain = o.get("retainMissingValue").and_then(Value::as_bool).unwrap_or(false);
    let replace = o.get("replaceMissingValueWith").and_then(Value::as_str).filter(|s| !s.is_empty());
    match (retain, replace) {
        (true, Some(_)) => Err("retainMissingValue and replaceMissingValueWith cannot both be set".into()),
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

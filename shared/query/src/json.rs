//! Values and aggregator states as Druid's JSON results print them.

use serde_json::json;
use sluice_format::aggregate::{MetricCell, Scalar};
use sluice_format::value::Value;

/// A metric state as a plain value (sketches as their estimate).
pub fn cell_value(cell: &MetricCell) -> Value {
    match cell {
        MetricCell::Long(v) => v.map(Value::Long).unwrap_or(Value::Null),
        MetricCell::Double(v) => v.map(Value::Double).unwrap_or(Value::Null),
        MetricCell::Timed(Some((_, Scalar::Long(v)))) => Value::Long(*v),
        MetricCell::Timed(Some((_, Scalar::Double(v)))) => Value::Double(*v),
        MetricCell::Timed(Some((_, Scalar::Str(s)))) => Value::String(s.clone()),
        MetricCell::Timed(None) => Value::Null,
        MetricCell::Sketch(s) => Value::Double(s.estimate()),
    }
}

/// A double as JSON (non-finite values as null).
pub fn json_double(v: f64) -> serde_json::Value {
    serde_json::Number::from_f64(v).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null)
}

/// A value as JSON.
pub fn value_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Long(x) => json!(x),
        Value::Double(x) => json_double(*x),
        Value::String(s) => json!(s),
        Value::Array(items) => serde_json::Value::Array(items.iter().map(value_json).collect()),
    }
}

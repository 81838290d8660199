//! Field values of parsed records, with Druid's SQL-compatible null handling.

use std::borrow::Cow;
use std::fmt;

/// Largest single string value accepted in a dimension or metric, in bytes (and the longest
/// string an expression builds).
pub const MAX_VALUE_BYTES: usize = 1 << 20;

/// A field value of an input record or an expression result.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// An absent or null value (SQL-compatible: never coerced to "" or 0).
    #[default]
    Null,
    /// A 64-bit integer.
    Long(i64),
    /// A 64-bit float.
    Double(f64),
    /// A string.
    String(String),
    /// A list of values: a multi-value string field.
    Array(Vec<Value>),
    /// A JSON document of a nested (`json`) column or a JSON function; never JSON null (see
    /// [`Value::json`]).
    Json(std::sync::Arc<serde_json::Value>),
}

impl Value {
    /// A JSON document as a value: JSON null is null.
    pub fn json(v: serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            v => Value::Json(std::sync::Arc::new(v)),
        }
    }

    /// The value as a JSON document: strings become JSON strings, lists arrays.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Long(v) => (*v).into(),
            Value::Double(v) => serde_json::Number::from_f64(*v).map_or(serde_json::Value::Null, Into::into),
            Value::String(s) => s.as_str().into(),
            Value::Array(items) => items.iter().map(Value::to_json).collect(),
            Value::Json(v) => (**v).clone(),
        }
    }

    /// Returns true for null and for an empty list.
    pub fn is_null(&self) -> bool {
        match self {
            Value::Null => true,
            Value::Array(items) => items.is_empty(),
            _ => false,
        }
    }

    /// The value as a string, the way Druid turns numbers and booleans into dimension values.
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        match self {
            Value::Null => None,
            Value::Long(v) => Some(Cow::Owned(v.to_string())),
            Value::Double(v) => Some(Cow::Owned(format_double(*v))),
            Value::String(s) => Some(Cow::Borrowed(s)),
            Value::Array(items) if items.len() == 1 => items[0].as_str(),
            Value::Array(_) => None,
            Value::Json(v) => match &**v {
                serde_json::Value::String(s) => Some(Cow::Borrowed(s)),
                other => Some(Cow::Owned(other.to_string())),
            },
        }
    }

    /// The value as a long: doubles are truncated, numeric strings parsed, others null.
    pub fn as_long(&self) -> Option<i64> {
        match self {
            Value::Long(v) => Some(*v),
            Value::Double(v) if v.is_finite() => Some(*v as i64),
            Value::String(s) => parse_long(s),
            Value::Array(items) if items.len() == 1 => items[0].as_long(),
            Value::Json(v) => match &**v {
                serde_json::Value::Number(n) => {
                    n.as_i64().or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
                }
                serde_json::Value::String(s) => parse_long(s),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value as a double: numeric strings parsed, others null.
    pub fn as_double(&self) -> Option<f64> {
        match self {
            Value::Long(v) => Some(*v as f64),
            Value::Double(v) => Some(*v),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            Value::Array(items) if items.len() == 1 => items[0].as_double(),
            Value::Json(v) => match &**v {
                serde_json::Value::Number(n) => n.as_f64(),
                serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            },
            _ => None,
        }
    }

    /// Druid's truthiness: non-zero numbers, and strings that read "true".
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Long(v) => *v != 0,
            Value::Double(v) => *v != 0.0,
            Value::String(s) => s.eq_ignore_ascii_case("true"),
            Value::Array(items) => items.iter().any(Value::is_truthy),
            Value::Json(v) => match &**v {
                serde_json::Value::Bool(b) => *b,
                serde_json::Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
                serde_json::Value::String(s) => s.eq_ignore_ascii_case("true"),
                _ => false,
            },
            Value::Null => false,
        }
    }

    /// Converts a JSON value; nested objects become their JSON text.
    pub fn from_json(v: serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::String(if b { "true" } else { "false" }.to_string()),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Long(i),
                None => n.as_f64().map(Value::Double).unwrap_or(Value::Null),
            },
            serde_json::Value::String(s) => Value::String(s),
            serde_json::Value::Array(items) => Value::Array(items.into_iter().map(Value::from_json).collect()),
            obj @ serde_json::Value::Object(_) => Value::String(obj.to_string()),
        }
    }
}

/// Parses a long the way Druid does for numeric strings: integers, or decimals truncated.
pub fn parse_long(s: &str) -> Option<i64> {
    let t = s.trim();
    t.parse::<i64>().ok().or_else(|| t.parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v as i64))
}

/// Formats a double like Java's `Double.toString` for the common cases (`1.0`, `0.5`).
pub fn format_double(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => write!(f, "null"),
            Value::Long(v) => write!(f, "{v}"),
            Value::Double(v) => write!(f, "{}", format_double(*v)),
            Value::String(s) => write!(f, "{s}"),
            Value::Json(v) => write!(f, "{v}"),
            Value::Array(items) => {
                write!(f, "[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{item}")?;
                }
                write!(f, "]")
            }
        }
    }
}

/// Orders nullable doubles with nulls first, then by IEEE total order.
pub fn cmp_opt_f64(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}

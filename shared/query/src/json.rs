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
        // Druid finalizes a theta sketch to its estimate and a quantiles sketch to its count.
        MetricCell::Theta(t) => Value::Double(t.estimate()),
        MetricCell::Quantiles(q) => Value::Long(q.n() as i64),
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
        Value::Json(doc) => (**doc).clone(),
    }
}

/// The length of `v` as compact JSON, counted without writing it: strings with their escapes,
/// numbers as they print. Answers are bounded by it as they are built.
pub fn encoded_len(v: &serde_json::Value) -> usize {
    use serde_json::Value as J;
    match v {
        J::Null => 4,
        J::Bool(b) => 4 + usize::from(!*b),
        J::Number(n) => {
            let mut count = Count(0);
            // Writing to a counter cannot fail.
            let _ = std::fmt::Write::write_fmt(&mut count, format_args!("{n}"));
            count.0
        }
        J::String(s) => string_len(s),
        J::Array(items) => 2 + items.iter().map(|i| encoded_len(i) + 1).sum::<usize>().saturating_sub(1),
        J::Object(map) => {
            2 + map.iter().map(|(k, v)| string_len(k) + 1 + encoded_len(v) + 1).sum::<usize>().saturating_sub(1)
        }
    }
}

/// A string's length as JSON: its quotes and escapes (`\"`, `\\`, `\n`; `\u00XX` for other
/// control characters).
pub fn string_len(s: &str) -> usize {
    2 + s.len()
        + s.bytes()
            .map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
                0..=0x1f => 5,
                _ => 0,
            })
            .sum::<usize>()
}

struct Count(usize);

impl std::fmt::Write for Count {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_len_is_the_length_serde_json_writes() {
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(-1234567890123_i64),
            json!(u64::MAX),
            json!(0.1),
            json!(1e300),
            json!(-2.5e-7),
            json!("plain"),
            json!("quote \" backslash \\ newline \n tab \t bell \u{7} nul \u{0} é 漢"),
            json!([]),
            json!({}),
            json!([1, "a", null, [2.5, {"k": "v"}]]),
            json!({"__time": 1442018818771_i64, "page": "Cherno Alpha", "added": 5.0, "tags": ["a", "b"]}),
        ];
        for v in values {
            assert_eq!(encoded_len(&v), v.to_string().len(), "{v}");
        }
    }
}

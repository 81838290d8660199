//! A field's value converted to its dimension's or metric's type: multi-value handling, the
//! size limit of strings, and a conversion error noted for the row instead of failing it.

use super::{DimPlan, ParseError, MAX_VALUE_BYTES};
use crate::row::DimValue;
use crate::spec::{DimensionType, MetricKind, MultiValueHandling};
use crate::value::Value;

fn checked(name: &str, s: String) -> Result<String, ParseError> {
    if s.len() > MAX_VALUE_BYTES {
        return Err(ParseError::new(format!(
            "field {name:?} holds {} bytes, more than the {} byte limit",
            s.len(),
            MAX_VALUE_BYTES
        )));
    }
    Ok(s)
}

pub(super) fn dim_value(d: &DimPlan, v: Value, errors: &mut Vec<String>) -> Result<DimValue, ParseError> {
    if v.is_null() {
        return Ok(DimValue::Null);
    }
    let mut convert_error = || {
        errors.push(format!("could not convert value {v} of dimension {:?} to {:?}", d.name, d.kind));
        Ok(DimValue::Null)
    };
    match d.kind {
        DimensionType::String => match v {
            Value::String(s) => Ok(DimValue::Str(checked(&d.name, s)?)),
            Value::Array(items) => {
                let mut values = Vec::with_capacity(items.len());
                for item in items.into_iter().filter(|i| !i.is_null()) {
                    match item {
                        Value::String(s) => values.push(checked(&d.name, s)?),
                        other => match other.as_str() {
                            Some(s) => values.push(checked(&d.name, s.into_owned())?),
                            None => values.push(checked(&d.name, other.to_string())?),
                        },
                    }
                }
                match d.multi_value_handling {
                    MultiValueHandling::Array => {}
                    MultiValueHandling::SortedArray => values.sort_unstable(),
                    MultiValueHandling::SortedSet => {
                        values.sort_unstable();
                        values.dedup();
                    }
                }
                Ok(match values.len() {
                    0 => DimValue::Null,
                    1 => DimValue::Str(values.pop().unwrap_or_default()),
                    _ => DimValue::Multi(values),
                })
            }
            other => Ok(DimValue::Str(checked(&d.name, other.as_str().map(|s| s.into_owned()).unwrap_or_default())?)),
        },
        DimensionType::Long => match v.as_long() {
            Some(x) if !matches!(v, Value::Array(_)) => Ok(DimValue::Long(x)),
            _ => convert_error(),
        },
        DimensionType::Double => match v.as_double() {
            Some(x) if !matches!(v, Value::Array(_)) => Ok(DimValue::Double(x)),
            _ => convert_error(),
        },
        DimensionType::Float => match v.as_double() {
            Some(x) if !matches!(v, Value::Array(_)) => Ok(DimValue::Float(x as f32)),
            _ => convert_error(),
        },
        // Stored as its JSON text: documents equal as text roll up together.
        DimensionType::Json | DimensionType::Auto => Ok(DimValue::Str(checked(&d.name, v.to_json().to_string())?)),
    }
}

pub(super) fn metric_value(
    name: &str,
    kind: MetricKind,
    v: Value,
    errors: &mut Vec<String>,
) -> Result<Value, ParseError> {
    use MetricKind::*;
    if v.is_null() {
        return Ok(Value::Null);
    }
    let out = match kind {
        Long | LongFirstLast => v.as_long().map(Value::Long),
        Double | Float | DoubleFirstLast | FloatFirstLast => v.as_double().map(Value::Double),
        StringFirstLast => v.as_str().map(|s| Value::String(s.into_owned())),
        HllSketch | ThetaSketch | QuantilesSketch => return Ok(v),
    };
    match out {
        Some(Value::String(s)) => Ok(Value::String(checked("metric input", s)?)),
        Some(x) => Ok(x),
        None => {
            errors.push(format!("could not convert value {v} of metric {name:?} to {kind:?}"));
            Ok(Value::Null)
        }
    }
}

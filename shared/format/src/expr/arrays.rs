//! Druid's array functions over multi-value string values (`array_length`, `array_offset`,
//! `array_contains`, `array_to_string`, ...): what SQL's `MV_*` functions translate to. A
//! single value reads as a list of one, null as a null list; elements compare as strings.

use super::ArrayFunction;
use crate::value::Value;

/// The elements of `v`, or none for null.
fn list(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::Null => None,
        Value::Array(items) => Some(items.clone()),
        other => Some(vec![other.clone()]),
    }
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(|s| s.into_owned())
}

fn index_of(items: &[Value], x: &Value) -> Option<usize> {
    let x = text(x)?;
    items.iter().position(|i| text(i).as_deref() == Some(x.as_str()))
}

fn bool(b: bool) -> Value {
    Value::Long(i64::from(b))
}

/// Most elements an array function builds.
pub const MAX_ELEMENTS: usize = 100_000;

fn array(items: Vec<Value>) -> Value {
    if items.len() > MAX_ELEMENTS {
        Value::Null
    } else {
        Value::Array(items)
    }
}

/// `f` over its evaluated arguments.
pub fn eval(f: &ArrayFunction, args: &[Value]) -> Value {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Value::Null);
    let at = |i: usize| arg(i).as_long();
    match f {
        ArrayFunction::Length => list(&arg(0)).map(|l| Value::Long(l.len() as i64)).unwrap_or(Value::Null),
        ArrayFunction::Offset | ArrayFunction::Ordinal => {
            let base = i64::from(*f == ArrayFunction::Ordinal);
            match (list(&arg(0)), at(1)) {
                (Some(l), Some(i)) => {
                    let at = i.checked_sub(base).and_then(|i| usize::try_from(i).ok());
                    at.and_then(|i| l.get(i).cloned()).unwrap_or(Value::Null)
                }
                _ => Value::Null,
            }
        }
        ArrayFunction::Contains => match (list(&arg(0)), list(&arg(1))) {
            (Some(l), Some(want)) => bool(want.iter().all(|x| index_of(&l, x).is_some())),
            (None, _) => bool(false),
            (_, None) => Value::Null,
        },
        ArrayFunction::Overlap => match (list(&arg(0)), list(&arg(1))) {
            (Some(a), Some(b)) => bool(b.iter().any(|x| index_of(&a, x).is_some())),
            (None, _) | (_, None) => bool(false),
        },
        ArrayFunction::OffsetOf | ArrayFunction::OrdinalOf => {
            let base = i64::from(*f == ArrayFunction::OrdinalOf);
            list(&arg(0))
                .and_then(|l| index_of(&l, &arg(1)))
                .map(|i| Value::Long(i as i64 + base))
                .unwrap_or(Value::Null)
        }
        ArrayFunction::Append => {
            let mut l = list(&arg(0)).unwrap_or_default();
            l.push(arg(1));
            array(l)
        }
        ArrayFunction::Prepend => {
            let mut l = vec![arg(0)];
            l.extend(list(&arg(1)).unwrap_or_default());
            array(l)
        }
        ArrayFunction::Concat => match (list(&arg(0)), list(&arg(1))) {
            (Some(mut a), Some(b)) => {
                a.extend(b);
                array(a)
            }
            _ => Value::Null,
        },
        ArrayFunction::Slice => match (list(&arg(0)), at(1), at(2)) {
            (Some(l), Some(start), end) => {
                let end = end.unwrap_or(l.len() as i64).min(l.len() as i64);
                if start < 0 || start as usize > l.len() || start > end {
                    Value::Null
                } else {
                    array(l[start as usize..end as usize].to_vec())
                }
            }
            _ => Value::Null,
        },
        ArrayFunction::ToString => match (list(&arg(0)), text(&arg(1))) {
            (Some(l), Some(sep)) => {
                let parts: Vec<String> = l.iter().map(|v| text(v).unwrap_or_else(|| "null".into())).collect();
                let joined = parts.join(&sep);
                if joined.len() > crate::value::MAX_VALUE_BYTES {
                    Value::Null
                } else {
                    Value::String(joined)
                }
            }
            _ => Value::Null,
        },
        ArrayFunction::FromString(delimiter) => match text(&arg(0)) {
            Some(s) => {
                let mut parts: Vec<Value> =
                    delimiter.0.split(&s).take(MAX_ELEMENTS + 1).map(|p| Value::String(p.to_string())).collect();
                // Trailing empty parts are dropped, as Java's split (Druid's) drops them.
                while parts.last().is_some_and(|p| p.as_str().is_some_and(|s| s.is_empty())) {
                    parts.pop();
                }
                array(parts)
            }
            None => Value::Null,
        },
    }
}

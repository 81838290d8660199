//! How result values compare: nulls first, numbers as numbers, strings by the requested
//! dimension order (lexicographic, alphanumeric, numeric or strlen).

use super::model::DimensionOrder;
use serde_json::Value;
use std::cmp::Ordering;

/// Compares two result values in ascending order.
pub fn compare(a: &Value, b: &Value, order: DimensionOrder) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        (Value::Number(x), Value::Number(y)) if order != DimensionOrder::Strlen => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ => x.as_f64().unwrap_or(f64::NAN).total_cmp(&y.as_f64().unwrap_or(f64::NAN)),
        },
        _ => {
            let (s, t) = (text(a), text(b));
            match order {
                DimensionOrder::Lexicographic => s.cmp(&t),
                DimensionOrder::Strlen => s.chars().count().cmp(&t.chars().count()).then_with(|| s.cmp(&t)),
                DimensionOrder::Numeric => match (s.trim().parse::<f64>(), t.trim().parse::<f64>()) {
                    (Ok(x), Ok(y)) => x.total_cmp(&y),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    _ => s.cmp(&t),
                },
                DimensionOrder::Alphanumeric => alphanumeric(&s, &t),
            }
        }
    }
}

fn text(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => s.as_str().into(),
        other => other.to_string().into(),
    }
}

/// Natural order: runs of digits compare as numbers, everything else character by character.
fn alphanumeric(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.chars().peekable(), b.chars().peekable());
    loop {
        match (x.peek().copied(), y.peek().copied()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let run = |it: &mut std::iter::Peekable<std::str::Chars<'_>>| {
                    let mut s = String::new();
                    while let Some(c) = it.peek().copied().filter(char::is_ascii_digit) {
                        s.push(c);
                        it.next();
                    }
                    s
                };
                let (m, n) = (run(&mut x), run(&mut y));
                let (m, n) = (m.trim_start_matches('0'), n.trim_start_matches('0'));
                let o = m.len().cmp(&n.len()).then_with(|| m.cmp(n));
                if o != Ordering::Equal {
                    return o;
                }
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(&d);
                }
                x.next();
                y.next();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn orders_like_druid() {
        use DimensionOrder::*;
        assert_eq!(compare(&Value::Null, &json!("a"), Lexicographic), Ordering::Less);
        assert_eq!(compare(&json!("10"), &json!("9"), Lexicographic), Ordering::Less);
        assert_eq!(compare(&json!("10"), &json!("9"), Numeric), Ordering::Greater);
        assert_eq!(compare(&json!("item10"), &json!("item9"), Alphanumeric), Ordering::Greater);
        assert_eq!(compare(&json!("bb"), &json!("a"), Strlen), Ordering::Greater);
        assert_eq!(compare(&json!(2), &json!(10), Lexicographic), Ordering::Less);
        assert_eq!(compare(&json!(2.5), &json!(2), Lexicographic), Ordering::Greater);
    }
}

//! Post-aggregators, computed from a group's finalized aggregates: `arithmetic`,
//! `fieldAccess`, `finalizingFieldAccess`, `constant` and `hyperUniqueCardinality`; and from
//! its sketches, the theta and quantiles ones ([`post_sketch`](super::post_sketch)).

use super::json::json_double;
use super::model::PostAggregator;
pub use super::post_sketch::Sketches;
use super::QueryError;
use serde_json::{Map, Value};
use sluice_format::expr::Expr;
use std::collections::HashMap;

/// Checks the post-aggregators: known functions, and fields that name an aggregator or an
/// earlier post-aggregator.
pub fn check(posts: &[PostAggregator], aggregators: &[String]) -> Result<(), QueryError> {
    let mut known: Vec<&str> = aggregators.iter().map(String::as_str).collect();
    for (i, p) in posts.iter().enumerate() {
        check_one(p, &known, &format!("postAggregations[{i}]"))?;
        known.push(p.name());
    }
    Ok(())
}

fn check_one(p: &PostAggregator, known: &[&str], at: &str) -> Result<(), QueryError> {
    match p {
        PostAggregator::Arithmetic { function, fields, .. } => {
            if !matches!(function.as_str(), "+" | "-" | "*" | "/" | "quotient" | "pow") {
                return Err(QueryError::invalid(
                    format!("{at}.fn"),
                    format!("{function:?}: expected +, -, *, /, quotient or pow"),
                ));
            }
            if fields.is_empty() {
                return Err(QueryError::invalid(format!("{at}.fields"), "expected at least one field"));
            }
            for (j, f) in fields.iter().enumerate() {
                check_one(f, known, &format!("{at}.fields[{j}]"))?;
            }
        }
        PostAggregator::FieldAccess { field_name, .. }
        | PostAggregator::FinalizingFieldAccess { field_name, .. }
        | PostAggregator::HyperUniqueCardinality { field_name, .. } => {
            if !known.contains(&field_name.as_str()) {
                return Err(QueryError::invalid(
                    format!("{at}.fieldName"),
                    format!("{field_name:?} is not an aggregator or an earlier post-aggregator"),
                ));
            }
        }
        PostAggregator::Constant { .. } => {}
        PostAggregator::Expression { expression, .. } => {
            parsed(expression).map_err(|e| QueryError::invalid(format!("{at}.expression"), e.to_string()))?;
        }
        PostAggregator::DoubleGreatest(e)
        | PostAggregator::LongGreatest(e)
        | PostAggregator::DoubleLeast(e)
        | PostAggregator::LongLeast(e) => {
            for (j, f) in e.fields.iter().enumerate() {
                check_one(f, known, &format!("{at}.fields[{j}]"))?;
            }
        }
        sketch => super::post_sketch::check(sketch, at, |f, at| check_one(f, known, at))?,
    }
    Ok(())
}

/// Adds each post-aggregator's value to `row` (which holds the aggregates); the sketch
/// post-aggregators read the group's sketches from `sketches`.
pub fn apply(posts: &[PostAggregator], row: &mut Map<String, Value>, sketches: &Sketches) {
    let mut made = HashMap::new();
    for p in posts {
        let v = eval(p, row, &mut made, sketches);
        row.insert(p.name().to_string(), v);
    }
}

/// A parsed expression with the names its slots read.
type Parsed = std::rc::Rc<(Expr, Vec<String>)>;

/// An expression post-aggregator's text parsed, with the names it reads; each text is parsed
/// once per thread.
fn parsed(expression: &str) -> Result<Parsed, sluice_format::expr::ExprError> {
    thread_local! {
        static PARSED: std::cell::RefCell<HashMap<String, Parsed>> = Default::default();
    }
    if let Some(p) = PARSED.with(|c| c.borrow().get(expression).cloned()) {
        return Ok(p);
    }
    let mut names: Vec<String> = Vec::new();
    let e = crate::scope::parse_expression(expression, &mut |field| {
        names.iter().position(|n| n == field).unwrap_or_else(|| {
            names.push(field.to_string());
            names.len() - 1
        })
    })?;
    let p = std::rc::Rc::new((e, names));
    // A lookup is bound when the text is parsed: such an expression is parsed per query.
    if expression.contains("lookup") {
        return Ok(p);
    }
    PARSED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() > 256 {
            c.clear();
        }
        c.insert(expression.to_string(), p.clone());
    });
    Ok(p)
}

/// A result value as an expression input.
fn input(v: Option<&Value>) -> sluice_format::value::Value {
    use sluice_format::value::Value as V;
    match v {
        None | Some(Value::Null) => V::Null,
        Some(Value::Number(n)) => n.as_i64().map(V::Long).or_else(|| n.as_f64().map(V::Double)).unwrap_or(V::Null),
        Some(Value::String(s)) => V::String(s.clone()),
        Some(Value::Bool(b)) => V::Long(i64::from(*b)),
        Some(other) => V::json(other.clone()),
    }
}

fn eval(
    p: &PostAggregator,
    row: &Map<String, Value>,
    made: &mut HashMap<String, sluice_format::aggregate::MetricCell>,
    sketches: &Sketches,
) -> Value {
    if let Some(v) = super::post_sketch::value(p, made, sketches) {
        return v;
    }
    match p {
        PostAggregator::FieldAccess { field_name, .. }
        | PostAggregator::FinalizingFieldAccess { field_name, .. }
        | PostAggregator::HyperUniqueCardinality { field_name, .. } => {
            row.get(field_name).cloned().unwrap_or(Value::Null)
        }
        PostAggregator::Constant { value, .. } => Value::Number(value.clone()),
        PostAggregator::Expression { expression, .. } => match parsed(expression) {
            Ok(p) => {
                let inputs: Vec<_> = p.1.iter().map(|n| input(row.get(n))).collect();
                super::json::value_json(&sluice_format::expr::eval(&p.0, &inputs, 0))
            }
            Err(_) => Value::Null,
        },
        PostAggregator::DoubleGreatest(e)
        | PostAggregator::LongGreatest(e)
        | PostAggregator::DoubleLeast(e)
        | PostAggregator::LongLeast(e) => {
            let least = matches!(p, PostAggregator::DoubleLeast(_) | PostAggregator::LongLeast(_));
            let values = e.fields.iter().filter_map(|f| eval(f, row, made, sketches).as_f64());
            let best = values.reduce(|a, b| if (b > a) != least { b } else { a });
            match (best, matches!(p, PostAggregator::LongGreatest(_) | PostAggregator::LongLeast(_))) {
                (None, _) => Value::Null,
                (Some(v), true) => Value::from(v as i64),
                (Some(v), false) => json_double(v),
            }
        }
        PostAggregator::Arithmetic { function, fields, .. } => {
            let mut acc: Option<f64> = None;
            for f in fields {
                let Some(x) = eval(f, row, made, sketches).as_f64() else { return Value::Null };
                acc = Some(match acc {
                    None => x,
                    Some(a) => match function.as_str() {
                        "+" => a + x,
                        "-" => a - x,
                        "*" => a * x,
                        // Druid's "/" yields 0 for a zero divisor; "quotient" divides plainly.
                        "/" if x == 0.0 => 0.0,
                        "/" | "quotient" => a / x,
                        _ => a.powf(x),
                    },
                });
            }
            acc.map(json_double).unwrap_or(Value::Null)
        }
        // Sketch post-aggregators are answered by `post_sketch::value`.
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computes_like_druid() {
        let posts: Vec<PostAggregator> = serde_json::from_str(
            r#"[{"type":"arithmetic","name":"avg","fn":"/","fields":[{"type":"fieldAccess","fieldName":"sum"},{"type":"fieldAccess","fieldName":"n"}]},
                {"type":"arithmetic","name":"zero","fn":"/","fields":[{"type":"fieldAccess","fieldName":"sum"},{"type":"constant","value":0}]},
                {"type":"arithmetic","name":"nil","fn":"+","fields":[{"type":"fieldAccess","fieldName":"none"},{"type":"constant","value":1}]},
                {"type":"constant","name":"one","value":1}]"#,
        )
        .expect("post-aggregators");
        let mut row: Map<String, Value> = serde_json::from_str(r#"{"sum": 10, "n": 4, "none": null}"#).expect("row");
        check(&posts, &["sum".into(), "n".into(), "none".into()]).expect("valid");
        apply(&posts, &mut row, &|_| None);
        assert_eq!(row["avg"], serde_json::json!(2.5));
        assert_eq!(row["zero"], serde_json::json!(0.0));
        assert_eq!(row["nil"], Value::Null);
        assert_eq!(row["one"], serde_json::json!(1));
        let bad: Vec<PostAggregator> =
            serde_json::from_str(r#"[{"type":"fieldAccess","name":"x","fieldName":"missing"}]"#).expect("json");
        let err = check(&bad, &["sum".into()]).expect_err("unknown field");
        assert!(err.to_string().contains("postAggregations[0].fieldName"), "{err}");
    }
}

//! Evaluation of parsed expressions over a row, with SQL-compatible nulls.

use super::{BinaryOp, Expr, Function, UnaryOp};
use crate::granularity::{to_local, to_utc};
use crate::value::Value;
use std::cmp::Ordering;

/// Evaluates `expr` over the row's field slots and its timestamp `time` (ms).
pub fn eval(expr: &Expr, row: &[Value], time: i64) -> Value {
    match expr {
        Expr::Literal(v) => v.clone(),
        Expr::Field(slot) => row.get(*slot).cloned().unwrap_or(Value::Null),
        Expr::Time => Value::Long(time),
        Expr::Unary(UnaryOp::Neg, e) => match eval(e, row, time) {
            Value::Long(v) => Value::Long(v.wrapping_neg()),
            other => other.as_double().map(|v| Value::Double(-v)).unwrap_or(Value::Null),
        },
        Expr::Unary(UnaryOp::Not, e) => {
            let v = eval(e, row, time);
            if v.is_null() {
                Value::Null
            } else {
                Value::Long(i64::from(!v.is_truthy()))
            }
        }
        Expr::Binary(op, a, b) => binary(*op, eval(a, row, time), || eval(b, row, time)),
        Expr::Call(f, args) => call(f, args, row, time),
    }
}

fn binary(op: BinaryOp, a: Value, b: impl FnOnce() -> Value) -> Value {
    use BinaryOp::*;
    match op {
        And => {
            if !a.is_null() && !a.is_truthy() {
                return Value::Long(0);
            }
            let b = b();
            if !b.is_null() && !b.is_truthy() {
                return Value::Long(0);
            }
            if a.is_null() || b.is_null() {
                Value::Null
            } else {
                Value::Long(1)
            }
        }
        Or => {
            if a.is_truthy() {
                return Value::Long(1);
            }
            let b = b();
            if b.is_truthy() {
                Value::Long(1)
            } else if a.is_null() || b.is_null() {
                Value::Null
            } else {
                Value::Long(0)
            }
        }
        _ => {
            let b = b();
            if a.is_null() || b.is_null() {
                return Value::Null;
            }
            match op {
                Lt | Le | Gt | Ge | Eq | Ne => {
                    let ord = compare(&a, &b);
                    let r = match op {
                        Lt => ord == Some(Ordering::Less),
                        Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
                        Gt => ord == Some(Ordering::Greater),
                        Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
                        Eq => ord == Some(Ordering::Equal),
                        _ => ord != Some(Ordering::Equal),
                    };
                    Value::Long(i64::from(r))
                }
                Add if matches!(a, Value::String(_)) || matches!(b, Value::String(_)) => {
                    Value::String(format!("{a}{b}"))
                }
                _ => arithmetic(op, &a, &b),
            }
        }
    }
}

fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Long(x), Value::Long(y)) => Some(x.cmp(y)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => a.as_double()?.partial_cmp(&b.as_double()?),
    }
}

fn arithmetic(op: BinaryOp, a: &Value, b: &Value) -> Value {
    use BinaryOp::*;
    if let (Value::Long(x), Value::Long(y)) = (a, b) {
        return match op {
            Mul => Value::Long(x.wrapping_mul(*y)),
            Add => Value::Long(x.wrapping_add(*y)),
            Sub => Value::Long(x.wrapping_sub(*y)),
            Div if *y == 0 => Value::Null,
            Div => Value::Long(x.wrapping_div(*y)),
            Rem if *y == 0 => Value::Null,
            Rem => Value::Long(x.wrapping_rem(*y)),
            Pow => Value::Long((*x as f64).powf(*y as f64) as i64),
            _ => Value::Null,
        };
    }
    let (Some(x), Some(y)) = (a.as_double(), b.as_double()) else {
        return Value::Null;
    };
    Value::Double(match op {
        Mul => x * y,
        Add => x + y,
        Sub => x - y,
        Div => x / y,
        Rem => x % y,
        Pow => x.powf(y),
        _ => return Value::Null,
    })
}

fn call(f: &Function, args: &[Expr], row: &[Value], time: i64) -> Value {
    let arg = |i: usize| args.get(i).map(|e| eval(e, row, time)).unwrap_or(Value::Null);
    match f {
        Function::Concat => {
            let mut out = String::new();
            for e in args {
                match eval(e, row, time).as_str() {
                    // Past the longest value a row may hold, the result is null.
                    Some(s) if out.len() + s.len() <= crate::value::MAX_VALUE_BYTES => out.push_str(&s),
                    _ => return Value::Null,
                }
            }
            Value::String(out)
        }
        Function::Text(f) => {
            let values: Vec<Value> = args.iter().map(|e| eval(e, row, time)).collect();
            super::string_fns::eval(f, &values)
        }
        Function::Json(f) => {
            let values: Vec<Value> = args.iter().map(|e| eval(e, row, time)).collect();
            super::json_fns::eval(f, &values)
        }
        Function::Array(f) => {
            let values: Vec<Value> = args.iter().map(|e| eval(e, row, time)).collect();
            super::arrays::eval(f, &values)
        }
        Function::Lookup(table, missing) => match table.value(&arg(0), 1) {
            Some(v) => v.clone(),
            None => missing.as_ref().map(|m| Value::String(m.clone())).unwrap_or(Value::Null),
        },
        Function::Lower => map_str(arg(0), |s| s.to_lowercase()),
        Function::Upper => map_str(arg(0), |s| s.to_uppercase()),
        Function::Strlen => arg(0).as_str().map(|s| Value::Long(s.chars().count() as i64)).unwrap_or(Value::Null),
        Function::Substring => {
            let (s, index, len) = (arg(0), arg(1).as_long(), arg(2).as_long());
            match (s.as_str(), index) {
                (Some(s), Some(index)) if index >= 0 => {
                    let chars = s.chars().skip(index as usize);
                    Value::String(match len {
                        Some(n) if n >= 0 => chars.take(n as usize).collect(),
                        _ => chars.collect(),
                    })
                }
                _ => Value::Null,
            }
        }
        Function::TimestampFloor(g) => arg(0).as_long().map(|t| Value::Long(g.floor(t))).unwrap_or(Value::Null),
        Function::Nvl => {
            let a = arg(0);
            if a.is_null() {
                arg(1)
            } else {
                a
            }
        }
        Function::If => {
            if arg(0).is_truthy() {
                arg(1)
            } else {
                arg(2)
            }
        }
        Function::CaseSearched => {
            let mut i = 0;
            while i + 1 < args.len() {
                if arg(i).is_truthy() {
                    return arg(i + 1);
                }
                i += 2;
            }
            if i < args.len() {
                arg(i)
            } else {
                Value::Null
            }
        }
        Function::Abs => match arg(0) {
            Value::Long(v) => Value::Long(v.wrapping_abs()),
            other => other.as_double().map(|v| Value::Double(v.abs())).unwrap_or(Value::Null),
        },
        Function::Cast(to) => to.apply(arg(0)),
        Function::TimestampFormat(f) => arg(0).as_long().map(|t| f.format(t)).unwrap_or(Value::Null),
        Function::TimestampExtract(unit, zone) => {
            arg(0).as_long().map(|t| unit.extract(t, zone.as_deref())).unwrap_or(Value::Null)
        }
        Function::IsNull => Value::Long(i64::from(arg(0).is_null())),
        Function::NotNull => Value::Long(i64::from(!arg(0).is_null())),
        Function::TimestampShift(period, zone) => match (arg(0).as_long(), arg(1).as_long(), zone) {
            (Some(t), Some(step), None) => Value::Long(period.add_to(t, step)),
            (Some(t), Some(step), Some(tz)) => Value::Long(to_utc(**tz, period.add_to(to_local(**tz, t), step))),
            _ => Value::Null,
        },
        Function::TimestampParse(format, zone) => {
            let text = arg(0);
            match (parse_time(&text, format.as_deref()), zone) {
                // Read on the zone's wall clock unless the text names its own offset.
                (Value::Long(t), Some(tz)) if !text.as_str().is_some_and(|t| crate::time::names_offset(&t)) => {
                    Value::Long(to_utc(**tz, t))
                }
                (parsed, _) => parsed,
            }
        }
        Function::SubtractMonths(zone) => match (arg(0).as_long(), arg(1).as_long(), zone) {
            (Some(a), Some(b), None) => Value::Long(crate::time::months_between(b, a)),
            (Some(a), Some(b), Some(tz)) => {
                Value::Long(crate::time::months_between(to_local(**tz, b), to_local(**tz, a)))
            }
            _ => Value::Null,
        },
    }
}

/// `timestamp_parse`'s reading of `v`: ISO 8601 or SQL's `yyyy-MM-dd HH:mm:ss` without a
/// pattern; null when it does not parse.
fn parse_time(v: &Value, format: Option<&crate::timestamp::TimestampFormat>) -> Value {
    let Some(text) = v.as_str() else { return Value::Null };
    let parsed = match format {
        Some(f) => f.read(&Value::String(text.to_string())).ok(),
        None => crate::time::parse_iso_instant(&text.replacen(' ', "T", 1)).ok(),
    };
    parsed.map(Value::Long).unwrap_or(Value::Null)
}

fn map_str(v: Value, f: impl Fn(&str) -> String) -> Value {
    v.as_str().map(|s| Value::String(f(&s))).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use crate::expr::parse;
    use crate::value::Value;

    fn run(text: &str, fields: &[(&str, Value)]) -> Value {
        let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
        let mut extra = Vec::new();
        let expr = parse(text, &mut |name| {
            names.iter().position(|n| *n == name).unwrap_or_else(|| {
                extra.push(name.to_string());
                names.len() + extra.len() - 1
            })
        })
        .expect("parse");
        let row: Vec<Value> = fields.iter().map(|f| f.1.clone()).collect();
        super::eval(&expr, &row, 1_442_018_818_771)
    }

    #[test]
    fn evaluates_arithmetic_and_precedence() {
        assert_eq!(run("1 + 2 * 3", &[]), Value::Long(7));
        assert_eq!(run("(1 + 2) * 3", &[]), Value::Long(9));
        assert_eq!(run("2 ^ 3 ^ 2", &[]), Value::Long(512));
        assert_eq!(run("7 / 2.0", &[]), Value::Double(3.5));
        assert_eq!(run("-x + 1", &[("x", Value::Long(5))]), Value::Long(-4));
        assert_eq!(run("x * 2", &[("x", Value::Null)]), Value::Null);
        assert_eq!(run("1 / 0", &[]), Value::Null);
    }

    #[test]
    fn evaluates_druid_tutorial_transforms() {
        // Druid's transform tutorial: "animal" upper-cased and a number tripled.
        assert_eq!(
            run("upper(animal)", &[("animal", Value::String("octopus".into()))]),
            Value::String("OCTOPUS".into())
        );
        assert_eq!(
            run("concat('super-', animal)", &[("animal", Value::String("mongoose".into()))]),
            Value::String("super-mongoose".into())
        );
        assert_eq!(run("number * 3", &[("number", Value::Long(416))]), Value::Long(1248));
        assert_eq!(run("\"my field\" == 'a'", &[("my field", Value::String("a".into()))]), Value::Long(1));
    }

    #[test]
    fn evaluates_functions_with_nulls() {
        assert_eq!(run("nvl(x, 'none')", &[("x", Value::Null)]), Value::String("none".into()));
        assert_eq!(run("concat('a', x)", &[("x", Value::Null)]), Value::Null);
        assert_eq!(run("substring('hello', 1, 3)", &[]), Value::String("ell".into()));
        assert_eq!(run("substring('hello', 2, -1)", &[]), Value::String("llo".into()));
        assert_eq!(run("strlen('héllo')", &[]), Value::Long(5));
        assert_eq!(run("if(x > 3, 'big', 'small')", &[("x", Value::Long(5))]), Value::String("big".into()));
        assert_eq!(
            run("case_searched(x == 1, 'one', x == 2, 'two', 'many')", &[("x", Value::Long(2))]),
            Value::String("two".into())
        );
        assert_eq!(run("case_searched(x == 1, 'one')", &[("x", Value::Long(2))]), Value::Null);
        assert_eq!(run("timestamp_floor(__time, 'PT1H')", &[]), Value::Long(1_442_016_000_000));
        assert_eq!(run("lower('ABC') == 'abc' && !(1 > 2)", &[]), Value::Long(1));
        assert_eq!(run("cast('12.7', 'LONG')", &[]), Value::Long(12));
        assert_eq!(run("cast(x, 'DOUBLE')", &[("x", Value::Long(3))]), Value::Double(3.0));
        assert_eq!(run("cast(x, 'STRING')", &[("x", Value::Long(3))]), Value::String("3".into()));
        assert_eq!(run("cast('abc', 'LONG')", &[]), Value::Null);
        assert_eq!(run("isnull(x) + notnull(y)", &[("x", Value::Null), ("y", Value::Long(1))]), Value::Long(2));
        assert_eq!(run("timestamp_format(__time, 'yyyy-MM-dd')", &[]), Value::String("2015-09-12".into()));
        assert_eq!(run("timestamp_extract(__time, 'MINUTE')", &[]), Value::Long(46));
        assert_eq!(run("timestamp_extract(__time, 'HOUR', 'Asia/Kolkata')", &[]), Value::Long(6));
    }

    #[test]
    fn rejects_bad_expressions_with_reason() {
        let mut resolve = |_: &str| 0;
        for bad in [
            "1 +",
            "foo(1)",
            "'open",
            "lower(1, 2)",
            "(1",
            "timestamp_floor(__time, 'PT1X')",
            "cast(x, 'BLOB')",
            "timestamp_extract(__time, 'EON')",
            "timestamp_format(__time, 'yyyy', 'Nowhere/City')",
        ] {
            let err = parse(bad, &mut resolve).expect_err(bad);
            assert!(err.to_string().contains(bad), "{err}");
        }
    }

    #[test]
    fn shifts_parses_and_subtracts_time_as_druid_does() {
        let t = |iso: &str| Value::Long(crate::time::parse_iso_instant(iso).expect("instant"));
        let at = |iso: &str| Value::String(iso.into());
        assert_eq!(run("timestamp_shift(__time, 'P1D', 5)", &[]), Value::Long(1_442_018_818_771 + 5 * 86_400_000));
        let jan31 = [("t", t("2015-01-31T10:00:00Z"))];
        assert_eq!(run("timestamp_shift(t, 'P1M', 1)", &jan31), t("2015-02-28T10:00:00Z"), "the day clamped");
        assert_eq!(run("timestamp_shift(t, 'P1M', -13)", &jan31), t("2013-12-31T10:00:00Z"));
        assert_eq!(run("timestamp_shift(t, 'PT1H', n)", &[jan31[0].clone(), ("n", Value::Null)]), Value::Null);
        assert_eq!(run("timestamp_parse(s)", &[("s", at("2015-09-12T00:00:00"))]), t("2015-09-12T00:00:00Z"));
        assert_eq!(run("timestamp_parse(s)", &[("s", at("2015-09-12 01:02:03"))]), t("2015-09-12T01:02:03Z"));
        assert_eq!(run("timestamp_parse(s)", &[("s", at("yesterday"))]), Value::Null);
        assert_eq!(run("timestamp_parse(s, 'dd/MM/yyyy')", &[("s", at("12/09/2015"))]), t("2015-09-12T00:00:00Z"));
        let pair = |a: &str, b: &str| [("a", t(a)), ("b", t(b))];
        assert_eq!(run("subtract_months(a, b)", &pair("2015-03-31T00:00:00Z", "2015-01-31T00:00:00Z")), Value::Long(2));
        assert_eq!(run("subtract_months(a, b)", &pair("2015-03-30T00:00:00Z", "2015-01-31T00:00:00Z")), Value::Long(1));
        assert_eq!(
            run("subtract_months(a, b)", &pair("2015-01-01T00:00:00Z", "2015-03-01T00:00:00Z")),
            Value::Long(-2)
        );
        // Zoned: a day on New York's wall clock across the change to daylight saving is 23 hours.
        let before_dst = [("t", t("2015-03-07T17:00:00Z"))];
        assert_eq!(run("timestamp_shift(t, 'P1D', 1, 'America/New_York')", &before_dst), t("2015-03-08T16:00:00Z"));
        assert_eq!(run("timestamp_floor(t, 'P1D', null, 'America/New_York')", &before_dst), t("2015-03-07T05:00:00Z"));
        let local = [("s", at("2015-09-12 00:00:00"))];
        assert_eq!(run("timestamp_parse(s, null, 'America/Los_Angeles')", &local), t("2015-09-12T07:00:00Z"));
        let hour = [("s", at("2015-09-12T10"))];
        assert_eq!(
            run("timestamp_parse(s, null, 'America/Los_Angeles')", &hour),
            t("2015-09-12T17:00:00Z"),
            "no offset"
        );
        let offset = [("s", at("2015-09-12T00:00:00Z"))];
        assert_eq!(run("timestamp_parse(s, null, 'America/Los_Angeles')", &offset), t("2015-09-12T00:00:00Z"));
        let pair = [("a", t("2015-03-01T04:00:00Z")), ("b", t("2015-01-01T06:00:00Z"))];
        assert_eq!(run("subtract_months(a, b)", &pair), Value::Long(1), "UTC: Feb 28 is not a whole month after Jan 1");
        assert_eq!(run("subtract_months(a, b, 'America/New_York')", &pair), Value::Long(1));
        let unknown = parse("timestamp_floor(__time, 'P1D', null, 'Mars/Olympus')", &mut |_| 0);
        assert!(unknown.expect_err("refused").reason.contains("Mars/Olympus"));
    }

    #[test]
    fn lookup_maps_a_key_to_its_value_or_the_replacement() {
        let codes = crate::lookup::KeyedTable::lookup("codes", "v1", [("US".into(), "United States".into())]);
        let lookups = |name: &str| (name == "codes").then(|| codes.clone());
        let eval_one = |text: &str, x: Value| {
            let e = crate::expr::parse_with(text, &mut |_| 0, &lookups).expect("parse");
            super::eval(&e, &[x], 0)
        };
        assert_eq!(eval_one("lookup(x, 'codes')", Value::String("US".into())), Value::String("United States".into()));
        assert_eq!(eval_one("lookup(x, 'codes')", Value::String("FR".into())), Value::Null);
        assert_eq!(eval_one("lookup(x, 'codes', 'other')", Value::String("FR".into())), Value::String("other".into()));
        assert_eq!(eval_one("lookup(x, 'codes')", Value::Null), Value::Null);
        let missing = crate::expr::parse_with("lookup(x, 'nope')", &mut |_| 0, &lookups).expect_err("refused");
        assert!(missing.reason.contains("lookup \"nope\" not found"), "{}", missing.reason);
        let plain = parse("lookup(x, 'codes')", &mut |_| 0).expect_err("no lookups outside a query");
        assert!(plain.reason.contains("not found"));
    }

    fn run_on(text: &str, a: Value) -> Value {
        let e = crate::expr::parse(text, &mut |_| 0).expect("parses");
        crate::expr::eval(&e, &[a], 0)
    }

    fn list_of(items: &[&str]) -> Value {
        Value::Array(items.iter().map(|s| Value::String(s.to_string())).collect())
    }

    #[test]
    fn a_single_value_is_a_list_of_one_and_bounds_give_null() {
        assert_eq!(run_on("array_length(a)", Value::String("x".into())), Value::Long(1));
        assert_eq!(run_on("array_length(a)", Value::Null), Value::Null);
        assert_eq!(run_on("array_slice(a, 2, 1)", list_of(&["a", "b", "c"])), Value::Null, "start past end");
        assert_eq!(run_on("array_slice(a, 1)", list_of(&["a", "b", "c"])), list_of(&["b", "c"]));
        assert_eq!(run_on("array_offset(a, -1)", list_of(&["a"])), Value::Null);
        assert_eq!(run_on("array_contains(a, array_append('a', 'c'))", list_of(&["a", "b", "c"])), Value::Long(1));
        assert_eq!(run_on("array_contains(a, array_append('a', 'z'))", list_of(&["a", "b", "c"])), Value::Long(0));
        assert_eq!(
            run_on("array_to_string(string_to_array(a, ',+'), '|')", Value::String("x,,y".into())),
            Value::String("x|y".into())
        );
        assert_eq!(
            run_on("string_to_array(a, ',')", Value::String("a,b,,".into())),
            list_of(&["a", "b"]),
            "as Java splits"
        );
        assert_eq!(run_on("array_ordinal(a, -9223372036854775807 - 1)", list_of(&["a"])), Value::Null);
        let bad = crate::expr::parse("string_to_array(a, '(')", &mut |_| 0).expect_err("a bad pattern");
        assert!(bad.reason.contains("string_to_array delimiter"), "{}", bad.reason);
    }
}

//! WHERE and HAVING conditions into native filters: a column (or a virtual column computing
//! an expression) against constants becomes `equals`, `range`, `in`, `like`, `null`, `regex`;
//! `AND`/`OR`/`NOT` nest; anything else is an `expression` filter.

use super::names::{function_args, function_name};
use super::scalar::{Const, Scalar, Scope};
use super::time::parse_timestamp;
use super::virtuals::Virtuals;
use crate::types::SqlType;
use crate::SqlError;
use serde_json::{json, Value};
use sqlparser::ast::{BinaryOperator as B, Expr, InTarget, UnaryOperator};

/// The native filter of condition `e`.
pub fn filter(e: &Expr, scope: &Scope<'_>, virtuals: &mut Virtuals) -> Result<Value, SqlError> {
    stacker::maybe_grow(super::scalar::RED_ZONE, super::scalar::STACK_GROWTH, || condition(e, scope, virtuals))
}

fn condition(e: &Expr, scope: &Scope<'_>, virtuals: &mut Virtuals) -> Result<Value, SqlError> {
    if let Some(sub) = scope.substitute {
        if let Some(s) = sub(e)? {
            return Ok(expression(&s));
        }
    }
    Ok(match e {
        Expr::Nested(inner) => filter(inner, scope, virtuals)?,
        Expr::BinaryOp { op: op @ (B::And | B::Or), .. } => {
            // A chain of one operator is one flat list of fields, not a nest as deep as it is long.
            let mut fields = Vec::new();
            for operand in chain(e, op) {
                fields.push(filter(operand, scope, virtuals)?);
            }
            json!({"type": if *op == B::And { "and" } else { "or" }, "fields": fields})
        }
        Expr::UnaryOp { op: UnaryOperator::Not, expr } => {
            json!({"type": "not", "field": filter(expr, scope, virtuals)?})
        }
        Expr::BinaryOp { left, op, right } if is_comparison(op) => {
            let (l, r) = (scope.scalar(left)?, scope.scalar(right)?);
            match (&l.constant, &r.constant) {
                (None, Some(c)) if !matches!(c, Const::Null) => compare(&l, op, c, virtuals, scope.zone())?,
                (Some(c), None) if !matches!(c, Const::Null) => compare(&r, &flip(op), c, virtuals, scope.zone())?,
                _ => expression(&scope.scalar(e)?),
            }
        }
        Expr::In { expr, target: InTarget::List(list), negated, .. } => {
            let x = scope.scalar(expr)?;
            let mut values = Vec::with_capacity(list.len());
            let mut constant = x.constant.is_none();
            for item in list {
                match scope.scalar(item)?.constant {
                    Some(Const::Null) => {}
                    Some(c) => values.push(c),
                    None => constant = false,
                }
            }
            if !constant {
                expression(&scope.scalar(e)?)
            } else {
                let column = virtuals.column_for(&x);
                let any = if x.ty == SqlType::Varchar {
                    json!({"type": "in", "dimension": column, "values": values.iter().map(Const::text).collect::<Vec<_>>()})
                } else {
                    let fields = values
                        .iter()
                        .map(|c| equals(&column, &x.ty, c, scope.zone()))
                        .collect::<Result<Vec<_>, _>>()?;
                    json!({"type": "or", "fields": fields})
                };
                negate(any, *negated)
            }
        }
        Expr::IsNull(x) => json!({"type": "null", "column": virtuals.column_for(&scope.scalar(x)?)}),
        Expr::IsNotNull(x) => {
            json!({"type": "not", "field": {"type": "null", "column": virtuals.column_for(&scope.scalar(x)?)}})
        }
        Expr::Like { negated, expr, pattern, escape_char, any: false } => {
            negate(like(scope, virtuals, expr, pattern, escape_char.as_deref(), false)?, *negated)
        }
        Expr::ILike { negated, expr, pattern, escape_char, any: false } => {
            negate(like(scope, virtuals, expr, pattern, escape_char.as_deref(), true)?, *negated)
        }
        Expr::Between { expr, negated, low, high } => {
            let (x, lo, hi) = (scope.scalar(expr)?, scope.scalar(low)?, scope.scalar(high)?);
            match (&x.constant, &lo.constant, &hi.constant) {
                (None, Some(a), Some(b)) if !matches!(a, Const::Null) && !matches!(b, Const::Null) => {
                    let column = virtuals.column_for(&x);
                    let zone = scope.zone();
                    let (kind, a, b) = (x.ty.value_type(), typed(&x.ty, a, zone)?, typed(&x.ty, b, zone)?);
                    let within =
                        json!({"type": "range", "column": column, "matchValueType": kind, "lower": a, "upper": b});
                    negate(within, *negated)
                }
                _ => expression(&scope.scalar(e)?),
            }
        }
        Expr::Value(v) if matches!(v.value, sqlparser::ast::Value::Boolean(_)) => {
            json!({"type": if v.value == sqlparser::ast::Value::Boolean(true) { "true" } else { "false" }})
        }
        Expr::Function(f) if function_name(f) == "TIME_IN_INTERVAL" => {
            let args = function_args(f)?;
            let mut range = super::intervals::TimeRange::default();
            range.narrow(e, scope)?;
            let t = virtuals.column_for(&scope.time_arg(args[0])?);
            json!({"type": "range", "column": t, "matchValueType": "LONG", "lower": range.start, "upper": range.end, "upperOpen": true})
        }
        Expr::Function(f) if function_name(f) == "REGEXP_LIKE" => {
            let args = function_args(f)?;
            if args.len() != 2 {
                return Err(SqlError::validation("REGEXP_LIKE takes 2 arguments"));
            }
            let x = scope.scalar(args[0])?;
            let Some(Const::Str(pattern)) = scope.scalar(args[1])?.constant else {
                return Err(SqlError::validation("REGEXP_LIKE needs a pattern literal"));
            };
            json!({"type": "regex", "dimension": virtuals.column_for(&as_string(&x)), "pattern": pattern})
        }
        other => {
            let s = scope.scalar(other)?;
            if s.constant.is_some() {
                let truth = matches!(s.constant, Some(Const::Long(v)) if v != 0);
                json!({"type": if truth { "true" } else { "false" }})
            } else {
                expression(&s)
            }
        }
    })
}

/// The operands of a chain of `op` (`a AND b AND c`, parenthesised or not), left to right.
fn chain<'e>(e: &'e Expr, op: &B) -> Vec<&'e Expr> {
    let (mut out, mut pending) = (Vec::new(), vec![e]);
    while let Some(x) = pending.pop() {
        match x {
            Expr::BinaryOp { left, op: o, right } if o == op => {
                pending.push(right);
                pending.push(left);
            }
            Expr::Nested(inner) if matches!(inner.as_ref(), Expr::BinaryOp { op: o, .. } if o == op) => {
                pending.push(inner)
            }
            other => out.push(other),
        }
    }
    out
}

fn is_comparison(op: &B) -> bool {
    matches!(op, B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq)
}

fn flip(op: &B) -> B {
    match op {
        B::Lt => B::Gt,
        B::LtEq => B::GtEq,
        B::Gt => B::Lt,
        B::GtEq => B::LtEq,
        other => other.clone(),
    }
}

fn negate(f: Value, negated: bool) -> Value {
    if negated {
        json!({"type": "not", "field": f})
    } else {
        f
    }
}

fn expression(s: &Scalar) -> Value {
    json!({"type": "expression", "expression": s.expr})
}

/// `x` as a string: numbers are compared by their text in LIKE and REGEXP_LIKE.
fn as_string(x: &Scalar) -> Scalar {
    if x.ty == SqlType::Varchar {
        return x.clone();
    }
    Scalar { expr: format!("cast({}, 'STRING')", x.expr), ty: SqlType::Varchar, column: None, constant: None }
}

fn like(
    scope: &Scope<'_>,
    virtuals: &mut Virtuals,
    expr: &Expr,
    pattern: &Expr,
    escape: Option<&Expr>,
    fold_case: bool,
) -> Result<Value, SqlError> {
    let mut x = as_string(&scope.scalar(expr)?);
    let Some(Const::Str(mut p)) = scope.scalar(pattern)?.constant else {
        return Err(SqlError::unsupported("LIKE with a pattern that is not a string literal"));
    };
    if fold_case {
        x = Scalar { expr: format!("lower({})", x.expr), ty: SqlType::Varchar, column: None, constant: None };
        p = p.to_lowercase();
    }
    let escape = match escape.map(|e| scope.scalar(e)).transpose()?.and_then(|s| s.constant) {
        None => None,
        Some(Const::Str(e)) if e.chars().count() == 1 => Some(e),
        Some(other) => {
            return Err(SqlError::validation(format!("LIKE ESCAPE {}: expected one character", other.json())))
        }
    };
    Ok(json!({"type": "like", "dimension": virtuals.column_for(&x), "pattern": p, "escape": escape}))
}

/// `x <op> c` for a non-null constant.
fn compare(x: &Scalar, op: &B, c: &Const, virtuals: &mut Virtuals, zone: Option<&str>) -> Result<Value, SqlError> {
    let column = virtuals.column_for(x);
    let kind = x.ty.value_type();
    let v = typed(&x.ty, c, zone)?;
    Ok(match op {
        B::Eq => equals(&column, &x.ty, c, zone)?,
        B::NotEq => json!({"type": "not", "field": equals(&column, &x.ty, c, zone)?}),
        B::Lt => json!({"type": "range", "column": column, "matchValueType": kind, "upper": v, "upperOpen": true}),
        B::LtEq => json!({"type": "range", "column": column, "matchValueType": kind, "upper": v}),
        B::Gt => json!({"type": "range", "column": column, "matchValueType": kind, "lower": v, "lowerOpen": true}),
        _ => json!({"type": "range", "column": column, "matchValueType": kind, "lower": v}),
    })
}

fn equals(column: &str, ty: &SqlType, c: &Const, zone: Option<&str>) -> Result<Value, SqlError> {
    let v = typed(ty, c, zone)?;
    // A long column equal to a fraction matches nothing; compared as doubles it does so.
    let kind = if ty.value_type() == "LONG" && v.is_f64() { "DOUBLE" } else { ty.value_type() };
    Ok(json!({"type": "equals", "column": column, "matchValueType": kind, "matchValue": v}))
}

/// A constant as the match value for a column of type `ty` (a text read as a time on the
/// wall clock of `zone`).
fn typed(ty: &SqlType, c: &Const, zone: Option<&str>) -> Result<Value, SqlError> {
    let bad = || SqlError::validation(format!("cannot compare {} with {}", ty.sql_name(), c.json()));
    Ok(match (ty.value_type(), c) {
        ("STRING", c) => Value::from(c.text()),
        (_, Const::Long(v)) => json!(v),
        (_, Const::Double(v)) => json!(v),
        (_, Const::Str(s)) if *ty == SqlType::Timestamp => json!(parse_timestamp(s, zone)?),
        (_, Const::Str(s)) => match s.trim().parse::<i64>() {
            Ok(v) => json!(v),
            Err(_) => json!(s.trim().parse::<f64>().map_err(|_| bad())?),
        },
        (_, Const::Null) => return Err(bad()),
    })
}

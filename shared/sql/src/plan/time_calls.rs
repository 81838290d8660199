//! The time functions BI tools write (Superset's Druid engine: `TIME_PARSE` in its filters,
//! `TIMESTAMPADD` in its week grains): `TIME_PARSE`, `TIME_SHIFT`, `TIMESTAMPADD` and
//! `TIMESTAMPDIFF`, as Druid's SQL translates them (`timestamp_parse`, `timestamp_shift`,
//! `subtract_months`), folded to constants when their arguments are, so that a filter such as
//! `__time >= TIME_PARSE('2015-09-12T00:00:00')` narrows the query's intervals.

use super::names::ident_path;
use super::scalar::{quote_string, Const, Scalar, Scope};
use crate::types::SqlType;
use crate::SqlError;
use sqlparser::ast::Expr;

impl Scope<'_> {
    /// `name(args)` when it is one of this module's functions.
    pub(super) fn time_call(&self, name: &str, args: &[&Expr]) -> Option<Result<Scalar, SqlError>> {
        let arity = |min: usize, max: usize| {
            if args.len() < min || args.len() > max {
                Err(SqlError::validation(format!("{name} takes {min} to {max} arguments, got {}", args.len())))
            } else {
                Ok(())
            }
        };
        let call = || -> Result<Scalar, SqlError> {
            match name {
                "TIME_PARSE" => {
                    arity(1, 3)?;
                    let s = self.scalar(args[0])?;
                    let mut call = format!("timestamp_parse({}", s.expr);
                    for a in &args[1..] {
                        call.push_str(&format!(", {}", self.text_arg(name, a)?));
                    }
                    if let (Some(z), true) = (self.zone(), args.len() < 3) {
                        // Read on the request's wall clock when the call names no zone.
                        let pattern = if args.len() < 2 { ", null" } else { "" };
                        call.push_str(&format!("{pattern}, {}", quote_string(z)));
                    }
                    folded(call + ")", SqlType::Timestamp, s.constant.is_some())
                }
                "TIME_SHIFT" => {
                    arity(3, 4)?;
                    let (t, step) = (self.time_arg(args[0])?, self.scalar(args[2])?);
                    let period = self.text_arg(name, args[1])?;
                    let zone = args.get(3).map(|z| self.text_arg(name, z)).transpose()?;
                    let zone = zone.map(|z| format!(", {z}")).unwrap_or_else(|| self.zone_arg());
                    let call = format!("timestamp_shift({}, {period}, {}{zone})", t.expr, step.expr);
                    folded(call, SqlType::Timestamp, t.constant.is_some() && step.constant.is_some())
                }
                "TIMESTAMPADD" => {
                    arity(3, 3)?;
                    let period = unit_period(name, args[0])?;
                    let (step, t) = (self.scalar(args[1])?, self.time_arg(args[2])?);
                    let zone = self.zone_arg();
                    let call = format!("timestamp_shift({}, '{period}', {}{zone})", t.expr, step.expr);
                    folded(call, SqlType::Timestamp, t.constant.is_some() && step.constant.is_some())
                }
                "TIMESTAMPDIFF" => {
                    arity(3, 3)?;
                    let unit = unit_name(name, args[0])?;
                    let (a, b) = (self.time_arg(args[1])?, self.time_arg(args[2])?);
                    let constant = a.constant.is_some() && b.constant.is_some();
                    let zone = self.zone_arg();
                    let months = |n: i64| format!("(subtract_months({}, {}{zone}) / {n})", b.expr, a.expr);
                    let millis = |n: i64| format!("(({} - {}) / {n})", b.expr, a.expr);
                    let call = match unit.as_str() {
                        "MONTH" => months(1),
                        "QUARTER" => months(3),
                        "YEAR" => months(12),
                        other => millis(fixed_millis(other)?),
                    };
                    folded(call, SqlType::Bigint, constant)
                }
                _ => unreachable!("only this module's functions are called"),
            }
        };
        matches!(name, "TIME_PARSE" | "TIME_SHIFT" | "TIMESTAMPADD" | "TIMESTAMPDIFF").then(call)
    }

    /// A string literal argument (or NULL) as Druid expression text.
    fn text_arg(&self, name: &str, e: &Expr) -> Result<String, SqlError> {
        match self.scalar(e)?.constant {
            Some(Const::Str(s)) => Ok(quote_string(&s)),
            Some(Const::Null) => Ok("null".into()),
            _ => {
                Err(SqlError::validation(format!("{name}: {} must be a string literal", crate::short(&e.to_string()))))
            }
        }
    }
}

/// A time unit written as a keyword (`DAY`) or a string (`'day'`).
fn unit_name(name: &str, e: &Expr) -> Result<String, SqlError> {
    let text = match e {
        Expr::Value(v) => v.value.to_string().trim_matches('\'').to_string(),
        other => ident_path(other).and_then(|p| p.last().cloned()).unwrap_or_default(),
    };
    let unit = text.to_ascii_uppercase();
    let unit = unit.strip_prefix("SQL_TSI_").unwrap_or(&unit).to_string();
    if unit.is_empty() {
        return Err(SqlError::validation(format!("{name} needs a time unit, got {}", crate::short(&e.to_string()))));
    }
    Ok(unit)
}

/// The ISO period of one `unit`.
fn unit_period(name: &str, e: &Expr) -> Result<String, SqlError> {
    let unit = unit_name(name, e)?;
    Ok(match unit.as_str() {
        "MILLISECOND" => "PT0.001S".into(),
        "MICROSECOND" | "NANOSECOND" => return Err(SqlError::unsupported(format!("{name} unit {unit}"))),
        other => super::time::unit_period(other)?,
    })
}

/// Milliseconds of a fixed-length unit.
fn fixed_millis(unit: &str) -> Result<i64, SqlError> {
    Ok(match unit {
        "MILLISECOND" => 1,
        "SECOND" => 1_000,
        "MINUTE" => 60_000,
        "HOUR" => 3_600_000,
        "DAY" => 86_400_000,
        "WEEK" => 7 * 86_400_000,
        other => return Err(SqlError::unsupported(format!("TIMESTAMPDIFF unit {}", crate::short(other)))),
    })
}

/// `call`, checked; evaluated to a constant when its inputs are constants.
fn folded(call: String, ty: SqlType, constant: bool) -> Result<Scalar, SqlError> {
    let parsed = sluice_format::expr::parse(&call, &mut |_| 0).map_err(|e| SqlError::validation(e.reason))?;
    if constant {
        let value = sluice_format::expr::eval(&parsed, &[], 0);
        return Ok(Scalar::constant(super::scalar::from_value(value), ty));
    }
    Ok(Scalar::computed(call, ty))
}

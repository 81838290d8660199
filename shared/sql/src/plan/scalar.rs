//! SQL expressions over a row translated into Druid expressions, typed; constants folded.

use super::names::{function_args, function_name, ident_path};
use super::time::{floor_period, parse_timestamp, unit_period};
use crate::types::{Column, SqlType};
use crate::SqlError;
use sqlparser::ast::{BinaryOperator, CeilFloorKind, DataType, Expr, InTarget, UnaryOperator, Value};

/// A translated expression: Druid expression text and SQL type, and what it is when it is a
/// plain column or a constant.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar {
    /// The Druid expression.
    pub expr: String,
    /// Its SQL type.
    pub ty: SqlType,
    /// The column it reads, when it is just a column.
    pub column: Option<String>,
    /// Its value, when it is a constant.
    pub constant: Option<Const>,
}

/// A constant's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Const {
    /// NULL.
    Null,
    /// An integer (timestamps in milliseconds, booleans 0 and 1).
    Long(i64),
    /// A float.
    Double(f64),
    /// A string.
    Str(String),
}

impl Const {
    /// The constant as JSON.
    pub fn json(&self) -> serde_json::Value {
        match self {
            Const::Null => serde_json::Value::Null,
            Const::Long(v) => serde_json::json!(v),
            Const::Double(v) => serde_json::json!(v),
            Const::Str(s) => serde_json::json!(s),
        }
    }

    /// The constant as text, for native filters that compare strings (null for NULL).
    pub fn text(&self) -> Option<String> {
        match self {
            Const::Null => None,
            Const::Long(v) => Some(v.to_string()),
            Const::Double(v) => Some(sluice_format::value::format_double(*v)),
            Const::Str(s) => Some(s.clone()),
        }
    }
}

impl Scalar {
    pub(super) fn constant(c: Const, ty: SqlType) -> Self {
        let expr = match &c {
            Const::Null => "null".to_string(),
            Const::Long(v) => v.to_string(),
            Const::Double(v) => format!("{v:?}"),
            Const::Str(s) => quote_string(s),
        };
        Scalar { expr, ty, column: None, constant: Some(c) }
    }

    pub(super) fn computed(expr: String, ty: SqlType) -> Self {
        Scalar { expr, ty, column: None, constant: None }
    }
}

/// Stack left below which a recursive step first grows the stack.
pub const RED_ZONE: usize = 128 * 1024;
/// How much a recursive step grows the stack by when it runs short.
pub const STACK_GROWTH: usize = 4 * 1024 * 1024;

/// Druid expression text of a string literal.
pub fn quote_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Druid expression text of a column reference.
pub fn quote_column(name: &str) -> String {
    format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
}

/// What expressions are translated against: the relation's columns, the names it may be
/// qualified by, the time `CURRENT_TIMESTAMP` reads, and a hook that answers first (an
/// aggregate query maps its grouping keys and aggregates to result columns through it).
pub struct Scope<'a> {
    /// The relation's columns.
    pub columns: &'a [Column],
    /// Names a column may be prefixed with (`t.x`): each table and its alias, with the prefix
    /// of that table's columns in the relation (empty but for a join's right sides).
    pub qualifiers: Vec<Qualifier>,
    /// `CURRENT_TIMESTAMP`, in milliseconds.
    pub now_ms: i64,
    /// The request's `sqlTimeZone` (none: UTC), a valid zone name.
    pub zone: Option<String>,
    /// Answers an expression before translation, when it can.
    pub substitute: Option<&'a Substitute<'a>>,
}

/// A name a column may be qualified by (a table's name or alias) and the prefix of its
/// columns' names in the relation (empty for the left table).
pub type Qualifier = (String, String);

/// A hook answering an expression before it is translated.
pub type Substitute<'a> = dyn Fn(&Expr) -> Result<Option<Scalar>, SqlError> + 'a;

impl Scope<'_> {
    /// The request's time zone, none for UTC.
    pub fn zone(&self) -> Option<&str> {
        self.zone.as_deref()
    }

    /// `, 'zone'` to end a Druid time function's arguments with, or nothing for UTC.
    pub fn zone_arg(&self) -> String {
        self.zone().map(|z| format!(", {}", quote_string(z))).unwrap_or_default()
    }

    /// The column named by an identifier path (`x`, `t.x`, `druid.t.x`): a qualified name is
    /// its table's; a bare name the left table's, else the one right side's that has it.
    pub fn column(&self, path: &[String]) -> Result<&Column, SqlError> {
        let (name, prefix) = path.split_last().ok_or_else(|| SqlError::validation("empty column name"))?;
        let not_found =
            || SqlError::validation(format!("column '{}' not found in any table", crate::short(&path.join("."))));
        let named = |full: &str| self.columns.iter().find(|c| c.name == full);
        if let Some(q) = prefix.last() {
            let Some((_, p)) = self.qualifiers.iter().find(|(k, _)| k == q) else {
                return Err(SqlError::validation(format!("table '{}' not found in the FROM clause", crate::short(q))));
            };
            return named(&format!("{p}{name}")).ok_or_else(not_found);
        }
        if let Some(c) = named(name) {
            return Ok(c);
        }
        let mut prefixes: Vec<&str> =
            self.qualifiers.iter().map(|(_, p)| p.as_str()).filter(|p| !p.is_empty()).collect();
        prefixes.dedup();
        let mut found = prefixes.into_iter().filter_map(|p| named(&format!("{p}{name}")));
        match (found.next(), found.next()) {
            (Some(c), None) => Ok(c),
            (Some(_), Some(_)) => Err(SqlError::validation(format!(
                "column '{}' is ambiguous: qualify it with its table",
                crate::short(name)
            ))),
            _ => Err(not_found()),
        }
    }

    /// Translates `e`.
    pub fn scalar(&self, e: &Expr) -> Result<Scalar, SqlError> {
        // Expressions are at most MAX_DEPTH deep (checked before parsing), but a debug build's
        // frames are large: grow the stack rather than overflow it.
        stacker::maybe_grow(RED_ZONE, STACK_GROWTH, || self.translate(e))
    }

    fn translate(&self, e: &Expr) -> Result<Scalar, SqlError> {
        if let Some(sub) = self.substitute {
            if let Some(s) = sub(e)? {
                return Ok(s);
            }
        }
        match e {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                let c = self.column(&ident_path(e).unwrap_or_default())?;
                Ok(Scalar {
                    expr: quote_column(&c.name),
                    ty: c.ty.clone(),
                    column: Some(c.name.clone()),
                    constant: None,
                })
            }
            Expr::Nested(inner) => self.scalar(inner),
            Expr::Value(v) => literal(&v.value),
            Expr::TypedString(ts) => {
                let text = match &ts.value.value {
                    Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => s.clone(),
                    other => return Err(SqlError::validation(format!("{other} is not a string"))),
                };
                let kind = ts.data_type.to_string().to_ascii_uppercase();
                if kind.starts_with("TIMESTAMP") || kind == "DATE" {
                    Ok(Scalar::constant(Const::Long(parse_timestamp(&text, self.zone())?), SqlType::Timestamp))
                } else {
                    Err(SqlError::unsupported(format!("literal of type {kind}")))
                }
            }
            Expr::UnaryOp { op, expr } => self.unary(op, expr),
            Expr::BinaryOp { left, op, right } => self.binary(left, op, right),
            Expr::IsNull(x) => self.call1("isnull", x, SqlType::Boolean),
            Expr::IsNotNull(x) => self.call1("notnull", x, SqlType::Boolean),
            Expr::IsTrue(x) => self.scalar(x).map(|s| Scalar::computed(format!("({} == 1)", s.expr), SqlType::Boolean)),
            Expr::IsFalse(x) => {
                self.scalar(x).map(|s| Scalar::computed(format!("({} == 0)", s.expr), SqlType::Boolean))
            }
            Expr::In { expr, target: InTarget::List(list), negated, .. } => {
                let x = self.scalar(expr)?;
                let mut terms = Vec::with_capacity(list.len());
                for item in list {
                    terms.push(format!("{} == {}", x.expr, self.scalar(item)?.expr));
                }
                let any = format!("({})", terms.join(" || "));
                Ok(Scalar::computed(if *negated { format!("!{any}") } else { any }, SqlType::Boolean))
            }
            Expr::Between { expr, negated, low, high } => {
                let (x, lo, hi) = (self.scalar(expr)?, self.scalar(low)?, self.scalar(high)?);
                let within = format!("({} >= {} && {} <= {})", x.expr, lo.expr, x.expr, hi.expr);
                Ok(Scalar::computed(if *negated { format!("!{within}") } else { within }, SqlType::Boolean))
            }
            Expr::Case { operand, conditions, else_result, .. } => {
                let mut args = Vec::new();
                let mut ty: Option<SqlType> = None;
                let operand = operand.as_deref().map(|o| self.scalar(o)).transpose()?;
                for when in conditions {
                    let c = self.scalar(&when.condition)?;
                    args.push(match &operand {
                        Some(o) => format!("{} == {}", o.expr, c.expr),
                        None => c.expr,
                    });
                    let r = self.scalar(&when.result)?;
                    ty = Some(unify(ty, &r));
                    args.push(r.expr);
                }
                if let Some(e) = else_result {
                    let r = self.scalar(e)?;
                    ty = Some(unify(ty, &r));
                    args.push(r.expr);
                }
                Ok(Scalar::computed(format!("case_searched({})", args.join(", ")), ty.unwrap_or(SqlType::Varchar)))
            }
            Expr::Cast { expr, data_type, .. } => self.cast(expr, data_type),
            Expr::Substring { expr, substring_from, substring_for, .. } => {
                let s = self.scalar(expr)?;
                let from = match substring_from {
                    Some(f) => format!("({} - 1)", self.scalar(f)?.expr),
                    None => "0".into(),
                };
                let len = match substring_for {
                    Some(n) => self.scalar(n)?.expr,
                    None => "-1".into(),
                };
                Ok(Scalar::computed(format!("substring({}, {from}, {len})", s.expr), SqlType::Varchar))
            }
            Expr::Floor { expr, field: CeilFloorKind::DateTimeField(unit) } => {
                let period = unit_period(&unit.to_string())?;
                self.time_floor(expr, &period)
            }
            Expr::Extract { field, expr, .. } => {
                let t = self.time_arg(expr)?;
                let unit = field.to_string().to_ascii_uppercase();
                sluice_format::expr::TimeUnit::parse(&unit).map_err(|e| SqlError::Unsupported(e.to_string()))?;
                let zone = self.zone_arg();
                Ok(Scalar::computed(format!("timestamp_extract({}, '{unit}'{zone})", t.expr), SqlType::Bigint))
            }
            Expr::Function(f) => self.function(f),
            other => Err(SqlError::unsupported(format!("expression {}", crate::short(&other.to_string())))),
        }
    }

    fn call1(&self, name: &str, x: &Expr, ty: SqlType) -> Result<Scalar, SqlError> {
        Ok(Scalar::computed(format!("{name}({})", self.scalar(x)?.expr), ty))
    }

    fn unary(&self, op: &UnaryOperator, x: &Expr) -> Result<Scalar, SqlError> {
        let s = self.scalar(x)?;
        match (op, &s.constant) {
            (UnaryOperator::Minus, Some(Const::Long(v))) => Ok(Scalar::constant(Const::Long(v.wrapping_neg()), s.ty)),
            (UnaryOperator::Minus, Some(Const::Double(v))) => Ok(Scalar::constant(Const::Double(-v), s.ty)),
            (UnaryOperator::Minus, _) => Ok(Scalar::computed(format!("-{}", s.expr), s.ty)),
            (UnaryOperator::Plus, _) => Ok(s),
            (UnaryOperator::Not, _) => Ok(Scalar::computed(format!("!({})", s.expr), SqlType::Boolean)),
            (other, _) => Err(SqlError::unsupported(format!("operator {other}"))),
        }
    }

    fn binary(&self, left: &Expr, op: &BinaryOperator, right: &Expr) -> Result<Scalar, SqlError> {
        // TIMESTAMP plus or minus an INTERVAL.
        if let (Expr::Interval(iv), BinaryOperator::Plus | BinaryOperator::Minus) = (right, op) {
            let t = self.scalar(left)?;
            let ms = interval_millis(iv, self)?;
            let ms = if *op == BinaryOperator::Minus { -ms } else { ms };
            return Ok(match t.constant {
                Some(Const::Long(v)) => Scalar::constant(Const::Long(v.saturating_add(ms)), SqlType::Timestamp),
                _ => Scalar::computed(format!("({} + {ms})", t.expr), SqlType::Timestamp),
            });
        }
        let (a, b) = (self.scalar(left)?, self.scalar(right)?);
        let (symbol, ty) = match op {
            BinaryOperator::Plus => ("+", a.ty.arithmetic(&b.ty)),
            BinaryOperator::Minus => ("-", a.ty.arithmetic(&b.ty)),
            BinaryOperator::Multiply => ("*", a.ty.arithmetic(&b.ty)),
            BinaryOperator::Divide => ("/", a.ty.arithmetic(&b.ty)),
            BinaryOperator::Modulo => ("%", a.ty.arithmetic(&b.ty)),
            BinaryOperator::Eq => ("==", SqlType::Boolean),
            BinaryOperator::NotEq => ("!=", SqlType::Boolean),
            BinaryOperator::Lt => ("<", SqlType::Boolean),
            BinaryOperator::LtEq => ("<=", SqlType::Boolean),
            BinaryOperator::Gt => (">", SqlType::Boolean),
            BinaryOperator::GtEq => (">=", SqlType::Boolean),
            BinaryOperator::And => ("&&", SqlType::Boolean),
            BinaryOperator::Or => ("||", SqlType::Boolean),
            BinaryOperator::StringConcat => {
                return Ok(Scalar::computed(format!("concat({}, {})", a.expr, b.expr), SqlType::Varchar))
            }
            other => return Err(SqlError::unsupported(format!("operator {other}"))),
        };
        if matches!(symbol, "+" | "-" | "*" | "/" | "%") && !(a.ty.is_numeric() && b.ty.is_numeric()) {
            return Err(SqlError::validation(format!(
                "cannot apply '{symbol}' to {} and {}",
                a.ty.sql_name(),
                b.ty.sql_name()
            )));
        }
        let (a, b) = (coerce_for(&a, &b, self.zone())?, coerce_for(&b, &a, self.zone())?);
        Ok(Scalar::computed(format!("({} {symbol} {})", a.expr, b.expr), ty))
    }

    fn cast(&self, x: &Expr, to: &DataType) -> Result<Scalar, SqlError> {
        let s = self.scalar(x)?;
        let target = to.to_string().to_ascii_uppercase();
        let base = target.split('(').next().unwrap_or("").trim().to_string();
        let (kind, ty) = match base.as_str() {
            "BIGINT" | "INTEGER" | "INT" | "SMALLINT" | "TINYINT" => ("LONG", SqlType::Bigint),
            "DOUBLE" | "DOUBLE PRECISION" | "FLOAT" | "REAL" | "DECIMAL" | "NUMERIC" => ("DOUBLE", SqlType::Double),
            "VARCHAR" | "CHAR" | "CHARACTER" | "STRING" | "TEXT" => {
                if s.ty == SqlType::Timestamp {
                    let f = format!("timestamp_format({}, 'yyyy-MM-dd HH:mm:ss')", s.expr);
                    return Ok(Scalar::computed(f, SqlType::Varchar));
                }
                ("STRING", SqlType::Varchar)
            }
            "TIMESTAMP" => {
                return match (&s.ty, &s.constant) {
                    // Superset writes CAST(__time AS TIMESTAMP): the column itself.
                    (SqlType::Timestamp, _) => Ok(s),
                    (_, Some(Const::Str(text))) => {
                        Ok(Scalar::constant(Const::Long(parse_timestamp(text, self.zone())?), SqlType::Timestamp))
                    }
                    (t, _) if t.is_numeric() => Ok(Scalar { ty: SqlType::Timestamp, column: None, ..s }),
                    _ => Err(SqlError::unsupported("CAST of a non-constant string AS TIMESTAMP (use TIME_PARSE)")),
                };
            }
            "DATE" => return self.time_floor(x, "P1D"),
            _ => return Err(SqlError::unsupported(format!("CAST AS {}", crate::short(&target)))),
        };
        if let Some(c) = &s.constant {
            let folded = sluice_format::expr::parse(&format!("cast({}, '{kind}')", s.expr), &mut |_| 0)
                .map(|e| sluice_format::expr::eval(&e, &[], 0));
            if let (Ok(v), false) = (folded, matches!(c, Const::Null)) {
                return Ok(Scalar::constant(from_value(v), ty));
            }
        }
        Ok(Scalar::computed(format!("cast({}, '{kind}')", s.expr), ty))
    }

    /// A timestamp argument: `__time`, a TIMESTAMP expression or constant.
    pub fn time_arg(&self, x: &Expr) -> Result<Scalar, SqlError> {
        let t = self.scalar(x)?;
        if t.ty != SqlType::Timestamp {
            return Err(SqlError::validation(format!(
                "expected a TIMESTAMP, got {} ({})",
                t.ty.sql_name(),
                crate::short(&x.to_string())
            )));
        }
        Ok(t)
    }

    /// `timestamp_floor` of a timestamp by an ISO period (folded for a constant).
    pub fn time_floor(&self, x: &Expr, period: &str) -> Result<Scalar, SqlError> {
        let t = self.time_arg(x)?;
        let call = match self.zone() {
            Some(z) => format!("timestamp_floor({}, '{period}', null, {})", t.expr, quote_string(z)),
            None => format!("timestamp_floor({}, '{period}')", t.expr),
        };
        if let Some(Const::Long(_)) = t.constant {
            if let Ok(e) = sluice_format::expr::parse(&call, &mut |_| 0) {
                let floor = from_value(sluice_format::expr::eval(&e, &[], 0));
                return Ok(Scalar::constant(floor, SqlType::Timestamp));
            }
        }
        Ok(Scalar::computed(call, SqlType::Timestamp))
    }

    fn function(&self, f: &sqlparser::ast::Function) -> Result<Scalar, SqlError> {
        let name = function_name(f);
        let args = function_args(f)?;
        let arity = |min: usize, max: usize| {
            if args.len() < min || args.len() > max {
                Err(SqlError::validation(format!("{name} takes {min} to {max} arguments, got {}", args.len())))
            } else {
                Ok(())
            }
        };
        let text = |i: usize| -> Result<Option<String>, SqlError> {
            match args.get(i) {
                None => Ok(None),
                Some(e) => match self.scalar(e)?.constant {
                    Some(Const::Str(s)) => Ok(Some(s)),
                    Some(Const::Null) => Ok(None),
                    _ => Err(SqlError::validation(format!("{name} argument {} must be a string literal", i + 1))),
                },
            }
        };
        let each = |this: &Self| -> Result<Vec<Scalar>, SqlError> { args.iter().map(|a| this.scalar(a)).collect() };
        if let Some(answer) = self.time_call(&name, &args) {
            return answer;
        }
        if let Some(answer) = self.json_call(&name, f, &args) {
            return answer;
        }
        match name.as_str() {
            "LOWER" | "UPPER" => {
                arity(1, 1)?;
                Ok(Scalar::computed(format!("{}({})", name.to_lowercase(), self.scalar(args[0])?.expr), SqlType::Varchar))
            }
            "CONCAT" => {
                let parts: Vec<String> = each(self)?.into_iter().map(|s| s.expr).collect();
                Ok(Scalar::computed(format!("concat({})", parts.join(", ")), SqlType::Varchar))
            }
            "SUBSTRING" | "SUBSTR" => {
                arity(2, 3)?;
                let a = each(self)?;
                let len = a.get(2).map(|s| s.expr.clone()).unwrap_or_else(|| "-1".into());
                Ok(Scalar::computed(format!("substring({}, ({} - 1), {len})", a[0].expr, a[1].expr), SqlType::Varchar))
            }
            "CHAR_LENGTH" | "CHARACTER_LENGTH" | "LENGTH" | "STRLEN" => {
                arity(1, 1)?;
                Ok(Scalar::computed(format!("strlen({})", self.scalar(args[0])?.expr), SqlType::Bigint))
            }
            "ABS" => {
                arity(1, 1)?;
                let s = self.scalar(args[0])?;
                Ok(Scalar::computed(format!("abs({})", s.expr), s.ty))
            }
            "MV_LENGTH" | "MV_OFFSET" | "MV_ORDINAL" | "MV_CONTAINS" | "MV_OVERLAP" | "MV_OFFSET_OF"
            | "MV_ORDINAL_OF" | "MV_APPEND" | "MV_PREPEND" | "MV_CONCAT" | "MV_SLICE" | "MV_TO_STRING"
            | "STRING_TO_MV" => {
                // Druid's SQL translates these to its array functions, over multi-value strings.
                let (function, ty, min, max) = match name.as_str() {
                    "MV_LENGTH" => ("array_length", SqlType::Bigint, 1, 1),
                    "MV_OFFSET" => ("array_offset", SqlType::Varchar, 2, 2),
                    "MV_ORDINAL" => ("array_ordinal", SqlType::Varchar, 2, 2),
                    "MV_CONTAINS" => ("array_contains", SqlType::Boolean, 2, 2),
                    "MV_OVERLAP" => ("array_overlap", SqlType::Boolean, 2, 2),
                    "MV_OFFSET_OF" => ("array_offset_of", SqlType::Bigint, 2, 2),
                    "MV_ORDINAL_OF" => ("array_ordinal_of", SqlType::Bigint, 2, 2),
                    "MV_APPEND" => ("array_append", SqlType::Varchar, 2, 2),
                    "MV_PREPEND" => ("array_prepend", SqlType::Varchar, 2, 2),
                    "MV_CONCAT" => ("array_concat", SqlType::Varchar, 2, 2),
                    "MV_SLICE" => ("array_slice", SqlType::Varchar, 2, 3),
                    "MV_TO_STRING" => ("array_to_string", SqlType::Varchar, 2, 2),
                    _ => ("string_to_array", SqlType::Varchar, 2, 2),
                };
                arity(min, max)?;
                let parts: Vec<String> = each(self)?.into_iter().map(|s| s.expr).collect();
                checked(format!("{function}({})", parts.join(", ")), ty)
            }
            "MV_FILTER_ONLY" | "MV_FILTER_NONE" | "MV_TO_ARRAY" | "ARRAY_TO_MV" => Err(SqlError::unsupported(format!(
                "{name} (ARRAY values are not built; the other MV_ functions are)"
            ))),
            "LOOKUP" => {
                arity(2, 3)?;
                let key = self.scalar(args[0])?;
                let lookup = text(1)?.ok_or_else(|| SqlError::validation("LOOKUP needs a lookup name"))?;
                let mut call = format!("lookup({}, {}", key.expr, quote_string(&lookup));
                if let Some(missing) = text(2)? {
                    call.push_str(&format!(", {}", quote_string(&missing)));
                }
                Ok(Scalar::computed(call + ")", SqlType::Varchar))
            }
            "COALESCE" | "NVL" => {
                arity(2, 64)?;
                let a = each(self)?;
                let ty = a.iter().fold(None, |t, s| Some(unify(t, s))).unwrap_or(SqlType::Varchar);
                let mut expr = a[a.len() - 1].expr.clone();
                for s in a[..a.len() - 1].iter().rev() {
                    expr = format!("nvl({}, {expr})", s.expr);
                }
                Ok(Scalar::computed(expr, ty))
            }
            "TIME_FLOOR" => {
                arity(2, 4)?;
                if args.len() > 2 && !matches!(self.scalar(args[2])?.constant, Some(Const::Null)) {
                    return Err(SqlError::unsupported("TIME_FLOOR origin"));
                }
                let period = text(1)?.ok_or_else(|| SqlError::validation("TIME_FLOOR needs a period"))?;
                floor_period(&period)?;
                match text(3)? {
                    // An explicit zone, for this call only.
                    Some(z) => {
                        super::time::tz(&z)?;
                        let zone = (!matches!(z.as_str(), "UTC" | "Etc/UTC" | "Z")).then_some(z);
                        Scope { zone, columns: self.columns, qualifiers: self.qualifiers.clone(), ..*self }
                            .time_floor(args[0], &period)
                    }
                    None => self.time_floor(args[0], &period),
                }
            }
            "DATE_TRUNC" => {
                arity(2, 2)?;
                let unit = text(0)?.ok_or_else(|| SqlError::validation("DATE_TRUNC needs a unit"))?;
                self.time_floor(args[1], &unit_period(&unit)?)
            }
            "TIME_FORMAT" => {
                arity(1, 3)?;
                let t = self.time_arg(args[0])?;
                let mut call = format!("timestamp_format({}", t.expr);
                for i in 1..args.len() {
                    call.push_str(&format!(", {}", text(i)?.map(|s| quote_string(&s)).unwrap_or_else(|| "null".into())));
                }
                if let (Some(z), true) = (self.zone(), args.len() < 3) {
                    // The request's zone when the call names none.
                    let pattern = if args.len() < 2 { ", null" } else { "" };
                    call.push_str(&format!("{pattern}, {}", quote_string(z)));
                }
                checked(call + ")", SqlType::Varchar)
            }
            "TIME_EXTRACT" => {
                arity(2, 3)?;
                let t = self.time_arg(args[0])?;
                let unit = text(1)?.ok_or_else(|| SqlError::validation("TIME_EXTRACT needs a unit"))?;
                let mut call = format!("timestamp_extract({}, {}", t.expr, quote_string(&unit));
                if let Some(z) = text(2)?.or_else(|| self.zone.clone()) {
                    call.push_str(&format!(", {}", quote_string(&z)));
                }
                checked(call + ")", SqlType::Bigint)
            }
            "MILLIS_TO_TIMESTAMP" => {
                arity(1, 1)?;
                let s = self.scalar(args[0])?;
                Ok(Scalar { ty: SqlType::Timestamp, column: None, ..s })
            }
            "TIMESTAMP_TO_MILLIS" => {
                arity(1, 1)?;
                let s = self.time_arg(args[0])?;
                Ok(Scalar { ty: SqlType::Bigint, column: None, ..s })
            }
            "CURRENT_TIMESTAMP" | "NOW" => Ok(Scalar::constant(Const::Long(self.now_ms), SqlType::Timestamp)),
            "CURRENT_DATE" => {
                let day = sluice_format::granularity::Granularity::Period {
                    period: sluice_format::time::Period { months: 0, millis: 86_400_000 },
                    origin: 0,
                };
                let day = match self.zone() {
                    Some(z) => sluice_format::granularity::Granularity::Zoned {
                        period: sluice_format::time::Period { months: 0, millis: 86_400_000 },
                        origin: 0,
                        tz: super::time::tz(z)?,
                    },
                    None => day,
                };
                Ok(Scalar::constant(Const::Long(day.floor(self.now_ms)), SqlType::Timestamp))
            }
            other if super::names::is_aggregate(other) => Err(SqlError::validation(format!(
                "aggregate function {other} is not allowed here (only in the select list, HAVING or ORDER BY of a grouped query)"
            ))),
            other => Err(SqlError::unsupported(format!("function {}", crate::short(other)))),
        }
    }
}

/// A Druid expression call, once it parses (its pattern, unit and time zone arguments are
/// read when it is parsed).
pub(super) fn checked(call: String, ty: SqlType) -> Result<Scalar, SqlError> {
    sluice_format::expr::parse(&call, &mut |_| 0).map_err(|e| SqlError::validation(e.reason))?;
    Ok(Scalar::computed(call, ty))
}

/// `a` made comparable with `b`: a string constant against a TIMESTAMP reads as a time.
fn coerce_for(a: &Scalar, b: &Scalar, zone: Option<&str>) -> Result<Scalar, SqlError> {
    match (&a.constant, &b.ty) {
        (Some(Const::Str(s)), SqlType::Timestamp) => {
            Ok(Scalar::constant(Const::Long(parse_timestamp(s, zone)?), SqlType::Timestamp))
        }
        _ => Ok(a.clone()),
    }
}

/// The type of a CASE or COALESCE over branches so far and one more.
fn unify(so_far: Option<SqlType>, next: &Scalar) -> SqlType {
    if next.constant == Some(Const::Null) {
        return so_far.unwrap_or(SqlType::Varchar);
    }
    match so_far {
        None => next.ty.clone(),
        Some(t) if t == next.ty => t,
        Some(t) if t.is_numeric() && next.ty.is_numeric() => t.arithmetic(&next.ty),
        Some(_) => SqlType::Varchar,
    }
}

/// The length of a fixed `INTERVAL 'n' UNIT` in milliseconds.
fn interval_millis(iv: &sqlparser::ast::Interval, scope: &Scope<'_>) -> Result<i64, SqlError> {
    let n = match scope.scalar(&iv.value)?.constant {
        Some(Const::Long(n)) => n,
        Some(Const::Str(s)) => s.trim().parse::<i64>().map_err(|_| SqlError::unsupported(format!("INTERVAL {s:?}")))?,
        _ => return Err(SqlError::unsupported("an INTERVAL that is not a constant")),
    };
    let unit = iv.leading_field.as_ref().map(|f| f.to_string().to_ascii_uppercase()).unwrap_or_else(|| "DAY".into());
    let ms: i64 = match unit.as_str() {
        "MILLISECOND" | "MILLISECONDS" => 1,
        "SECOND" | "SECONDS" => 1_000,
        "MINUTE" | "MINUTES" => 60_000,
        "HOUR" | "HOURS" => 3_600_000,
        "DAY" | "DAYS" => 86_400_000,
        "WEEK" | "WEEKS" => 7 * 86_400_000,
        other => {
            return Err(SqlError::unsupported(format!("INTERVAL unit {other} (fixed units only: SECOND to WEEK)")))
        }
    };
    n.checked_mul(ms).ok_or_else(|| SqlError::validation("INTERVAL out of range"))
}

/// A SQL literal.
pub fn literal(v: &Value) -> Result<Scalar, SqlError> {
    Ok(match v {
        Value::Number(n, _) => match n.parse::<i64>() {
            Ok(i) => Scalar::constant(Const::Long(i), SqlType::Bigint),
            Err(_) => match n.parse::<f64>() {
                Ok(d) if d.is_finite() => Scalar::constant(Const::Double(d), SqlType::Double),
                _ => return Err(SqlError::validation(format!("number {} is out of range", crate::short(n)))),
            },
        },
        Value::SingleQuotedString(s) => Scalar::constant(Const::Str(s.clone()), SqlType::Varchar),
        Value::Boolean(b) => Scalar::constant(Const::Long(i64::from(*b)), SqlType::Boolean),
        Value::Null => Scalar::constant(Const::Null, SqlType::Varchar),
        other => return Err(SqlError::unsupported(format!("literal {}", crate::short(&other.to_string())))),
    })
}

pub(super) fn from_value(v: sluice_format::value::Value) -> Const {
    use sluice_format::value::Value as V;
    match v {
        V::Long(x) => Const::Long(x),
        V::Double(x) => Const::Double(x),
        V::String(s) => Const::Str(s),
        _ => Const::Null,
    }
}

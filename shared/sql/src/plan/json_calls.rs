//! Druid SQL's JSON functions over nested (`COMPLEX<json>`) columns: `JSON_VALUE` (with
//! `RETURNING`), `JSON_QUERY`, `JSON_KEYS`, `JSON_PATHS`, `JSON_OBJECT`, `PARSE_JSON`,
//! `TRY_PARSE_JSON` and `TO_JSON_STRING`, as Druid's SQL translates them to its expressions.
//! `JSON_VALUE` of a column reads the path's own column where segments store one.

use super::scalar::{checked, quote_string, Const, Scalar, Scope};
use crate::types::SqlType;
use crate::SqlError;
use sqlparser::ast::{DataType, Expr, Function, FunctionArgumentClause, FunctionArguments};

impl Scope<'_> {
    /// `name(args)` when it is one of this module's functions.
    pub(super) fn json_call(&self, name: &str, f: &Function, args: &[&Expr]) -> Option<Result<Scalar, SqlError>> {
        let arity = |min: usize, max: usize| {
            if args.len() < min || args.len() > max {
                Err(SqlError::validation(format!("{name} takes {min} to {max} arguments, got {}", args.len())))
            } else {
                Ok(())
            }
        };
        let json = SqlType::Complex("json".into());
        let call = || -> Result<Scalar, SqlError> {
            let each = || -> Result<Vec<String>, SqlError> { args.iter().map(|a| Ok(self.scalar(a)?.expr)).collect() };
            match name {
                "JSON_VALUE" => {
                    arity(2, 2)?;
                    let (cast, ty) = match returning(f) {
                        None => (None, SqlType::Varchar),
                        Some(DataType::BigInt(_) | DataType::Int(_) | DataType::Integer(_) | DataType::SmallInt(_)) => {
                            (Some("LONG"), SqlType::Bigint)
                        }
                        Some(
                            DataType::Double(_)
                            | DataType::DoublePrecision
                            | DataType::Decimal(_)
                            | DataType::Numeric(_)
                            | DataType::Float(_)
                            | DataType::Real,
                        ) => (Some("DOUBLE"), SqlType::Double),
                        Some(DataType::Varchar(_) | DataType::String(_) | DataType::Text) => (None, SqlType::Varchar),
                        Some(other) => return Err(SqlError::unsupported(format!("JSON_VALUE ... RETURNING {other}"))),
                    };
                    let path = self.path(name, args[1])?;
                    let x = self.scalar(args[0])?.expr;
                    let cast = cast.map(|c| format!(", '{c}'")).unwrap_or_default();
                    checked(format!("json_value({x}, {path}{cast})"), ty)
                }
                "JSON_QUERY" | "JSON_KEYS" => {
                    arity(2, 2)?;
                    let path = self.path(name, args[1])?;
                    let x = self.scalar(args[0])?.expr;
                    let ty = if name == "JSON_QUERY" { json.clone() } else { SqlType::Varchar };
                    checked(format!("{}({x}, {path})", name.to_ascii_lowercase()), ty)
                }
                "JSON_PATHS" => {
                    arity(1, 1)?;
                    checked(format!("json_paths({})", self.scalar(args[0])?.expr), SqlType::Varchar)
                }
                "PARSE_JSON" | "TRY_PARSE_JSON" => {
                    arity(1, 1)?;
                    checked(format!("{}({})", name.to_ascii_lowercase(), self.scalar(args[0])?.expr), json.clone())
                }
                "TO_JSON_STRING" => {
                    arity(1, 1)?;
                    checked(format!("to_json_string({})", self.scalar(args[0])?.expr), SqlType::Varchar)
                }
                "JSON_OBJECT" => {
                    if args.len() % 2 != 0 {
                        return Err(SqlError::validation("JSON_OBJECT takes key, value pairs"));
                    }
                    checked(format!("json_object({})", each()?.join(", ")), json.clone())
                }
                _ => Err(SqlError::unsupported(format!("function {name}"))),
            }
        };
        matches!(
            name,
            "JSON_VALUE"
                | "JSON_QUERY"
                | "JSON_KEYS"
                | "JSON_PATHS"
                | "PARSE_JSON"
                | "TRY_PARSE_JSON"
                | "TO_JSON_STRING"
                | "JSON_OBJECT"
        )
        .then(call)
    }

    /// A path argument: a string literal, quoted for the expression.
    fn path(&self, name: &str, e: &Expr) -> Result<String, SqlError> {
        match self.scalar(e)?.constant {
            Some(Const::Str(s)) => Ok(quote_string(&s)),
            _ => Err(SqlError::validation(format!("{name}: the path must be a string literal"))),
        }
    }
}

/// The type a `RETURNING` clause names.
fn returning(f: &Function) -> Option<&DataType> {
    let FunctionArguments::List(list) = &f.args else { return None };
    list.clauses.iter().find_map(|c| match c {
        FunctionArgumentClause::JsonReturningClause(r) => Some(&r.data_type),
        _ => None,
    })
}

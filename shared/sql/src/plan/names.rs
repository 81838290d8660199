//! Reading names out of the syntax tree: identifier paths, function names and arguments.

use crate::SqlError;
use sqlparser::ast::{Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectName, ObjectNamePart};

/// The parts of an identifier (`a`, `t.a`), or `None` when `e` is not one.
pub fn ident_path(e: &Expr) -> Option<Vec<String>> {
    match e {
        Expr::Identifier(i) => Some(vec![i.value.clone()]),
        Expr::CompoundIdentifier(parts) => Some(parts.iter().map(|i| i.value.clone()).collect()),
        _ => None,
    }
}

/// The parts of an object name (`druid.wikipedia`).
pub fn object_path(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// A function's name, upper-cased.
pub fn function_name(f: &Function) -> String {
    object_path(&f.name).join(".").to_ascii_uppercase()
}

/// A function's plain arguments; `*` is refused here (only `COUNT(*)` takes it).
pub fn function_args(f: &Function) -> Result<Vec<&Expr>, SqlError> {
    let list = match &f.args {
        FunctionArguments::None => return Ok(Vec::new()),
        FunctionArguments::List(list) => list,
        FunctionArguments::Subquery(_) => return Err(SqlError::unsupported("a subquery as a function argument")),
    };
    if f.over.is_some() {
        return Err(SqlError::unsupported("window functions (OVER)"));
    }
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
            FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => {
                Err(SqlError::validation(format!("{}(*) is not allowed", function_name(f))))
            }
            other => Err(SqlError::unsupported(format!("argument {}", crate::short(&other.to_string())))),
        })
        .collect()
}

/// Whether the function is called with `*` (`COUNT(*)`).
pub fn is_star(f: &Function) -> bool {
    matches!(&f.args, FunctionArguments::List(l) if l.args.len() == 1
        && matches!(l.args[0], FunctionArg::Unnamed(FunctionArgExpr::Wildcard)))
}

/// Whether the call says DISTINCT (`COUNT(DISTINCT x)`).
pub fn is_distinct(f: &Function) -> bool {
    matches!(&f.args, FunctionArguments::List(l)
        if matches!(l.duplicate_treatment, Some(sqlparser::ast::DuplicateTreatment::Distinct)))
}

/// Whether `name` (upper case) is an aggregate function.
pub fn is_aggregate(name: &str) -> bool {
    matches!(
        name,
        "COUNT"
            | "SUM"
            | "MIN"
            | "MAX"
            | "AVG"
            | "APPROX_COUNT_DISTINCT"
            | "APPROX_COUNT_DISTINCT_DS_HLL"
            | "EARLIEST"
            | "LATEST"
            | "EARLIEST_BY"
            | "LATEST_BY"
            | "ANY_VALUE"
    ) || is_sketch_function(name)
}

/// Whether `name` is one of the theta and quantiles sketch functions (`sketch_calls`).
pub fn is_sketch_function(name: &str) -> bool {
    matches!(
        name,
        "APPROX_COUNT_DISTINCT_DS_THETA"
            | "DS_THETA"
            | "THETA_SKETCH_ESTIMATE"
            | "THETA_SKETCH_ESTIMATE_WITH_ERROR_BOUNDS"
            | "THETA_SKETCH_UNION"
            | "THETA_SKETCH_INTERSECT"
            | "THETA_SKETCH_NOT"
            | "APPROX_QUANTILE_DS"
            | "DS_QUANTILES_SKETCH"
            | "DS_GET_QUANTILE"
            | "DS_GET_QUANTILES"
            | "DS_RANK"
            | "DS_CDF"
            | "DS_HISTOGRAM"
    )
}

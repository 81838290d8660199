//! SQL text to one parsed query: `EXPLAIN PLAN FOR` recognised, `?` parameters bound, and
//! parse errors placed at their line and column.

use crate::measure::Budget;
use crate::request::Parameter;
use crate::SqlError;
use sqlparser::ast::{
    visit_expressions_mut, DataType, Expr, Statement, TimezoneInfo, TypedString, Value, ValueWithSpan,
};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::{Parser, ParserError};
use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// Deepest nesting of expressions and subqueries the parser follows.
pub const MAX_NESTING: usize = 40;
/// Most tokens a statement may have.
pub const MAX_TOKENS: usize = 100_000;
/// Deepest expression accepted, counting the operators in a row along with the parentheses
/// around them: a chain of operators parses into a tree as deep as it is long, and planning,
/// printing and dropping the tree recurse once per level.
pub const MAX_DEPTH: usize = 200;

/// A parsed statement.
#[derive(Debug)]
pub struct Parsed {
    /// The query.
    pub query: sqlparser::ast::Query,
    /// `EXPLAIN PLAN FOR` was given: the plan is the answer.
    pub explain: bool,
    /// The names it could read a lookup by ([`lookup_names`]).
    pub lookup_names: BTreeSet<String>,
}

/// Stack the parser runs on: sqlparser's recursive descent takes tens of kilobytes a level
/// in a debug build, more than a 2 MiB thread holds at [`MAX_NESTING`] levels.
pub const PARSER_STACK: usize = 32 << 20;

/// Parses one SELECT statement (optionally `EXPLAIN PLAN FOR` one) and binds `parameters`,
/// its rewrites due within the default query timeout.
pub fn parse(text: &str, parameters: &[Parameter]) -> Result<Parsed, SqlError> {
    let timeout_ms = sluice_query::model::DEFAULT_TIMEOUT_MS;
    parse_within(text, parameters, Instant::now() + Duration::from_millis(timeout_ms), timeout_ms)
}

/// Parses one SELECT statement (optionally `EXPLAIN PLAN FOR` one), binds `parameters` and
/// rewrites it (`WITH` inlined), refusing a tree that grows past [`crate::measure::MAX_NODES`]
/// and stopping at `deadline` (the request's `timeout_ms`). CPU-bound: an async caller runs it
/// off its runtime.
pub fn parse_within(
    text: &str,
    parameters: &[Parameter],
    deadline: Instant,
    timeout_ms: u64,
) -> Result<Parsed, SqlError> {
    stacker::grow(PARSER_STACK, || parse_on_stack(text, parameters, deadline, timeout_ms))
}

fn parse_on_stack(
    text: &str,
    parameters: &[Parameter],
    deadline: Instant,
    timeout_ms: u64,
) -> Result<Parsed, SqlError> {
    let (explain, body, skipped) = strip_explain(text);
    check_size(body)?;
    let mut statements = Parser::new(&GenericDialect {})
        .with_recursion_limit(MAX_NESTING)
        .try_with_sql(body)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| parse_error(e, body, skipped))?;
    if statements.len() != 1 {
        return Err(SqlError::Parse {
            message: format!("expected one statement, found {}", statements.len()),
            line: None,
            column: None,
        });
    }
    let mut query = match statements.remove(0) {
        Statement::Query(q) => *q,
        other => {
            let kind = other.to_string().split_whitespace().next().unwrap_or("").to_ascii_uppercase();
            return Err(SqlError::unsupported(format!("{kind} statement (only SELECT queries are answered)")));
        }
    };
    bind(&mut query, parameters)?;
    let mut budget = Budget::new(&query, deadline, timeout_ms)?;
    crate::ctes::inline(&mut query, &mut budget)?;
    budget.measured(&query)?;
    let lookup_names = lookup_names(&query);
    Ok(Parsed { query, explain, lookup_names })
}

/// The names `query` could read a lookup by: its single-quoted strings (`LOOKUP(x, 'name')`)
/// and the tables of the `lookup` schema (`lookup.name`, `lookup."name"`); a lookup whose whole
/// name is not among them is not loaded for the query.
pub fn lookup_names(query: &sqlparser::ast::Query) -> BTreeSet<String> {
    use sqlparser::ast::Visit;
    struct Names(BTreeSet<String>);
    impl sqlparser::ast::Visitor for Names {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if let Expr::Value(ValueWithSpan { value: Value::SingleQuotedString(s), .. }) = expr {
                self.0.insert(s.clone());
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_relation(&mut self, relation: &sqlparser::ast::ObjectName) -> ControlFlow<()> {
            let parts: Vec<_> = relation.0.iter().filter_map(|p| p.as_ident()).collect();
            if let [schema, name] = parts.as_slice() {
                if schema.value.eq_ignore_ascii_case("lookup") {
                    self.0.insert(name.value.clone());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut names = Names(BTreeSet::new());
    let _ = query.visit(&mut names);
    names.0
}

/// Refuses, before building a syntax tree, a statement of more than [`MAX_TOKENS`] tokens or
/// with an expression deeper than [`MAX_DEPTH`] (operators in a row, plus parentheses).
fn check_size(text: &str) -> Result<(), SqlError> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = Tokenizer::new(&GenericDialect {}, text).tokenize().map_err(|e| SqlError::Parse {
        message: e.to_string(),
        line: Some(e.location.line),
        column: Some(e.location.column),
    })?;
    let words = tokens.iter().filter(|t| !matches!(t, Token::Whitespace(_))).count();
    if words > MAX_TOKENS {
        return Err(SqlError::Parse {
            message: format!("the statement has {words} tokens, more than {MAX_TOKENS}"),
            line: None,
            column: None,
        });
    }
    // Operators in a row at each level of parentheses open along the way.
    let (mut open, mut run) = (Vec::<usize>::new(), 0usize);
    for t in &tokens {
        match t {
            Token::LParen | Token::LBracket => {
                open.push(run + 1);
                run = 0;
            }
            Token::RParen | Token::RBracket => run = open.pop().unwrap_or(0),
            Token::Comma => run = 0,
            Token::Word(w)
                if matches!(
                    w.keyword,
                    Keyword::SELECT
                        | Keyword::FROM
                        | Keyword::WHERE
                        | Keyword::GROUP
                        | Keyword::HAVING
                        | Keyword::ORDER
                        | Keyword::LIMIT
                        | Keyword::OFFSET
                        | Keyword::WHEN
                        | Keyword::THEN
                        | Keyword::ELSE
                ) =>
            {
                run = 0
            }
            Token::Word(w) if matches!(w.keyword, Keyword::AND | Keyword::OR | Keyword::NOT | Keyword::IS) => run += 1,
            Token::Whitespace(_) | Token::Word(_) | Token::Number(..) | Token::SingleQuotedString(_) => {}
            Token::Placeholder(_) | Token::Period | Token::DoubleQuotedString(_) => {}
            _ => run += 1,
        }
        let depth = open.iter().sum::<usize>() + run;
        if depth > MAX_DEPTH || open.len() > MAX_NESTING {
            return Err(SqlError::Parse {
                message: format!(
                    "an expression nests deeper than {MAX_DEPTH} levels (operators in a row and parentheses)"
                ),
                line: None,
                column: None,
            });
        }
    }
    Ok(())
}

/// Splits off a leading `EXPLAIN PLAN FOR` (any case and spacing): the rest, and the text
/// before it (to place errors in the whole text).
fn strip_explain(text: &str) -> (bool, &str, &str) {
    let mut rest = text.trim_start();
    for word in ["EXPLAIN", "PLAN", "FOR"] {
        match rest.get(..word.len()) {
            Some(w) if w.eq_ignore_ascii_case(word) && rest[word.len()..].starts_with(char::is_whitespace) => {
                rest = rest[word.len()..].trim_start();
            }
            _ => return (false, text, ""),
        }
    }
    (true, rest, &text[..text.len() - rest.len()])
}

/// A parse error with its line and column in the whole text.
fn parse_error(e: ParserError, body: &str, skipped: &str) -> SqlError {
    let text = match &e {
        ParserError::TokenizerError(s) | ParserError::ParserError(s) => s.clone(),
        ParserError::RecursionLimitExceeded => {
            return SqlError::Parse {
                message: format!("the query nests deeper than {MAX_NESTING} levels"),
                line: None,
                column: None,
            }
        }
    };
    let position = text.rfind(" at Line: ").and_then(|at| {
        let tail = &text[at + " at Line: ".len()..];
        let (line, column) = tail.split_once(", Column: ")?;
        Some((at, line.trim().parse::<u64>().ok()?, column.trim().parse::<u64>().ok()?))
    });
    let (at, line, column) = match position {
        Some(p) => p,
        // The text ended early: the problem is just past its end.
        None if text.ends_with("found: EOF") => {
            let line = body.matches('\n').count() as u64 + 1;
            (text.len(), line, body.rsplit('\n').next().unwrap_or("").chars().count() as u64 + 1)
        }
        None => return SqlError::Parse { message: text, line: None, column: None },
    };
    // Lines of the EXPLAIN prefix come before the statement's own.
    let extra_lines = skipped.matches('\n').count() as u64;
    let column =
        if line == 1 { column + skipped.rsplit('\n').next().unwrap_or("").chars().count() as u64 } else { column };
    let line = line + extra_lines;
    let message = format!("{} at line {line}, column {column}", &text[..at]);
    SqlError::Parse { message, line: Some(line), column: Some(column) }
}

/// Replaces each `?` with the next parameter's value, as a literal of its type.
fn bind(query: &mut sqlparser::ast::Query, parameters: &[Parameter]) -> Result<(), SqlError> {
    let mut next = 0usize;
    let mut failure = None;
    let _ = visit_expressions_mut(query, |expr| {
        if let Expr::Value(ValueWithSpan { value: Value::Placeholder(p), .. }) = expr {
            if p != "?" {
                failure = Some(SqlError::unsupported(format!("placeholder {p:?} (use ?)")));
                return ControlFlow::Break(());
            }
            let Some(param) = parameters.get(next) else {
                failure = Some(SqlError::validation(format!(
                    "parameter {} has no value: the request gives {} parameters",
                    next + 1,
                    parameters.len()
                )));
                return ControlFlow::Break(());
            };
            match literal(param) {
                Ok(e) => *expr = e,
                Err(err) => {
                    failure = Some(SqlError::validation(format!("parameter {}: {err}", next + 1)));
                    return ControlFlow::Break(());
                }
            }
            next += 1;
        }
        ControlFlow::Continue(())
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A parameter whose value its type cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum MismatchedParameter {
    /// A value of another kind than its type.
    #[error("a {ty} value cannot be {value}")]
    Kind {
        /// The parameter's type, shortened.
        ty: String,
        /// Its value.
        value: serde_json::Value,
    },
    /// A TIMESTAMP given as a number that is not whole milliseconds.
    #[error("a TIMESTAMP number must be milliseconds")]
    TimestampMillis,
}

/// The SQL literal of a parameter.
fn literal(p: &Parameter) -> Result<Expr, MismatchedParameter> {
    let value = |v: Value| Expr::Value(ValueWithSpan { value: v, span: sqlparser::tokenizer::Span::empty() });
    let ty = p.ty.to_ascii_uppercase();
    Ok(match (&p.value, ty.as_str()) {
        (serde_json::Value::Null, _) => value(Value::Null),
        (serde_json::Value::String(s), "VARCHAR" | "CHAR") => value(Value::SingleQuotedString(s.clone())),
        (serde_json::Value::String(s), "TIMESTAMP" | "DATE") => Expr::TypedString(TypedString {
            data_type: if ty == "DATE" { DataType::Date } else { DataType::Timestamp(None, TimezoneInfo::None) },
            value: ValueWithSpan {
                value: Value::SingleQuotedString(s.clone()),
                span: sqlparser::tokenizer::Span::empty(),
            },
            uses_odbc_syntax: false,
        }),
        (
            serde_json::Value::Number(n),
            "BIGINT" | "INTEGER" | "SMALLINT" | "TINYINT" | "DOUBLE" | "FLOAT" | "REAL" | "DECIMAL",
        ) => value(Value::Number(n.to_string(), false)),
        (serde_json::Value::Number(n), "TIMESTAMP") => {
            let ms = n.as_i64().ok_or(MismatchedParameter::TimestampMillis)?;
            Expr::Function(millis_call(ms))
        }
        (serde_json::Value::Bool(b), "BOOLEAN") => value(Value::Boolean(*b)),
        (v, _) => return Err(MismatchedParameter::Kind { ty: crate::short(&p.ty).to_string(), value: v.clone() }),
    })
}

/// `MILLIS_TO_TIMESTAMP(ms)`.
fn millis_call(ms: i64) -> sqlparser::ast::Function {
    use sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident, ObjectName};
    sqlparser::ast::Function {
        name: ObjectName::from(vec![Ident::new("MILLIS_TO_TIMESTAMP")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(ValueWithSpan {
                value: Value::Number(ms.to_string(), false),
                span: sqlparser::tokenizer::Span::empty(),
            })))],
            clauses: vec![],
        }),
        within_group: vec![],
        filter: None,
        null_treatment: None,
        over: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_name_line_and_column_in_the_whole_text() {
        let Err(SqlError::Parse { message, line, column }) = parse("SELECT FROM t WHERE", &[]) else {
            panic!("parse error expected");
        };
        assert_eq!(line, Some(1), "{message}");
        assert!(column.is_some() && message.contains("line 1, column"), "{message}");
        let Err(SqlError::Parse { line, column, .. }) = parse("EXPLAIN PLAN FOR\nSELECT a FROM t WHERE", &[]) else {
            panic!("parse error expected");
        };
        assert_eq!((line, column), (Some(2), Some(22)));
    }

    #[test]
    fn explain_is_recognised_and_other_statements_refused() {
        assert!(parse("explain  plan for SELECT 1", &[]).expect("explain").explain);
        assert!(!parse("SELECT 1", &[]).expect("select").explain);
        let err = parse("DROP TABLE t", &[]).expect_err("drop");
        assert!(matches!(err, SqlError::Unsupported(_)) && err.to_string().contains("DROP"), "{err}");
        assert!(parse("SELECT 1; SELECT 2", &[]).is_err());
    }

    #[test]
    fn parameters_bind_in_order_and_must_all_be_given() {
        let p = |ty: &str, v: serde_json::Value| Parameter { ty: ty.into(), value: v };
        let parsed = parse(
            "SELECT a FROM t WHERE b = ? AND c > ? AND __time >= ?",
            &[p("VARCHAR", "x'y".into()), p("BIGINT", 5.into()), p("TIMESTAMP", "2015-09-12 00:00:00".into())],
        )
        .expect("bound");
        let text = parsed.query.to_string();
        assert!(text.contains("b = 'x''y' AND c > 5 AND __time >= TIMESTAMP '2015-09-12 00:00:00'"), "{text}");
        let err = parse("SELECT a FROM t WHERE b = ? AND c = ?", &[p("VARCHAR", "x".into())]).expect_err("missing");
        assert!(err.to_string().contains("parameter 2"), "{err}");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowing() {
        let n = 50_000;
        for deep in [
            format!("SELECT {}1{} FROM t", "(".repeat(n), ")".repeat(n)),
            format!("SELECT {} FROM t", vec!["a"; n].join(" + ")),
            format!("SELECT a FROM t WHERE {}", vec!["a = 1"; n].join(" OR ")),
            format!("SELECT {}1 FROM t", "- ".repeat(n)),
            format!("SELECT {}1{} FROM t", "ABS(".repeat(n), ")".repeat(n)),
            format!("SELECT a FROM t WHERE {}", vec!["NOT"; n].join(" ") + " a"),
        ] {
            let err = parse(&deep, &[]).expect_err("too deep");
            assert!(matches!(err, SqlError::Parse { .. }), "{err}");
            assert!(err.to_string().len() < 200, "{err}");
        }
        let fine = format!("SELECT {} FROM t", vec!["a"; MAX_DEPTH].join(" + "));
        assert!(parse(&fine, &[]).is_ok(), "a chain at the limit");
        let wide = format!("SELECT a FROM t WHERE a IN ({})", vec!["1"; 20_000].join(", "));
        assert!(parse(&wide, &[]).is_ok(), "long IN lists are flat");
    }
}

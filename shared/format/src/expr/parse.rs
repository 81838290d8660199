//! A precedence-climbing parser for Druid's expression syntax.

use super::{
    ArrayFunction, BinaryOp, CastType, Expr, ExprError, Function, JsonFunction, TextFunction, TimeFormat, TimeUnit,
    UnaryOp,
};
use crate::granularity::{to_local, Granularity};
use crate::lookup::KeyedTable;
use crate::time::{parse_iso_instant, Period};
use crate::value::Value;
use std::sync::Arc;

/// Deepest expression accepted: levels of parentheses, operators and function calls together.
/// Parsing, evaluating and dropping an expression recurse once per level, so this bounds the
/// stack any expression text can take.
pub const MAX_DEPTH: usize = 200;
/// Most values, operators and function calls in one expression: evaluating it costs each row
/// work in proportion.
pub const MAX_TERMS: usize = 500;

/// Parses `text`, resolving each field name to a row slot through `resolve`; `lookup()` finds
/// no lookup.
pub fn parse(text: &str, resolve: &mut dyn FnMut(&str) -> usize) -> Result<Expr, ExprError> {
    parse_with(text, resolve, &|_| None)
}

/// Parses `text`, resolving each field name to a row slot through `resolve` and each lookup
/// `lookup()` names through `lookups`.
pub fn parse_with(
    text: &str,
    resolve: &mut dyn FnMut(&str) -> usize,
    lookups: &dyn Fn(&str) -> Option<Arc<KeyedTable>>,
) -> Result<Expr, ExprError> {
    let tokens = tokenize(text).map_err(|reason| ExprError::new(text, reason.to_string()))?;
    let mut parser = Parser { tokens, pos: 0, resolve, lookups, text, nesting: 0 };
    let (expr, _) = parser.expr(0)?;
    let values = parser.tokens.iter().filter(|t| !matches!(t, Token::LParen | Token::RParen | Token::Comma)).count();
    if values > MAX_TERMS {
        return Err(parser.error(format!("more than {MAX_TERMS} values, operators and calls")));
    }
    if parser.pos != parser.tokens.len() {
        return Err(parser.error(format!("unexpected {:?}", parser.tokens[parser.pos])));
    }
    Ok(expr)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(Value),
    Str(String),
    Ident(String),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
}

const OPS: [&str; 16] = ["&&", "||", "<=", ">=", "==", "!=", "<", ">", "+", "-", "*", "/", "%", "^", "!", "="];

/// Why an expression's text could not be split into tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum TokenError {
    /// A number literal that does not parse.
    #[error("bad number {literal:?}")]
    Number {
        /// The literal.
        literal: String,
    },
    /// A character that starts no token.
    #[error("unexpected character {character:?} at {at}")]
    Character {
        /// The character.
        character: char,
        /// Its byte offset.
        at: usize,
    },
    /// A `\u` escape whose four hex digits are no character.
    #[error("bad unicode escape \\u{hex} at {at}")]
    UnicodeEscape {
        /// The digits read.
        hex: String,
        /// Byte offset of the quoted text.
        at: usize,
    },
    /// A quoted text that is not closed.
    #[error("unterminated {quote} quote at {at}")]
    Unterminated {
        /// The quote character.
        quote: char,
        /// Byte offset of the opening quote.
        at: usize,
    },
}

fn tokenize(text: &str) -> Result<Vec<Token>, TokenError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(Token::LParen);
            i += 1;
        } else if c == ')' {
            out.push(Token::RParen);
            i += 1;
        } else if c == ',' {
            out.push(Token::Comma);
            i += 1;
        } else if c == '\'' || c == '"' {
            let (s, next) = quoted(text, i, c)?;
            out.push(if c == '\'' { Token::Str(s) } else { Token::Ident(s) });
            i = next;
        } else if c.is_ascii_digit() || (c == '.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            let lit = &text[start..i];
            let value = match lit.parse::<i64>() {
                Ok(v) => Value::Long(v),
                Err(_) => {
                    Value::Double(lit.parse::<f64>().map_err(|_| TokenError::Number { literal: lit.to_string() })?)
                }
            };
            out.push(Token::Number(value));
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'$' | b'.')) {
                i += 1;
            }
            out.push(Token::Ident(text[start..i].to_string()));
        } else if let Some(op) = OPS.iter().find(|op| text[i..].starts_with(**op)) {
            out.push(Token::Op(op));
            i += op.len();
        } else {
            return Err(TokenError::Character { character: c, at: i });
        }
    }
    Ok(out)
}

fn quoted(text: &str, start: usize, quote: char) -> Result<(String, usize), TokenError> {
    let mut s = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((j, c)) = chars.next() {
        if c == '\\' {
            if let Some((_, esc)) = chars.next() {
                s.push(match esc {
                    'n' => '\n',
                    't' => '\t',
                    // Java's unicode escape, as Druid's clients write `/` (`\u002f`).
                    'u' => {
                        let hex: String = chars.by_ref().take(4).map(|(_, h)| h).collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or(TokenError::UnicodeEscape { hex, at: start })?
                    }
                    other => other,
                });
            }
        } else if c == quote {
            return Ok((s, start + 1 + j + 1));
        } else {
            s.push(c);
        }
    }
    Err(TokenError::Unterminated { quote, at: start })
}

struct Parser<'a> {
    tokens: Vec<Token>,
    pos: usize,
    resolve: &'a mut dyn FnMut(&str) -> usize,
    lookups: &'a dyn Fn(&str) -> Option<Arc<KeyedTable>>,
    text: &'a str,
    /// Calls of `expr` in progress.
    nesting: usize,
}

/// A parsed node and its depth (1 for a leaf).
type Node = (Expr, usize);

fn binary(op: &str) -> Option<(BinaryOp, u8, bool)> {
    // (operator, precedence, right-associative)
    Some(match op {
        "||" => (BinaryOp::Or, 1, false),
        "&&" => (BinaryOp::And, 2, false),
        "==" | "=" => (BinaryOp::Eq, 3, false),
        "!=" => (BinaryOp::Ne, 3, false),
        "<" => (BinaryOp::Lt, 4, false),
        "<=" => (BinaryOp::Le, 4, false),
        ">" => (BinaryOp::Gt, 4, false),
        ">=" => (BinaryOp::Ge, 4, false),
        "+" => (BinaryOp::Add, 5, false),
        "-" => (BinaryOp::Sub, 5, false),
        "*" => (BinaryOp::Mul, 6, false),
        "/" => (BinaryOp::Div, 6, false),
        "%" => (BinaryOp::Rem, 6, false),
        "^" => (BinaryOp::Pow, 8, true),
        _ => return None,
    })
}

impl Parser<'_> {
    fn error(&self, reason: String) -> ExprError {
        ExprError::new(self.text, reason)
    }

    /// The depth of a node over children `depth` deep, if within [`MAX_DEPTH`].
    fn node(&self, depth: usize) -> Result<usize, ExprError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        Ok(depth + 1)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    /// An expression of operators of at least `min_prec`, with its depth.
    fn expr(&mut self, min_prec: u8) -> Result<Node, ExprError> {
        // Parentheses recurse without adding a node: bound the recursion itself too.
        self.nesting = self.node(self.nesting)?;
        let out = self.operators(min_prec);
        self.nesting -= 1;
        out
    }

    fn operators(&mut self, min_prec: u8) -> Result<Node, ExprError> {
        let (mut lhs, mut depth) = self.unary()?;
        while let Some(Token::Op(op)) = self.tokens.get(self.pos) {
            let Some((bin, prec, right)) = binary(op) else {
                break;
            };
            if prec < min_prec {
                break;
            }
            self.pos += 1;
            let (rhs, rhs_depth) = self.expr(if right { prec } else { prec + 1 })?;
            depth = self.node(depth.max(rhs_depth))?;
            lhs = Expr::Binary(bin, Box::new(lhs), Box::new(rhs));
        }
        Ok((lhs, depth))
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        let op = match self.tokens.get(self.pos) {
            Some(Token::Op("-")) => UnaryOp::Neg,
            Some(Token::Op("!")) => UnaryOp::Not,
            _ => return self.primary(),
        };
        self.pos += 1;
        let (operand, depth) = self.expr(7)?;
        Ok((Expr::Unary(op, Box::new(operand)), self.node(depth)?))
    }

    fn primary(&mut self) -> Result<Node, ExprError> {
        match self.next() {
            Some(Token::Number(v)) => Ok((Expr::Literal(v), 1)),
            Some(Token::Str(s)) => Ok((Expr::Literal(Value::String(s)), 1)),
            Some(Token::LParen) => {
                let e = self.expr(0)?;
                match self.next() {
                    Some(Token::RParen) => Ok(e),
                    _ => Err(self.error("missing ')'".into())),
                }
            }
            Some(Token::Ident(name)) => {
                if self.tokens.get(self.pos) == Some(&Token::LParen) {
                    self.pos += 1;
                    let (args, depth) = self.args()?;
                    Ok((self.call(&name, args)?, self.node(depth)?))
                } else if name == "null" {
                    Ok((Expr::Literal(Value::Null), 1))
                } else if name == "__time" {
                    Ok((Expr::Time, 1))
                } else {
                    Ok((Expr::Field((self.resolve)(&name)), 1))
                }
            }
            other => Err(self.error(format!("expected a value, found {other:?}"))),
        }
    }

    /// A call's arguments, with the depth of the deepest.
    fn args(&mut self) -> Result<(Vec<Expr>, usize), ExprError> {
        let (mut args, mut depth) = (Vec::new(), 0);
        if self.tokens.get(self.pos) == Some(&Token::RParen) {
            self.pos += 1;
            return Ok((args, depth));
        }
        loop {
            let (arg, arg_depth) = self.expr(0)?;
            args.push(arg);
            depth = depth.max(arg_depth);
            match self.next() {
                Some(Token::Comma) => continue,
                Some(Token::RParen) => return Ok((args, depth)),
                _ => return Err(self.error("expected ',' or ')' in arguments".into())),
            }
        }
    }

    /// Argument `i` of `name`, which must be a string literal or null when given.
    fn literal(&self, name: &str, args: &[Expr], i: usize) -> Result<Option<String>, ExprError> {
        match args.get(i) {
            Some(Expr::Literal(Value::String(s))) => Ok(Some(s.clone())),
            Some(Expr::Literal(Value::Null)) | None => Ok(None),
            _ => Err(self.error(format!("{name} argument {} must be a string literal", i + 1))),
        }
    }

    /// The type argument `i` of `name` names (`'LONG'`, `'DOUBLE'`, `'STRING'`), if given.
    fn cast_type(&self, name: &str, args: &[Expr], i: usize) -> Result<Option<CastType>, ExprError> {
        Ok(match self.literal(name, args, i)?.map(|t| t.to_ascii_uppercase()).as_deref() {
            None => None,
            Some("LONG") => Some(CastType::Long),
            Some("DOUBLE") | Some("FLOAT") => Some(CastType::Double),
            Some("STRING") => Some(CastType::String),
            Some(other) => {
                return Err(self.error(format!("{name}: type {other:?} is not one of 'LONG', 'DOUBLE', 'STRING'")))
            }
        })
    }

    /// The time zone argument `i` of `name` names, if any other than UTC.
    fn zone(&self, name: &str, args: &[Expr], i: usize) -> Result<Option<Box<chrono_tz::Tz>>, ExprError> {
        match self.literal(name, args, i)? {
            Some(tz) if tz != "UTC" && tz != "Etc/UTC" && tz != "Z" => {
                let zone = super::time_zone(&tz).map_err(|e| self.error(format!("{name}: {e}")))?;
                Ok(Some(Box::new(zone)))
            }
            _ => Ok(None),
        }
    }

    fn call(&self, name: &str, args: Vec<Expr>) -> Result<Expr, ExprError> {
        let arity = |min: usize, max: usize| -> Result<(), ExprError> {
            if args.len() < min || args.len() > max {
                Err(self.error(format!("{name} takes {min}..{max} arguments, got {}", args.len())))
            } else {
                Ok(())
            }
        };
        let function = match name {
            "concat" => Function::Concat,
            "lower" => (arity(1, 1)?, Function::Lower).1,
            "upper" => (arity(1, 1)?, Function::Upper).1,
            "substring" => (arity(3, 3)?, Function::Substring).1,
            "strlen" => (arity(1, 1)?, Function::Strlen).1,
            "nvl" => (arity(2, 2)?, Function::Nvl).1,
            "if" => (arity(3, 3)?, Function::If).1,
            "abs" => (arity(1, 1)?, Function::Abs).1,
            "case_searched" => (arity(2, usize::MAX)?, Function::CaseSearched).1,
            "isnull" => (arity(1, 1)?, Function::IsNull).1,
            "notnull" => (arity(1, 1)?, Function::NotNull).1,
            "cast" => {
                arity(2, 2)?;
                match self.cast_type(name, &args, 1)? {
                    Some(t) => Function::Cast(t),
                    None => return Err(self.error("cast takes a type: 'LONG', 'DOUBLE' or 'STRING'".into())),
                }
            }
            "timestamp_format" => {
                arity(1, 3)?;
                let (pattern, zone) = (self.literal(name, &args, 1)?, self.literal(name, &args, 2)?);
                let format =
                    TimeFormat::new(pattern.as_deref(), zone.as_deref()).map_err(|e| self.error(e.to_string()))?;
                Function::TimestampFormat(Box::new(format))
            }
            "timestamp_extract" => {
                arity(2, 3)?;
                let unit = self.literal(name, &args, 1)?.ok_or_else(|| self.error(format!("{name} needs a unit")))?;
                let unit = TimeUnit::parse(&unit).map_err(|e| self.error(e.to_string()))?;
                let zone = self.literal(name, &args, 2)?.map(|z| super::time_zone(&z)).transpose();
                Function::TimestampExtract(unit, zone.map_err(|e| self.error(e.to_string()))?.map(Box::new))
            }
            "timestamp_floor" => {
                arity(2, 4)?;
                let literal = |i: usize| match args.get(i) {
                    Some(Expr::Literal(Value::String(s))) => Ok(Some(s.clone())),
                    Some(Expr::Literal(Value::Null)) | None => Ok(None),
                    _ => Err(self.error(format!("timestamp_floor argument {} must be a string literal", i + 1))),
                };
                let period = literal(1)?.ok_or_else(|| self.error("timestamp_floor needs a period".into()))?;
                let period = Period::parse(&period).map_err(|e| self.error(e.to_string()))?;
                let origin = match literal(2)? {
                    Some(o) => Some(parse_iso_instant(&o).map_err(|e| self.error(e.to_string()))?),
                    None => None,
                };
                let zone = self.zone(name, &args, 3)?;
                let week = Period { months: 0, millis: 7 * 86_400_000 };
                // Weeks start on Monday (1970-01-05), as Druid's do.
                // Without an origin, buckets start at the epoch on the zone's wall clock.
                let monday = 4 * 86_400_000;
                match (zone, origin) {
                    (Some(tz), origin) => {
                        let local = match origin {
                            Some(o) => to_local(*tz, o),
                            None if period == week => monday,
                            None => 0,
                        };
                        Function::TimestampFloor(Granularity::Zoned { period, origin: local, tz: *tz })
                    }
                    (None, origin) => {
                        let origin = origin.unwrap_or(if period == week { monday } else { 0 });
                        Function::TimestampFloor(Granularity::Period { period, origin })
                    }
                }
            }
            "timestamp_shift" => {
                arity(3, 4)?;
                let period =
                    self.literal(name, &args, 1)?.ok_or_else(|| self.error(format!("{name} needs a period")))?;
                let period = Period::parse(&period).map_err(|e| self.error(e.to_string()))?;
                Function::TimestampShift(period, self.zone(name, &args, 3)?)
            }
            "timestamp_parse" => {
                arity(1, 3)?;
                let format = match self.literal(name, &args, 1)? {
                    Some(pattern) => {
                        let format = crate::timestamp::TimestampFormat::parse(&pattern)
                            .map_err(|e| self.error(e.to_string()))?;
                        Some(Box::new(format))
                    }
                    None => None,
                };
                Function::TimestampParse(format, self.zone(name, &args, 2)?)
            }
            "subtract_months" => {
                arity(2, 3)?;
                Function::SubtractMonths(self.zone(name, &args, 2)?)
            }
            "array_length" => (arity(1, 1)?, Function::Array(ArrayFunction::Length)).1,
            "array_offset" => (arity(2, 2)?, Function::Array(ArrayFunction::Offset)).1,
            "array_ordinal" => (arity(2, 2)?, Function::Array(ArrayFunction::Ordinal)).1,
            "array_contains" => (arity(2, 2)?, Function::Array(ArrayFunction::Contains)).1,
            "array_overlap" => (arity(2, 2)?, Function::Array(ArrayFunction::Overlap)).1,
            "array_offset_of" => (arity(2, 2)?, Function::Array(ArrayFunction::OffsetOf)).1,
            "array_ordinal_of" => (arity(2, 2)?, Function::Array(ArrayFunction::OrdinalOf)).1,
            "array_append" => (arity(2, 2)?, Function::Array(ArrayFunction::Append)).1,
            "array_prepend" => (arity(2, 2)?, Function::Array(ArrayFunction::Prepend)).1,
            "array_concat" => (arity(2, 2)?, Function::Array(ArrayFunction::Concat)).1,
            "array_slice" => (arity(2, 3)?, Function::Array(ArrayFunction::Slice)).1,
            "array_to_string" => (arity(2, 2)?, Function::Array(ArrayFunction::ToString)).1,
            "string_to_array" => {
                arity(2, 2)?;
                let pattern =
                    self.literal(name, &args, 1)?.ok_or_else(|| self.error(format!("{name} needs a delimiter")))?;
                let delimiter = regex::RegexBuilder::new(&pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| self.error(format!("{name} delimiter: {e}")))?;
                Function::Array(ArrayFunction::FromString(super::Delimiter(delimiter)))
            }
            "lookup" => {
                arity(2, 3)?;
                let Some(lookup) = self.literal(name, &args, 1)? else {
                    return Err(self.error("lookup argument 2 must name a lookup".into()));
                };
                let table = (self.lookups)(&lookup)
                    .ok_or_else(|| self.error(format!("lookup {:?} not found", crate::text::excerpt(&lookup, 80))))?;
                Function::Lookup(table, self.literal(name, &args, 2)?)
            }
            "json_value" | "json_query" | "json_keys" => {
                arity(2, if name == "json_value" { 3 } else { 2 })?;
                let path = self.literal(name, &args, 1)?;
                let path = super::json_fns::path(path.as_deref()).map_err(|e| self.error(format!("{name}: {e}")))?;
                Function::Json(match name {
                    "json_value" => JsonFunction::Value(path, self.cast_type(name, &args, 2)?),
                    "json_query" => JsonFunction::Query(path),
                    _ => JsonFunction::Keys(path),
                })
            }
            "json_object" => {
                if args.len() % 2 != 0 || args.len() > 2 * 1024 {
                    return Err(self.error("json_object takes key, value pairs (at most 1024)".into()));
                }
                Function::Json(JsonFunction::Object)
            }
            "regexp_extract" | "regexp_like" => {
                arity(2, if name == "regexp_extract" { 3 } else { 2 })?;
                let pattern =
                    self.literal(name, &args, 1)?.ok_or_else(|| self.error(format!("{name} needs a pattern")))?;
                let re = regex::RegexBuilder::new(&pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| self.error(format!("{name} pattern: {e}")))?;
                let re = super::Delimiter(re);
                Function::Text(if name == "regexp_like" {
                    TextFunction::RegexpLike(re)
                } else {
                    let index = match args.get(2) {
                        None => 0,
                        Some(Expr::Literal(Value::Long(i))) if *i >= 0 => *i as usize,
                        Some(_) => return Err(self.error("regexp_extract index must be a non-negative integer".into())),
                    };
                    TextFunction::RegexpExtract(re, index)
                })
            }
            "contains_string" | "icontains_string" => {
                arity(2, 2)?;
                Function::Text(TextFunction::Contains { case_sensitive: name == "contains_string" })
            }
            "floor" => (arity(1, 1)?, Function::Text(TextFunction::Floor)).1,
            "ceil" => (arity(1, 1)?, Function::Text(TextFunction::Ceil)).1,
            "format" => {
                arity(1, 64)?;
                let pattern =
                    self.literal(name, &args, 0)?.ok_or_else(|| self.error("format needs a pattern".into()))?;
                Function::Text(TextFunction::Format(
                    super::string_fns::format_parts(&pattern).map_err(|e| self.error(e.to_string()))?,
                ))
            }
            "parse_json" | "try_parse_json" => (arity(1, 1)?, Function::Json(JsonFunction::Parse)).1,
            "to_json_string" => (arity(1, 1)?, Function::Json(JsonFunction::ToString)).1,
            "json_paths" => (arity(1, 1)?, Function::Json(JsonFunction::Paths)).1,
            other => return Err(self.error(format!("function {other:?} is not supported"))),
        };
        let args = match function {
            Function::TimestampFloor(_)
            | Function::Cast(_)
            | Function::TimestampFormat(_)
            | Function::TimestampParse(..)
            | Function::TimestampExtract(..) => args.into_iter().take(1).collect(),
            Function::TimestampShift(..) => {
                let mut args = args.into_iter();
                let (t, _, step) = (args.next(), args.next(), args.next());
                t.into_iter().chain(step).collect()
            }
            Function::SubtractMonths(_) => args.into_iter().take(2).collect(),
            Function::Text(TextFunction::RegexpExtract(..) | TextFunction::RegexpLike(_)) => {
                args.into_iter().take(1).collect()
            }
            Function::Lookup(..)
            | Function::Array(ArrayFunction::FromString(_))
            | Function::Json(JsonFunction::Value(..) | JsonFunction::Query(_) | JsonFunction::Keys(_)) => {
                args.into_iter().take(1).collect()
            }
            _ => args,
        };
        Ok(Expr::Call(function, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Expr, ExprError> {
        parse(text, &mut |_| 0)
    }

    #[test]
    fn token_errors_name_the_text_at_fault() {
        let e = |text: &str| tokenize(text).expect_err(text).to_string();
        assert_eq!(e("1.2.3"), "bad number \"1.2.3\"");
        assert_eq!(e("a # b"), "unexpected character '#' at 2");
        assert_eq!(e("'\\uzzzz'"), "bad unicode escape \\uzzzz at 0");
        assert_eq!(e("x + 'abc"), "unterminated ' quote at 4");
    }

    #[test]
    fn deep_nesting_is_refused_by_name_instead_of_overflowing_the_stack() {
        let n = 100_000;
        for text in [
            format!("{}1{}", "(".repeat(n), ")".repeat(n)),
            vec!["1"; n].join("+"),
            "-".repeat(n) + "1",
            "2^".repeat(n) + "1",
            format!("{}1{}", "abs(".repeat(n), ")".repeat(n)),
        ] {
            let err = parsed(&text).expect_err("too deep");
            assert!(err.reason.contains(&format!("nested deeper than {MAX_DEPTH} levels")), "{err}");
            let shown = err.to_string();
            assert!(shown.len() < 300 && shown.contains(&format!("({} bytes)", text.len())), "{shown}");
        }
    }

    #[test]
    fn expressions_as_deep_as_the_limit_parse_and_evaluate() {
        let longest = vec!["1"; MAX_DEPTH].join("+");
        let expr = parsed(&longest).expect("at the limit");
        // Through the `expr` module's export, as callers reach the evaluator.
        use crate::expr;
        assert_eq!(expr::eval(&expr, &[], 0), Value::Long(MAX_DEPTH as i64));
        let nested = format!("{}1{}", "(".repeat(MAX_DEPTH - 1), ")".repeat(MAX_DEPTH - 1));
        assert_eq!(parsed(&nested).expect("nested"), Expr::Literal(Value::Long(1)));
        assert!(parsed(&(longest + "+1")).is_err(), "one level over the limit");
    }

    #[test]
    fn wide_expressions_are_refused_past_the_term_limit() {
        let wide = |n: usize| format!("concat({})", vec!["page"; n].join(","));
        assert!(parsed(&wide(MAX_TERMS - 1)).is_ok(), "a call and its arguments at the limit");
        let err = parsed(&wide(20_000)).expect_err("too wide");
        assert!(err.reason.contains(&format!("more than {MAX_TERMS}")), "{err}");
    }
}

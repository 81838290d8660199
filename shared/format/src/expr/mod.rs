//! Druid expressions (the subset used by `transformSpec` and `expression` inputs): a parser
//! producing an AST whose field references are resolved to row slots once, and an evaluator.

mod arrays;
mod eval;
mod json_fns;
mod parse;
mod string_fns;
mod time_fns;

pub use eval::eval;
pub use json_fns::json_value;
pub use json_fns::PathArgError;
pub use parse::{parse, parse_with, MAX_DEPTH, MAX_TERMS};
pub use string_fns::FormatPatternError;
pub use time_fns::{time_zone, TimeFormat, TimeFormatError, TimeUnit, UnknownTimeUnit, UnknownTimeZone};

/// An error in an expression's text, naming the expression and what was expected.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("expression {expression:?}: {reason}")]
pub struct ExprError {
    /// The expression text, cut after [`QUOTED_CHARS`] characters.
    pub expression: String,
    /// What is wrong.
    pub reason: String,
}

/// Most characters of an expression an error quotes.
pub const QUOTED_CHARS: usize = 120;

impl ExprError {
    /// An error in `text`, quoting at most [`QUOTED_CHARS`] characters of it.
    pub fn new(text: &str, reason: impl Into<String>) -> Self {
        Self { expression: crate::text::excerpt(text, QUOTED_CHARS).into_owned(), reason: reason.into() }
    }
}

/// A parsed expression with field references resolved to slots of the row.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal value.
    Literal(crate::value::Value),
    /// A field of the input row, by slot.
    Field(usize),
    /// The row timestamp (`__time`), in milliseconds.
    Time,
    /// A unary operator.
    Unary(UnaryOp, Box<Expr>),
    /// A binary operator.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// A function call.
    Call(Function, Vec<Expr>),
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// Numeric negation.
    Neg,
    /// Logical not.
    Not,
}

/// Binary operators, lowest precedence last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    /// `^`
    Pow,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `+` (also concatenates strings)
    Add,
    /// `-`
    Sub,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `&&`
    And,
    /// `||`
    Or,
}

/// The functions Sluice implements.
#[derive(Debug, Clone, PartialEq)]
pub enum Function {
    /// `concat(a, b, ...)`: null if any argument is null.
    Concat,
    /// `lower(s)`
    Lower,
    /// `upper(s)`
    Upper,
    /// `substring(s, index, length)`: 0-based; length -1 means to the end.
    Substring,
    /// `strlen(s)`
    Strlen,
    /// `timestamp_floor(t, period[, origin[, timezone]])` with the period parsed once.
    TimestampFloor(crate::granularity::Granularity),
    /// `nvl(a, b)`: `b` when `a` is null.
    Nvl,
    /// `if(predicate, then, else)`
    If,
    /// `case_searched(p1, v1, ..., [else])`
    CaseSearched,
    /// `abs(x)`
    Abs,
    /// `cast(x, 'LONG' | 'DOUBLE' | 'STRING')`: null when `x` does not read as the type.
    Cast(CastType),
    /// `timestamp_format(t[, pattern[, timezone]])`: ISO 8601 by default.
    TimestampFormat(Box<TimeFormat>),
    /// `timestamp_extract(t, unit[, timezone])`.
    TimestampExtract(TimeUnit, Option<Box<chrono_tz::Tz>>),
    /// `isnull(x)`: 1 when `x` is null, else 0.
    IsNull,
    /// `notnull(x)`: 1 when `x` is not null, else 0.
    NotNull,
    /// `timestamp_shift(t, period, step[, timezone])`: `t` moved by `step` periods (calendar
    /// months kept, days clamped as Joda does), on the zone's wall clock when one is given.
    TimestampShift(crate::time::Period, Option<Box<chrono_tz::Tz>>),
    /// `timestamp_parse(s[, pattern[, timezone]])`: ISO 8601 (or SQL's `yyyy-MM-dd HH:mm:ss`)
    /// by default, else a Joda pattern; a text without an offset is read on the zone's wall
    /// clock when one is given; null when `s` does not parse.
    TimestampParse(Option<Box<crate::timestamp::TimestampFormat>>, Option<Box<chrono_tz::Tz>>),
    /// `subtract_months(a, b[, timezone])`: whole calendar months from `b` to `a` (on the
    /// zone's wall clock when one is given).
    SubtractMonths(Option<Box<chrono_tz::Tz>>),
    /// `lookup(x, 'name'[, 'replaceMissingValueWith'])`: the lookup's value for `x`, else the
    /// replacement or null; the lookup is resolved when the expression is parsed.
    Lookup(std::sync::Arc<crate::lookup::KeyedTable>, Option<String>),
    /// An array function over multi-value strings (`array_length`, `array_contains`, ...).
    Array(ArrayFunction),
    /// A JSON function over nested values (`json_value`, `json_query`, ...).
    Json(JsonFunction),
    /// A pattern, search, rounding or formatting function (`regexp_extract`, `format`, ...).
    Text(TextFunction),
}

/// Druid's pattern, search, rounding and formatting functions.
#[derive(Debug, Clone, PartialEq)]
pub enum TextFunction {
    /// `regexp_extract(s, pattern[, index])`: the group `index` (default 0) of the first match.
    RegexpExtract(Delimiter, usize),
    /// `regexp_like(s, pattern)`: 1 when the pattern matches anywhere.
    RegexpLike(Delimiter),
    /// `contains_string(s, t)` and `icontains_string(s, t)`.
    Contains {
        /// Case counts (`contains_string`).
        case_sensitive: bool,
    },
    /// `floor(x)`
    Floor,
    /// `ceil(x)`
    Ceil,
    /// `format(pattern, args...)`, the pattern read once.
    Format(Vec<string_fns::FormatPart>),
}

/// Druid's JSON functions; paths are parsed when the expression is.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonFunction {
    /// `json_value(x, path[, type])`: the literal at the path as a string (or as `type`), null
    /// for objects, arrays and absent paths.
    Value(crate::json_path::JsonPath, Option<CastType>),
    /// `json_query(x, path)`: the document at the path.
    Query(crate::json_path::JsonPath),
    /// `json_object(key, value, ...)`
    Object,
    /// `parse_json(s)` and `try_parse_json(s)`: the document a string holds, null when it
    /// holds none.
    Parse,
    /// `to_json_string(x)`: the JSON text of a value.
    ToString,
    /// `json_keys(x, path)`: the keys of the object at the path.
    Keys(crate::json_path::JsonPath),
    /// `json_paths(x)`: the literal paths of a document.
    Paths,
}

/// Druid's array functions, over multi-value string values (SQL's `MV_*`).
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayFunction {
    /// `array_length(a)`
    Length,
    /// `array_offset(a, i)`: 0-based, null out of range.
    Offset,
    /// `array_ordinal(a, i)`: 1-based, null out of range.
    Ordinal,
    /// `array_contains(a, x)`: 1 when `a` holds `x` (every element of `x` when a list).
    Contains,
    /// `array_overlap(a, b)`: 1 when they share an element.
    Overlap,
    /// `array_offset_of(a, x)`: 0-based index of `x`, else null.
    OffsetOf,
    /// `array_ordinal_of(a, x)`: 1-based index of `x`, else null.
    OrdinalOf,
    /// `array_append(a, x)`
    Append,
    /// `array_prepend(x, a)`
    Prepend,
    /// `array_concat(a, b)`
    Concat,
    /// `array_slice(a, start[, end])`: 0-based, end exclusive; null past the bounds.
    Slice,
    /// `array_to_string(a, separator)`
    ToString,
    /// `string_to_array(s, delimiter)`: split on a regular expression, compiled once.
    FromString(Delimiter),
}

/// A regular expression splitting strings, compared by its pattern.
#[derive(Debug, Clone)]
pub struct Delimiter(pub regex::Regex);

impl PartialEq for Delimiter {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

/// The types `cast` converts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastType {
    /// A 64-bit integer (doubles truncated).
    Long,
    /// A 64-bit float.
    Double,
    /// A string.
    String,
}

impl CastType {
    /// `v` converted: null when it does not read as the type.
    pub fn apply(self, v: crate::value::Value) -> crate::value::Value {
        use crate::value::Value;
        let out = match self {
            CastType::Long => match &v {
                // A numeric string with a fraction reads as its truncation, as Druid's cast does.
                Value::String(s) => v
                    .as_long()
                    .or_else(|| s.trim().parse::<f64>().ok().filter(|d| d.is_finite()).map(|d| d as i64))
                    .map(Value::Long),
                _ => v.as_long().map(Value::Long),
            },
            CastType::Double => v.as_double().map(Value::Double),
            CastType::String => v.as_str().map(|s| Value::String(s.into_owned())),
        };
        out.unwrap_or(Value::Null)
    }
}

/// Parses `text` with fields named by `names` (in slot order) and evaluates it over `row` at
/// `time`.
pub fn evaluate(
    text: &str,
    names: &[&str],
    row: &[crate::value::Value],
    time: i64,
) -> Result<crate::value::Value, ExprError> {
    let e = parse(text, &mut |field| names.iter().position(|n| *n == field).unwrap_or(names.len()))?;
    Ok(eval(&e, row, time))
}

//! Druid filters (`selector`, `equals`, `in`, `bound`, `range`, `like`, `regex`, `search`,
//! `interval`, `columnComparison`, `null`, `true`, `false`, `and`, `or`, `not`, `expression`)
//! as JSON, and their evaluation on a row with SQL-compatible three-valued logic: a comparison
//! with null is unknown, never true. An `extractionFn` is read by queries, which turn it into a
//! virtual column; a filter still holding one does not compile.

use crate::expr::{self, Expr, ExprError};
use crate::value::Value;
use regex::Regex;
use serde::{Deserialize, Serialize};

/// A filter as written in a spec's `transformSpec` or a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Filter {
    /// `dimension` equals `value` (compared as strings); a null `value` matches nulls.
    #[serde(rename_all = "camelCase")]
    Selector {
        /// Column name.
        dimension: String,
        /// Value to match; null matches null.
        #[serde(default, deserialize_with = "text_or_number")]
        value: Option<String>,
        /// The extraction function applied to the column first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extraction_fn: Option<serde_json::Value>,
    },
    /// `column` equals `matchValue` of `matchValueType`.
    #[serde(rename_all = "camelCase")]
    Equals {
        /// Column name.
        column: String,
        /// `STRING`, `LONG`, `DOUBLE` or `FLOAT`.
        match_value_type: String,
        /// Value to match.
        match_value: serde_json::Value,
    },
    /// `dimension` is one of `values`.
    #[serde(rename_all = "camelCase")]
    In {
        /// Column name.
        dimension: String,
        /// Values to match (null matches null).
        #[serde(deserialize_with = "texts_or_numbers")]
        values: Vec<Option<String>>,
        /// The extraction function applied to the column first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extraction_fn: Option<serde_json::Value>,
    },
    /// `dimension` lies between `lower` and `upper` in `ordering`.
    #[serde(rename_all = "camelCase")]
    Bound {
        /// Column name.
        dimension: String,
        /// Lower bound, if any.
        #[serde(default, deserialize_with = "text_or_number")]
        lower: Option<String>,
        /// Upper bound, if any.
        #[serde(default, deserialize_with = "text_or_number")]
        upper: Option<String>,
        /// Excludes the lower bound.
        #[serde(default)]
        lower_strict: bool,
        /// Excludes the upper bound.
        #[serde(default)]
        upper_strict: bool,
        /// `lexicographic` (default) or `numeric`.
        ordering: Option<String>,
        /// The extraction function applied to the column first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extraction_fn: Option<serde_json::Value>,
    },
    /// `column` lies between typed bounds.
    #[serde(rename_all = "camelCase")]
    Range {
        /// Column name.
        column: String,
        /// `STRING`, `LONG`, `DOUBLE` or `FLOAT`.
        match_value_type: String,
        /// Lower bound, if any.
        lower: Option<serde_json::Value>,
        /// Upper bound, if any.
        upper: Option<serde_json::Value>,
        /// Excludes the lower bound.
        #[serde(default)]
        lower_open: bool,
        /// Excludes the upper bound.
        #[serde(default)]
        upper_open: bool,
    },
    /// SQL `LIKE` with `%` and `_`.
    #[serde(rename_all = "camelCase")]
    Like {
        /// Column name.
        dimension: String,
        /// The pattern.
        pattern: String,
        /// Escape character, if any.
        escape: Option<String>,
        /// The extraction function applied to the column first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extraction_fn: Option<serde_json::Value>,
    },
    /// A Java-style regular expression found anywhere in the value.
    #[serde(rename_all = "camelCase")]
    Regex {
        /// Column name.
        dimension: String,
        /// The pattern.
        pattern: String,
        /// The extraction function applied to the column first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extraction_fn: Option<serde_json::Value>,
    },
    /// The value passes a search query spec (`contains`, `fragment`, ...).
    #[serde(rename_all = "camelCase")]
    Search {
        /// Column name.
        dimension: String,
        /// The test.
        query: crate::search::SearchSpec,
        /// The extraction function applied to the column first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extraction_fn: Option<serde_json::Value>,
    },
    /// The value (a time in milliseconds, usually `__time`) lies in one of the ISO 8601
    /// intervals.
    #[serde(rename_all = "camelCase")]
    Interval {
        /// Column name.
        dimension: String,
        /// The intervals.
        intervals: Vec<String>,
        /// The extraction function applied to the column first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        extraction_fn: Option<serde_json::Value>,
    },
    /// The columns' values are equal (as strings; null equals null).
    ColumnComparison {
        /// The columns, as dimension specs (names or `{"type": "default", "dimension"}`).
        dimensions: Vec<serde_json::Value>,
    },
    /// `column` is null.
    Null {
        /// Column name.
        column: String,
    },
    /// Matches every row.
    True,
    /// Matches no row.
    False,
    /// All of `fields` match.
    And {
        /// The operands.
        fields: Vec<Filter>,
    },
    /// Any of `fields` matches.
    Or {
        /// The operands.
        fields: Vec<Filter>,
    },
    /// `field` does not match (unknown stays unknown).
    Not {
        /// The operand.
        field: Box<Filter>,
    },
    /// A Druid expression read as a boolean.
    Expression {
        /// The expression text.
        expression: String,
    },
}

/// An error compiling a filter, naming the filter part at fault.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// An invalid regular expression or LIKE pattern.
    #[error("filter on {column:?}: invalid pattern {pattern:?}: {reason}")]
    Pattern {
        /// Column name.
        column: String,
        /// The pattern.
        pattern: String,
        /// Why it is invalid.
        reason: String,
    },
    /// An unknown match value type.
    #[error("filter on {column:?}: matchValueType {kind:?} is not one of STRING, LONG, DOUBLE, FLOAT")]
    MatchType {
        /// Column name.
        column: String,
        /// The type given.
        kind: String,
    },
    /// A bad expression.
    #[error(transparent)]
    Expr(#[from] ExprError),
    /// A filter part that is read elsewhere or not at all, named.
    #[error("filter: {0}")]
    Unsupported(String),
}

/// A filter with columns resolved to row slots and patterns compiled, ready to evaluate.
#[derive(Debug, Clone)]
pub enum RowFilter {
    /// Constant result.
    Const(bool),
    /// String membership (`selector`, `in`, string `equals`); `None` in the set matches null.
    InSet(usize, Vec<Option<String>>),
    /// Numeric equality.
    NumEq(usize, f64),
    /// Bounds compared as strings.
    StrRange(usize, Option<(String, bool)>, Option<(String, bool)>),
    /// Bounds compared as numbers.
    NumRange(usize, Option<(f64, bool)>, Option<(f64, bool)>),
    /// Regular expression (also LIKE).
    Regex(usize, Regex),
    /// A search query spec.
    Search(usize, crate::search::Search),
    /// The slots' values are equal as strings (null equals null).
    Same(Vec<usize>),
    /// Null check.
    IsNull(usize),
    /// Conjunction.
    And(Vec<RowFilter>),
    /// Disjunction.
    Or(Vec<RowFilter>),
    /// Negation.
    Not(Box<RowFilter>),
    /// Boolean expression.
    Expr(Expr),
}

/// Three-valued truth: `None` is unknown.
pub type Truth = Option<bool>;

impl Filter {
    /// The column a leaf filter tests (`None` for `and`, `or`, `not`, `true`, `false` and
    /// `expression`).
    pub fn column(&self) -> Option<&str> {
        match self {
            Filter::Selector { dimension, .. }
            | Filter::In { dimension, .. }
            | Filter::Bound { dimension, .. }
            | Filter::Like { dimension, .. }
            | Filter::Regex { dimension, .. }
            | Filter::Search { dimension, .. }
            | Filter::Interval { dimension, .. } => Some(dimension),
            Filter::Equals { column, .. } | Filter::Range { column, .. } | Filter::Null { column } => Some(column),
            _ => None,
        }
    }

    /// The filter's `extractionFn`, if it has one.
    pub fn extraction_fn(&self) -> Option<&serde_json::Value> {
        match self {
            Filter::Selector { extraction_fn, .. }
            | Filter::In { extraction_fn, .. }
            | Filter::Bound { extraction_fn, .. }
            | Filter::Like { extraction_fn, .. }
            | Filter::Regex { extraction_fn, .. }
            | Filter::Search { extraction_fn, .. }
            | Filter::Interval { extraction_fn, .. } => extraction_fn.as_ref(),
            _ => None,
        }
    }

    /// A leaf filter's column and `extractionFn`, to point the filter at a column holding the
    /// extracted values instead.
    pub fn extraction_mut(&mut self) -> Option<(&mut String, &mut Option<serde_json::Value>)> {
        match self {
            Filter::Selector { dimension, extraction_fn, .. }
            | Filter::In { dimension, extraction_fn, .. }
            | Filter::Bound { dimension, extraction_fn, .. }
            | Filter::Like { dimension, extraction_fn, .. }
            | Filter::Regex { dimension, extraction_fn, .. }
            | Filter::Search { dimension, extraction_fn, .. }
            | Filter::Interval { dimension, extraction_fn, .. } => Some((dimension, extraction_fn)),
            _ => None,
        }
    }

    /// Compiles the filter, resolving column names to row slots through `resolve`.
    pub fn compile(&self, resolve: &mut dyn FnMut(&str) -> usize) -> Result<RowFilter, FilterError> {
        if self.extraction_fn().is_some() {
            return Err(FilterError::Unsupported(
                "an extractionFn is only read in queries; use an expression filter here".into(),
            ));
        }
        Ok(match self {
            Filter::Selector { dimension, value, .. } => RowFilter::InSet(resolve(dimension), vec![value.clone()]),
            Filter::In { dimension, values, .. } => RowFilter::InSet(resolve(dimension), values.clone()),
            Filter::Equals { column, match_value_type, match_value } => {
                let slot = resolve(column);
                match numeric_type(column, match_value_type)? {
                    false => RowFilter::InSet(slot, vec![json_str(match_value)]),
                    true => match json_num(match_value) {
                        Some(v) => RowFilter::NumEq(slot, v),
                        None => RowFilter::Const(false),
                    },
                }
            }
            Filter::Bound { dimension, lower, upper, lower_strict, upper_strict, ordering, .. } => {
                let slot = resolve(dimension);
                if ordering.as_deref().is_some_and(|o| o.eq_ignore_ascii_case("numeric")) {
                    let num = |b: &Option<String>, strict: bool| {
                        b.as_ref().and_then(|s| s.parse::<f64>().ok()).map(|v| (v, strict))
                    };
                    RowFilter::NumRange(slot, num(lower, *lower_strict), num(upper, *upper_strict))
                } else {
                    let s = |b: &Option<String>, strict: bool| b.clone().map(|v| (v, strict));
                    RowFilter::StrRange(slot, s(lower, *lower_strict), s(upper, *upper_strict))
                }
            }
            Filter::Range { column, match_value_type, lower, upper, lower_open, upper_open } => {
                let slot = resolve(column);
                if numeric_type(column, match_value_type)? {
                    let num =
                        |b: &Option<serde_json::Value>, open: bool| b.as_ref().and_then(json_num).map(|v| (v, open));
                    RowFilter::NumRange(slot, num(lower, *lower_open), num(upper, *upper_open))
                } else {
                    let s =
                        |b: &Option<serde_json::Value>, open: bool| b.as_ref().and_then(json_str).map(|v| (v, open));
                    RowFilter::StrRange(slot, s(lower, *lower_open), s(upper, *upper_open))
                }
            }
            Filter::Like { dimension, pattern, escape, .. } => {
                let re = like_to_regex(pattern, escape.as_deref().and_then(|e| e.chars().next()));
                RowFilter::Regex(resolve(dimension), compile_regex(dimension, pattern, &re)?)
            }
            Filter::Regex { dimension, pattern, .. } => {
                RowFilter::Regex(resolve(dimension), compile_regex(dimension, pattern, pattern)?)
            }
            Filter::Search { dimension, query, .. } => {
                let search = query.compile().map_err(|reason| FilterError::Pattern {
                    column: crate::text::excerpt(dimension, QUOTED_CHARS).into_owned(),
                    pattern: String::new(),
                    reason: reason.to_string(),
                })?;
                RowFilter::Search(resolve(dimension), search)
            }
            Filter::Interval { dimension, intervals, .. } => {
                let slot = resolve(dimension);
                let mut ranges = Vec::with_capacity(intervals.len());
                for text in intervals.iter().take(MAX_INTERVALS) {
                    let i = crate::time::Interval::parse(text).map_err(|e| {
                        FilterError::Unsupported(format!("interval {:?}: {e}", crate::text::excerpt(text, 80)))
                    })?;
                    ranges.push(RowFilter::NumRange(slot, Some((i.start as f64, false)), Some((i.end as f64, true))));
                }
                if intervals.len() > MAX_INTERVALS {
                    return Err(FilterError::Unsupported(format!("more than {MAX_INTERVALS} intervals")));
                }
                RowFilter::Or(ranges)
            }
            Filter::ColumnComparison { dimensions } => {
                let mut slots = Vec::with_capacity(dimensions.len());
                for d in dimensions {
                    let name = match d {
                        serde_json::Value::String(s) => s.as_str(),
                        serde_json::Value::Object(o)
                            if o.get("type").is_none_or(|t| t == "default") && o.get("extractionFn").is_none() =>
                        {
                            o.get("dimension").and_then(|v| v.as_str()).ok_or_else(|| {
                                FilterError::Unsupported(
                                    "columnComparison: a dimension spec needs \"dimension\"".into(),
                                )
                            })?
                        }
                        _ => {
                            return Err(FilterError::Unsupported(
                                "columnComparison compares default dimension specs only".into(),
                            ))
                        }
                    };
                    slots.push(resolve(name));
                }
                RowFilter::Same(slots)
            }
            Filter::Null { column } => RowFilter::IsNull(resolve(column)),
            Filter::True => RowFilter::Const(true),
            Filter::False => RowFilter::Const(false),
            Filter::And { fields } => {
                RowFilter::And(fields.iter().map(|f| f.compile(resolve)).collect::<Result<_, _>>()?)
            }
            Filter::Or { fields } => {
                RowFilter::Or(fields.iter().map(|f| f.compile(resolve)).collect::<Result<_, _>>()?)
            }
            Filter::Not { field } => RowFilter::Not(Box::new(field.compile(resolve)?)),
            Filter::Expression { expression } => RowFilter::Expr(expr::parse(expression, resolve)?),
        })
    }
}

/// Most intervals an `interval` filter lists.
pub const MAX_INTERVALS: usize = 10_000;

/// A bound or value given as a string or a number (as Druid's clients write both).
fn text_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(json_str(&serde_json::Value::deserialize(d)?))
}

fn texts_or_numbers<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Option<String>>, D::Error> {
    Ok(Vec::<serde_json::Value>::deserialize(d)?.iter().map(json_str).collect())
}

fn numeric_type(column: &str, kind: &str) -> Result<bool, FilterError> {
    match kind.to_ascii_uppercase().as_str() {
        "STRING" => Ok(false),
        "LONG" | "DOUBLE" | "FLOAT" => Ok(true),
        _ => Err(FilterError::MatchType { column: column.to_string(), kind: kind.to_string() }),
    }
}

fn json_str(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn json_num(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Most characters of a pattern, and of the reason it is refused, an error quotes.
const QUOTED_CHARS: usize = 200;

/// Longest `regex` or `like` pattern accepted, in characters.
pub const MAX_PATTERN_CHARS: usize = crate::search::MAX_PATTERN_CHARS;
/// Largest compiled regular expression, in bytes: matching costs at most time proportional to
/// this times the text's length.
const MAX_COMPILED_BYTES: usize = 1 << 20;

fn compile_regex(column: &str, pattern: &str, re: &str) -> Result<Regex, FilterError> {
    let cut = |text: &str| crate::text::excerpt(text, QUOTED_CHARS).into_owned();
    let refused = |reason: String| FilterError::Pattern { column: cut(column), pattern: cut(pattern), reason };
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(refused(format!("longer than {MAX_PATTERN_CHARS} characters")));
    }
    regex::RegexBuilder::new(re).size_limit(MAX_COMPILED_BYTES).build().map_err(|e| refused(cut(&e.to_string())))
}

/// Translates a SQL LIKE pattern into an anchored regular expression.
pub fn like_to_regex(pattern: &str, escape: Option<char>) -> String {
    let mut out = String::from("(?s)^");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            if let Some(next) = chars.next() {
                out.push_str(&regex::escape(&next.to_string()));
            }
        } else if c == '%' {
            // Runs of `%` match what one does; one `.*` keeps the expression small.
            if !out.ends_with(".*") {
                out.push_str(".*");
            }
        } else if c == '_' {
            out.push('.');
        } else {
            out.push_str(&regex::escape(&c.to_string()));
        }
    }
    out.push('$');
    out
}

impl RowFilter {
    /// Returns true when the row matches (unknown counts as no match).
    pub fn matches(&self, row: &[Value], time: i64) -> bool {
        self.truth(row, time) == Some(true)
    }

    /// The filter's three-valued truth on a row: `None` when unknown (a comparison with null).
    pub fn truth(&self, row: &[Value], time: i64) -> Truth {
        let field = |slot: &usize| row.get(*slot).unwrap_or(&Value::Null);
        match self {
            RowFilter::Const(b) => Some(*b),
            RowFilter::InSet(slot, set) => any_value(field(slot), |v| match v {
                // A null only matches a set that holds null; otherwise it is unknown.
                None => set.iter().any(Option::is_none).then_some(true),
                Some(v) => {
                    let s = v.as_str();
                    Some(set.iter().flatten().any(|m| Some(m.as_str()) == s.as_deref()))
                }
            }),
            RowFilter::NumEq(slot, target) => any_value(field(slot), |v| v.map(|v| v.as_double() == Some(*target))),
            RowFilter::StrRange(slot, lo, hi) => any_value(field(slot), |v| {
                let s = v?.as_str()?.into_owned();
                Some(in_range(
                    s.as_str(),
                    lo.as_ref().map(|(b, x)| (b.as_str(), *x)),
                    hi.as_ref().map(|(b, x)| (b.as_str(), *x)),
                ))
            }),
            RowFilter::NumRange(slot, lo, hi) => any_value(field(slot), |v| {
                let x = v?.as_double()?;
                Some(in_range(&x, lo.as_ref().map(|(b, s)| (b, *s)), hi.as_ref().map(|(b, s)| (b, *s))))
            }),
            RowFilter::Regex(slot, re) => any_value(field(slot), |v| Some(re.is_match(&v?.as_str()?))),
            RowFilter::Search(slot, s) => any_value(field(slot), |v| Some(s.matches(&v?.as_str()?))),
            RowFilter::Same(slots) => {
                let text = |s: &usize| field(s).as_str().map(|t| t.into_owned());
                let first = slots.first().map(text);
                Some(slots.iter().all(|s| Some(text(s)) == first))
            }
            RowFilter::IsNull(slot) => Some(field(slot).is_null()),
            RowFilter::And(parts) => {
                let mut out = Some(true);
                for p in parts {
                    match p.truth(row, time) {
                        Some(false) => return Some(false),
                        None => out = None,
                        Some(true) => {}
                    }
                }
                out
            }
            RowFilter::Or(parts) => {
                let mut out = Some(false);
                for p in parts {
                    match p.truth(row, time) {
                        Some(true) => return Some(true),
                        None => out = None,
                        Some(false) => {}
                    }
                }
                out
            }
            RowFilter::Not(inner) => inner.truth(row, time).map(|b| !b),
            RowFilter::Expr(e) => {
                let v = expr::eval(e, row, time);
                (!v.is_null()).then(|| v.is_truthy())
            }
        }
    }
}

fn in_range<T: PartialOrd + ?Sized>(x: &T, lo: Option<(&T, bool)>, hi: Option<(&T, bool)>) -> bool {
    let lo_ok = lo.is_none_or(|(b, strict)| if strict { x > b } else { x >= b });
    let hi_ok = hi.is_none_or(|(b, strict)| if strict { x < b } else { x <= b });
    lo_ok && hi_ok
}

/// Applies `test` to each value of a (possibly multi-value) field; the field matches when any
/// value matches. A null or empty field is tested once as `None`.
fn any_value(v: &Value, test: impl Fn(Option<&Value>) -> Truth) -> Truth {
    match v {
        Value::Array(items) if !items.is_empty() => {
            let mut out = Some(false);
            for item in items {
                match test((!item.is_null()).then_some(item)) {
                    Some(true) => return Some(true),
                    None => out = None,
                    Some(false) => {}
                }
            }
            out
        }
        v if v.is_null() => test(None),
        v => test(Some(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str, value: Value) -> bool {
        let filter: Filter = serde_json::from_str(json).expect("filter json");
        let compiled = filter.compile(&mut |_| 0).expect("compile");
        compiled.matches(&[value], 0)
    }

    #[test]
    fn matches_like_druid() {
        let s = |v: &str| Value::String(v.to_string());
        assert!(check(r#"{"type":"selector","dimension":"d","value":"a"}"#, s("a")));
        assert!(!check(r#"{"type":"selector","dimension":"d","value":"a"}"#, Value::Null));
        assert!(check(r#"{"type":"selector","dimension":"d","value":null}"#, Value::Null));
        assert!(check(r#"{"type":"in","dimension":"d","values":["x","a"]}"#, Value::Array(vec![s("q"), s("a")])));
        assert!(check(r#"{"type":"equals","column":"d","matchValueType":"LONG","matchValue":5}"#, Value::Long(5)));
        assert!(!check(
            r#"{"type":"bound","dimension":"d","lower":"10","upper":"9","ordering":"lexicographic"}"#,
            Value::Null
        ));
        assert!(check(
            r#"{"type":"bound","dimension":"d","lower":"2","upper":"10","ordering":"numeric"}"#,
            Value::Long(9)
        ));
        assert!(!check(
            r#"{"type":"bound","dimension":"d","lower":"2","upper":"10","upperStrict":true,"ordering":"numeric"}"#,
            Value::Long(10)
        ));
        assert!(check(
            r#"{"type":"range","column":"d","matchValueType":"DOUBLE","lower":1.5,"lowerOpen":true}"#,
            Value::Double(1.6)
        ));
        assert!(check(r#"{"type":"like","dimension":"d","pattern":"Wiki%"}"#, s("Wikipedia")));
        assert!(!check(r#"{"type":"like","dimension":"d","pattern":"W_ki"}"#, s("Wikipedia")));
        assert!(check(r#"{"type":"regex","dimension":"d","pattern":"^#en"}"#, s("#en.wikipedia")));
        assert!(check(r#"{"type":"null","column":"d"}"#, Value::Array(vec![])));
        assert!(check(r#"{"type":"expression","expression":"d > 3"}"#, Value::Long(4)));
    }

    #[test]
    fn not_of_unknown_is_not_a_match() {
        let not_a = r#"{"type":"not","field":{"type":"selector","dimension":"d","value":"a"}}"#;
        assert!(!check(not_a, Value::Null), "SQL-compatible: NOT (null = 'a') is unknown");
        assert!(check(not_a, Value::String("b".into())));
        let or = r#"{"type":"or","fields":[{"type":"selector","dimension":"d","value":"a"},{"type":"true"}]}"#;
        assert!(check(or, Value::Null));
    }

    #[test]
    fn rejects_bad_patterns_naming_the_column() {
        let f: Filter = serde_json::from_str(r#"{"type":"regex","dimension":"page","pattern":"(["}"#).expect("json");
        let err = f.compile(&mut |_| 0).expect_err("bad regex");
        assert!(err.to_string().contains("page"), "{err}");
    }
}

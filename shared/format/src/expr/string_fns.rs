//! Druid's pattern, search, rounding and formatting functions: `regexp_extract`,
//! `regexp_like`, `contains_string`, `icontains_string`, `floor`, `ceil` and `format` (Java's
//! `String.format` for `%s`, `%d` and `%%`). Patterns and format strings are literals, read
//! once when the expression is parsed.

use super::TextFunction;
use crate::value::Value;

/// `f` over its evaluated arguments.
pub fn eval(f: &TextFunction, args: &[Value]) -> Value {
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    match f {
        TextFunction::RegexpExtract(re, index) => {
            let Some(s) = arg(0).as_str() else { return Value::Null };
            re.0.captures(&s).and_then(|c| c.get(*index)).map_or(Value::Null, |m| Value::String(m.as_str().to_string()))
        }
        TextFunction::RegexpLike(re) => match arg(0).as_str() {
            Some(s) => Value::Long(i64::from(re.0.is_match(&s))),
            None => Value::Null,
        },
        TextFunction::Contains { case_sensitive } => match (arg(0).as_str(), arg(1).as_str()) {
            (Some(s), Some(n)) if *case_sensitive => Value::Long(i64::from(s.contains(n.as_ref()))),
            (Some(s), Some(n)) => Value::Long(i64::from(s.to_lowercase().contains(&n.to_lowercase()))),
            _ => Value::Null,
        },
        TextFunction::Floor | TextFunction::Ceil => match arg(0) {
            Value::Long(x) => Value::Long(*x),
            v => match v.as_double() {
                Some(x) if *f == TextFunction::Floor => Value::Double(x.floor()),
                Some(x) => Value::Double(x.ceil()),
                None => Value::Null,
            },
        },
        TextFunction::Format(parts) => {
            let mut out = String::new();
            let mut next = 1;
            for part in parts {
                match part {
                    FormatPart::Text(t) => out.push_str(t),
                    FormatPart::Value => {
                        out.push_str(&arg(next).as_str().unwrap_or("null".into()));
                        next += 1;
                    }
                    FormatPart::Integer => {
                        match arg(next).as_long() {
                            Some(n) => out.push_str(&n.to_string()),
                            None => out.push_str("null"),
                        }
                        next += 1;
                    }
                }
                if out.len() > crate::value::MAX_VALUE_BYTES {
                    return Value::Null;
                }
            }
            Value::String(out)
        }
    }
}

/// A piece of a `format` pattern.
#[derive(Debug, Clone, PartialEq)]
pub enum FormatPart {
    /// Literal text.
    Text(String),
    /// `%s`: the next argument as text.
    Value,
    /// `%d`: the next argument as an integer.
    Integer,
}

/// Why a `format` pattern could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatPatternError {
    /// A conversion other than `%s`, `%d` and `%%`.
    #[error("format conversion %{conversion} is not supported: use %s, %d or %%")]
    Conversion {
        /// The character after `%`.
        conversion: char,
    },
    /// A `%` at the end of the pattern.
    #[error("format pattern ends with %")]
    TrailingPercent,
}

/// Reads a `format` pattern: `%s`, `%d` and `%%`; any other conversion is refused by name.
pub fn format_parts(pattern: &str) -> Result<Vec<FormatPart>, FormatPatternError> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => text.push('%'),
            Some(k @ ('s' | 'd')) => {
                if !text.is_empty() {
                    parts.push(FormatPart::Text(std::mem::take(&mut text)));
                }
                parts.push(if k == 's' { FormatPart::Value } else { FormatPart::Integer });
            }
            Some(other) => return Err(FormatPatternError::Conversion { conversion: other }),
            None => return Err(FormatPatternError::TrailingPercent),
        }
    }
    if !text.is_empty() {
        parts.push(FormatPart::Text(text));
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::super::evaluate;
    use crate::value::Value;

    #[test]
    fn pattern_and_format_functions_answer_as_druids() {
        let row = [Value::String("#en.wikipedia".into())];
        let run = |text: &str| evaluate(text, &["x"], &row, 0).expect(text);
        assert_eq!(run("regexp_extract(x, '#([a-z]+)\\\\.', 1)"), Value::String("en".into()));
        assert_eq!(run("regexp_extract(x, '^#')"), Value::String("#".into()));
        assert_eq!(run("regexp_extract(x, 'zz', 1)"), Value::Null);
        assert_eq!(run("regexp_like(x, 'wiki')"), Value::Long(1));
        assert_eq!(run("icontains_string(x, 'EN.')"), Value::Long(1));
        assert_eq!(run("contains_string(x, 'EN.')"), Value::Long(0));
        assert_eq!(run("floor(7.5)"), Value::Double(7.0));
        assert_eq!(run("ceil(-7.5)"), Value::Double(-7.0));
        assert_eq!(run("format('ns:%s (%d%%)', x, 42)"), Value::String("ns:#en.wikipedia (42%)".into()));
        assert!(evaluate("format('%x', 1)", &["x"], &row, 0).is_err());
        assert!(evaluate("regexp_like(x, '(')", &["x"], &row, 0).is_err());
    }
}

//! Druid's JSONPath subset for nested (`json`) columns: `$`, `.field`, `['field']` or
//! `["field"]`, and `[index]`. Paths are parsed, written in one normalized form, followed into
//! a document, and listed: the literal paths of a document are what a segment stores as
//! columns of their own.

use crate::value::format_double;
use serde_json::Value as Json;

/// Most literal paths of one `json` column a segment stores as columns: past them the column
/// is marked incomplete and every path is read from the documents.
pub const MAX_PATHS: usize = 1024;

/// Separates a `json` column's name from a path in the name of a path column.
pub const NESTED_SEPARATOR: char = '\u{1f}';

/// Longest path text accepted.
pub const MAX_PATH_BYTES: usize = 4096;

/// Why a JSON path could not be parsed, quoting it (cut).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPathError {
    /// Longer than [`MAX_PATH_BYTES`].
    #[error("a JSON path is at most {MAX_PATH_BYTES} bytes")]
    TooLong,
    /// Does not start with `$`.
    #[error("JSON path {path:?}: must start with $")]
    NoRoot {
        /// The path, cut.
        path: String,
    },
    /// A `.` with no field name after it.
    #[error("JSON path {path:?}: empty field name")]
    EmptyField {
        /// The path, cut.
        path: String,
    },
    /// A quote or bracket that is not closed.
    #[error("JSON path {path:?}: unclosed quote")]
    Unclosed {
        /// The path, cut.
        path: String,
    },
    /// A quoted field not followed by `]`.
    #[error("JSON path {path:?}: expected ] after a quoted field")]
    QuotedField {
        /// The path, cut.
        path: String,
    },
    /// Brackets that hold neither a quoted field nor an array index.
    #[error("JSON path {path:?}: expected an array index")]
    Index {
        /// The path, cut.
        path: String,
    },
    /// A step that starts with neither `.` nor `[`.
    #[error("JSON path {path:?}: expected . or [")]
    Step {
        /// The path, cut.
        path: String,
    },
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// An object's field.
    Field(String),
    /// An array's element (0-based).
    Index(usize),
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct JsonPath(pub Vec<Step>);

impl JsonPath {
    /// Parses Druid's JSONPath subset; `$.` alone reads as the root, as Druid's `JSON_KEYS`
    /// examples write it.
    pub fn parse(text: &str) -> Result<Self, JsonPathError> {
        if text.len() > MAX_PATH_BYTES {
            return Err(JsonPathError::TooLong);
        }
        let path = || crate::text::excerpt(text, 80).into_owned();
        let rest = text.strip_prefix('$').ok_or_else(|| JsonPathError::NoRoot { path: path() })?;
        if rest == "." {
            return Ok(JsonPath::default());
        }
        let bytes = rest.as_bytes();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'.' => {
                    let end = rest[i + 1..].find(['.', '[']).map_or(rest.len(), |e| i + 1 + e);
                    let name = &rest[i + 1..end];
                    if name.is_empty() {
                        return Err(JsonPathError::EmptyField { path: path() });
                    }
                    steps.push(Step::Field(name.to_string()));
                    i = end;
                }
                b'[' => {
                    let close = |quote: char, from: usize| {
                        rest[from..]
                            .find(quote)
                            .map(|e| from + e)
                            .ok_or_else(|| JsonPathError::Unclosed { path: path() })
                    };
                    match bytes.get(i + 1) {
                        Some(&q @ (b'\'' | b'"')) => {
                            let end = close(q as char, i + 2)?;
                            if bytes.get(end + 1) != Some(&b']') {
                                return Err(JsonPathError::QuotedField { path: path() });
                            }
                            steps.push(Step::Field(rest[i + 2..end].to_string()));
                            i = end + 2;
                        }
                        _ => {
                            let end = close(']', i + 1)?;
                            let index = rest[i + 1..end]
                                .trim()
                                .parse::<usize>()
                                .map_err(|_| JsonPathError::Index { path: path() })?;
                            steps.push(Step::Index(index));
                            i = end + 1;
                        }
                    }
                }
                _ => return Err(JsonPathError::Step { path: path() }),
            }
        }
        Ok(JsonPath(steps))
    }

    /// The normalized text: `$.field` for plain names, `$['a.b']` otherwise, `[i]` for
    /// elements.
    pub fn text(&self) -> String {
        let mut out = String::from("$");
        for step in &self.0 {
            match step {
                Step::Field(f) if !f.is_empty() && f.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                    out.push('.');
                    out.push_str(f);
                }
                Step::Field(f) => {
                    out.push_str("['");
                    out.push_str(f);
                    out.push_str("']");
                }
                Step::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }

    /// The value at the path in `doc`, if any.
    pub fn get<'a>(&self, doc: &'a Json) -> Option<&'a Json> {
        let mut at = doc;
        for step in &self.0 {
            at = match (step, at) {
                (Step::Field(f), Json::Object(o)) => o.get(f)?,
                (Step::Index(i), Json::Array(a)) => a.get(*i)?,
                _ => return None,
            };
        }
        Some(at)
    }
}

/// A literal (a string, number or boolean) as Druid reads it from a nested column: strings as
/// they are, numbers as Java prints them, booleans as `true`/`false`; none for null, objects
/// and arrays.
pub fn literal_text(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(match n.as_i64() {
            Some(i) => i.to_string(),
            None => format_double(n.as_f64()?),
        }),
        Json::Bool(b) => Some(b.to_string()),
        Json::Null | Json::Array(_) | Json::Object(_) => None,
    }
}

/// The literal paths of `doc` with their values, in document order: every field and element
/// that holds a literal. Stops (returning false) once `limit` paths are listed.
pub fn literal_paths<'a>(doc: &'a Json, limit: usize, out: &mut Vec<(JsonPath, &'a Json)>) -> bool {
    fn walk<'a>(v: &'a Json, at: &mut Vec<Step>, limit: usize, out: &mut Vec<(JsonPath, &'a Json)>) -> bool {
        match v {
            Json::Null => true,
            Json::Object(o) => o.iter().all(|(k, v)| {
                at.push(Step::Field(k.clone()));
                let ok = walk(v, at, limit, out);
                at.pop();
                ok
            }),
            Json::Array(a) => a.iter().enumerate().all(|(i, v)| {
                at.push(Step::Index(i));
                let ok = walk(v, at, limit, out);
                at.pop();
                ok
            }),
            literal => {
                if out.len() >= limit {
                    return false;
                }
                out.push((JsonPath(at.clone()), literal));
                true
            }
        }
    }
    walk(doc, &mut Vec::new(), limit, out)
}

/// The keys of the object at `path` (`JSON_KEYS`), or the indexes of an array as text.
pub fn keys(doc: &Json, path: &JsonPath) -> Option<Vec<String>> {
    match path.get(doc)? {
        Json::Object(o) => Some(o.keys().cloned().collect()),
        Json::Array(a) => Some((0..a.len()).map(|i| i.to_string()).collect()),
        _ => None,
    }
}

/// Every literal path of `doc` (`JSON_PATHS`), normalized, in document order.
pub fn paths(doc: &Json) -> Vec<String> {
    let mut out = Vec::new();
    literal_paths(doc, MAX_PATHS, &mut out);
    out.into_iter().map(|(p, _)| p.text()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_quote_the_path() {
        let e = |text: &str| JsonPath::parse(text).expect_err(text).to_string();
        assert_eq!(e("a.b"), "JSON path \"a.b\": must start with $");
        assert_eq!(e("$..a"), "JSON path \"$..a\": empty field name");
        assert_eq!(e("$['a"), "JSON path \"$['a\": unclosed quote");
        assert_eq!(e("$['a'x"), "JSON path \"$['a'x\": expected ] after a quoted field");
        assert_eq!(e("$[x]"), "JSON path \"$[x]\": expected an array index");
        assert_eq!(e("$x"), "JSON path \"$x\": expected . or [");
        assert_eq!(
            e(&format!("${}", ".a".repeat(MAX_PATH_BYTES))),
            format!("a JSON path is at most {MAX_PATH_BYTES} bytes")
        );
    }

    #[test]
    fn paths_parse_in_each_spelling_and_print_normalized() {
        for (text, normal) in [
            ("$", "$"),
            ("$.", "$"),
            ("$.a.b", "$.a.b"),
            ("$['a'].b", "$.a.b"),
            ("$[\"a.b\"][2].c", "$['a.b'][2].c"),
            ("$.phoneNumbers[0].number", "$.phoneNumbers[0].number"),
        ] {
            assert_eq!(JsonPath::parse(text).expect(text).text(), normal, "{text}");
        }
        for bad in ["", "a.b", "$..", "$[x]", "$['a'", "$.a[", "$x"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn literal_paths_walk_objects_and_arrays_and_stop_at_the_limit() {
        let doc = json!({"a": {"b": 1, "c": [true, {"d": "x"}]}, "e": null, "f": 2.5});
        let mut out = Vec::new();
        assert!(literal_paths(&doc, 10, &mut out));
        let listed: Vec<(String, Option<String>)> = out.iter().map(|(p, v)| (p.text(), literal_text(v))).collect();
        let expected = [("$.a.b", "1"), ("$.a.c[0]", "true"), ("$.a.c[1].d", "x"), ("$.f", "2.5")];
        assert_eq!(listed, expected.map(|(p, v)| (p.to_string(), Some(v.to_string()))));
        for (path, _) in &out {
            assert!(path.get(&doc).is_some(), "{path:?} leads back to its value");
        }
        let mut few = Vec::new();
        assert!(!literal_paths(&doc, 2, &mut few), "a third literal passes the limit");
        assert_eq!(few.len(), 2);
    }
}

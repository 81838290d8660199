//! `flattenSpec`: `root` and `path` fields over nested JSON, with the JSONPath subset
//! `$`, `.name`, `['name']`, `[index]` and `[*]`.

use crate::spec::input_format::FlattenSpec;

/// Why a `flattenSpec` did not compile, naming the field type or path at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlattenError {
    /// A field type other than `root` and `path`.
    #[error("flatten field type {kind:?} is not supported")]
    FieldType {
        /// The type given.
        kind: String,
    },
    /// A path that does not start with `$`.
    #[error("JSONPath {path:?}: must start with $")]
    NoRoot {
        /// The path.
        path: String,
    },
    /// A deep scan (`..`), which is not read.
    #[error("JSONPath {path:?}: deep scan (..) is not supported")]
    DeepScan {
        /// The path.
        path: String,
    },
    /// A `.` with no member name after it.
    #[error("JSONPath {path:?}: empty member name")]
    EmptyMember {
        /// The path.
        path: String,
    },
    /// A `[` without its `]`.
    #[error("JSONPath {path:?}: missing ]")]
    MissingBracket {
        /// The path.
        path: String,
    },
    /// Brackets holding neither an index, `*` nor a quoted name.
    #[error("JSONPath {path:?}: expected an index, '*' or a quoted name in []")]
    Bracket {
        /// The path.
        path: String,
    },
    /// A step that starts with neither `.` nor `[`.
    #[error("JSONPath {path:?}: expected . or [")]
    Step {
        /// The path.
        path: String,
    },
}

/// One step of a JSONPath.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// An object member.
    Key(String),
    /// An array element (negative counts from the end).
    Index(i64),
    /// Every array element.
    Wildcard,
}

/// A compiled flattening plan.
#[derive(Debug, Clone)]
pub struct Flattener {
    /// Take every top-level scalar (or list of scalars) field.
    pub discover: bool,
    /// Explicit fields: output name and path.
    pub fields: Vec<(String, Vec<Step>)>,
}

impl Flattener {
    /// Compiles a flatten spec; the error names the bad path.
    pub fn new(spec: &FlattenSpec) -> Result<Self, FlattenError> {
        let mut fields = Vec::new();
        for f in &spec.fields {
            let steps = match f.kind.as_str() {
                "root" => vec![Step::Key(f.expr.clone().unwrap_or_else(|| f.name.clone()))],
                "path" => parse_path(f.expr.as_deref().unwrap_or("$"))?,
                other => return Err(FlattenError::FieldType { kind: other.to_string() }),
            };
            fields.push((f.name.clone(), steps));
        }
        Ok(Self { discover: spec.use_field_discovery, fields })
    }

    /// Produces the flattened (name, value) pairs of a JSON object.
    pub fn flatten(&self, obj: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, serde_json::Value)> {
        let mut out = Vec::with_capacity(obj.len() + self.fields.len());
        if self.discover {
            for (k, v) in obj {
                let scalar_list = |v: &serde_json::Value| {
                    v.as_array().is_some_and(|a| a.iter().all(|x| !x.is_object() && !x.is_array()))
                };
                if !v.is_object() && (!v.is_array() || scalar_list(v)) && !self.fields.iter().any(|(n, _)| n == k) {
                    out.push((k.clone(), v.clone()));
                }
            }
        }
        let root = serde_json::Value::Object(obj.clone());
        for (name, steps) in &self.fields {
            out.push((name.clone(), select(&root, steps)));
        }
        out
    }
}

/// Evaluates a compiled path; missing members give null.
pub fn select(root: &serde_json::Value, steps: &[Step]) -> serde_json::Value {
    let mut current = vec![root];
    let mut wildcard = false;
    for step in steps {
        let mut next = Vec::new();
        for v in current {
            match step {
                Step::Key(k) => next.extend(v.get(k)),
                Step::Index(i) => {
                    if let Some(a) = v.as_array() {
                        let idx = if *i < 0 { a.len() as i64 + i } else { *i };
                        next.extend(usize::try_from(idx).ok().and_then(|i| a.get(i)));
                    }
                }
                Step::Wildcard => {
                    wildcard = true;
                    if let Some(a) = v.as_array() {
                        next.extend(a.iter());
                    }
                }
            }
        }
        current = next;
    }
    if wildcard {
        serde_json::Value::Array(current.into_iter().cloned().collect())
    } else {
        current.first().map(|v| (*v).clone()).unwrap_or(serde_json::Value::Null)
    }
}

/// Parses the JSONPath subset.
pub fn parse_path(path: &str) -> Result<Vec<Step>, FlattenError> {
    let text = || path.to_string();
    let rest = path.trim().strip_prefix('$').ok_or_else(|| FlattenError::NoRoot { path: text() })?;
    let mut steps = Vec::new();
    let chars: Vec<char> = rest.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                if chars.get(i + 1) == Some(&'.') {
                    return Err(FlattenError::DeepScan { path: text() });
                }
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && chars[end] != '.' && chars[end] != '[' {
                    end += 1;
                }
                let name: String = chars[start..end].iter().collect();
                if name.is_empty() {
                    return Err(FlattenError::EmptyMember { path: text() });
                }
                steps.push(if name == "*" { Step::Wildcard } else { Step::Key(name) });
                i = end;
            }
            '[' => {
                let close = chars[i..]
                    .iter()
                    .position(|&c| c == ']')
                    .ok_or_else(|| FlattenError::MissingBracket { path: text() })?
                    + i;
                let inner: String = chars[i + 1..close].iter().collect();
                let inner = inner.trim();
                if inner == "*" {
                    steps.push(Step::Wildcard);
                } else if let Some(q) = inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
                    steps.push(Step::Key(q.to_string()));
                } else if let Some(q) = inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    steps.push(Step::Key(q.to_string()));
                } else {
                    steps.push(Step::Index(inner.parse().map_err(|_| FlattenError::Bracket { path: text() })?));
                }
                i = close + 1;
            }
            _ => return Err(FlattenError::Step { path: text() }),
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::input_format::FlattenField;
    use serde_json::json;

    #[test]
    fn flattens_paths_and_roots() {
        let spec = FlattenSpec {
            use_field_discovery: true,
            fields: vec![
                FlattenField { kind: "path".into(), name: "city".into(), expr: Some("$.geo.city".into()) },
                FlattenField { kind: "path".into(), name: "first_tag".into(), expr: Some("$.tags[0]".into()) },
                FlattenField { kind: "path".into(), name: "names".into(), expr: Some("$.people[*]['name']".into()) },
                FlattenField { kind: "root".into(), name: "id".into(), expr: None },
                FlattenField { kind: "path".into(), name: "missing".into(), expr: Some("$.nope.deeper".into()) },
            ],
        };
        let f = Flattener::new(&spec).expect("flattener");
        let obj = json!({"id": 7, "geo": {"city": "Paris"}, "tags": ["a", "b"], "people": [{"name": "x"}, {"name": "y"}], "time": "t"});
        let out: std::collections::HashMap<_, _> = f.flatten(obj.as_object().expect("object")).into_iter().collect();
        assert_eq!(out["city"], json!("Paris"));
        assert_eq!(out["first_tag"], json!("a"));
        assert_eq!(out["names"], json!(["x", "y"]));
        assert_eq!(out["id"], json!(7));
        assert_eq!(out["tags"], json!(["a", "b"]), "discovered list of scalars");
        assert_eq!(out["missing"], json!(null));
        assert!(!out.contains_key("geo"), "nested objects are not discovered");
    }

    #[test]
    fn rejects_unsupported_paths() {
        assert!(parse_path("geo.city").is_err());
        assert!(parse_path("$..city").is_err());
        assert!(parse_path("$.a[x]").is_err());
        assert_eq!(parse_path("$.a[-1]"), Ok(vec![Step::Key("a".into()), Step::Index(-1)]));
    }
}

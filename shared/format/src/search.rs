//! Druid's search query specs, the test of a value that the `search` filter and the `search`
//! query share: `contains` (case-insensitive unless `caseSensitive`), `insensitive_contains`,
//! `fragment` (every one of `values`) and `regex`.

use serde::{Deserialize, Serialize};

/// Longest `regex` or `like` pattern (and search pattern) accepted, in characters.
pub const MAX_PATTERN_CHARS: usize = 10_000;

/// Why a search spec did not compile.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A pattern longer than [`MAX_PATTERN_CHARS`].
    #[error("search pattern longer than {MAX_PATTERN_CHARS} characters")]
    TooLong,
    /// A pattern that is not a regular expression, or too large compiled.
    #[error(transparent)]
    Regex(#[from] regex::Error),
}

/// A search query spec, as Druid writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SearchSpec {
    /// The value holds `value`.
    #[serde(rename_all = "camelCase")]
    Contains {
        /// What to find.
        value: String,
        /// Compare case as it is (default false).
        #[serde(default)]
        case_sensitive: bool,
    },
    /// The value holds `value`, whatever the case.
    InsensitiveContains {
        /// What to find.
        value: String,
    },
    /// The value holds every one of `values`.
    #[serde(rename_all = "camelCase")]
    Fragment {
        /// What to find.
        values: Vec<String>,
        /// Compare case as it is (default false).
        #[serde(default)]
        case_sensitive: bool,
    },
    /// The value matches a regular expression anywhere.
    Regex {
        /// The pattern.
        pattern: String,
    },
}

/// A compiled search: the needles (lowercased unless case counts) or a pattern.
#[derive(Debug, Clone)]
pub enum Search {
    /// Every needle is found.
    Contains {
        /// What to find.
        needles: Vec<String>,
        /// Case counts.
        case_sensitive: bool,
    },
    /// The pattern matches.
    Regex(regex::Regex),
}

impl SearchSpec {
    /// The spec compiled; a bad pattern is named.
    pub fn compile(&self) -> Result<Search, SearchError> {
        let contains = |needles: &[String], case_sensitive: bool| Search::Contains {
            needles: needles.iter().map(|n| if case_sensitive { n.clone() } else { n.to_lowercase() }).collect(),
            case_sensitive,
        };
        Ok(match self {
            SearchSpec::Contains { value, case_sensitive } => contains(std::slice::from_ref(value), *case_sensitive),
            SearchSpec::InsensitiveContains { value } => contains(std::slice::from_ref(value), false),
            SearchSpec::Fragment { values, case_sensitive } => contains(values, *case_sensitive),
            SearchSpec::Regex { pattern } => {
                if pattern.chars().count() > MAX_PATTERN_CHARS {
                    return Err(SearchError::TooLong);
                }
                let re = regex::RegexBuilder::new(pattern).size_limit(1 << 20).build()?;
                Search::Regex(re)
            }
        })
    }
}

impl Search {
    /// Whether `value` matches.
    pub fn matches(&self, value: &str) -> bool {
        match self {
            Search::Contains { needles, case_sensitive: true } => needles.iter().all(|n| value.contains(n.as_str())),
            Search::Contains { needles, case_sensitive: false } => {
                let lower = value.to_lowercase();
                needles.iter().all(|n| lower.contains(n.as_str()))
            }
            Search::Regex(re) => re.is_match(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_search_spec_matches_as_druid_documents() {
        let spec = |json: &str| serde_json::from_str::<SearchSpec>(json).expect(json).compile().expect("compiles");
        let contains = spec(r#"{"type": "contains", "value": "Ari"}"#);
        assert!(contains.matches("Paris") && contains.matches("ARIEGE"));
        assert!(!spec(r#"{"type": "contains", "value": "Ari", "caseSensitive": true}"#).matches("Paris"));
        assert!(spec(r#"{"type": "insensitive_contains", "value": "PAR"}"#).matches("paris"));
        let fragment = spec(r#"{"type": "fragment", "values": ["pa", "IS"]}"#);
        assert!(fragment.matches("Paris") && !fragment.matches("Pa"));
        assert!(spec(r#"{"type": "regex", "pattern": "^P.r"}"#).matches("Paris"));
        assert!(serde_json::from_str::<SearchSpec>(r#"{"type": "regex", "pattern": "("}"#)
            .expect("reads")
            .compile()
            .is_err());
    }
}

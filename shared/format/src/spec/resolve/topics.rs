//! Which topics a spec reads: its `topic`, or every topic whose whole name matches its
//! `topicPattern` (Druid's multi-topic ingestion: `clicks|impressions`, `metrics-.*`; as in
//! Druid, `my-metrics-12` does not match `metrics-.*`). A pattern skips internal topics (names
//! starting with `__`: `__consumer_offsets`, `__transaction_state`, `__amazon_msk_canary`), as
//! Kafka's clients do (`exclude.internal.topics`), unless it names one exactly.

use super::names::topic_name_problem;
use regex::{Regex, RegexBuilder};

/// Longest `topicPattern`, in characters.
pub const MAX_PATTERN_CHARS: usize = 1_000;
/// Most memory a compiled pattern may take: a hostile pattern is refused, not compiled.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The topics a datasource reads.
#[derive(Debug, Clone, PartialEq)]
pub enum TopicSource {
    /// One topic.
    Topic(String),
    /// Every topic matching a pattern.
    Pattern(TopicPattern),
}

impl TopicSource {
    /// The topic, or the pattern's text.
    pub fn text(&self) -> &str {
        match self {
            TopicSource::Topic(t) => t,
            TopicSource::Pattern(p) => p.text(),
        }
    }

    /// Whether it is a pattern.
    pub fn is_pattern(&self) -> bool {
        matches!(self, TopicSource::Pattern(_))
    }

    /// Whether `topic` is read.
    pub fn reads(&self, topic: &str) -> bool {
        match self {
            TopicSource::Topic(t) => t == topic,
            TopicSource::Pattern(p) => p.matches(topic),
        }
    }
}

/// Why a `topicPattern` was refused; the message follows the field's name.
#[derive(Debug, thiserror::Error)]
pub enum TopicPatternError {
    /// An empty pattern.
    #[error("must not be empty")]
    Empty,
    /// A pattern longer than [`MAX_PATTERN_CHARS`].
    #[error("is longer than {MAX_PATTERN_CHARS} characters")]
    TooLong,
    /// Not a regular expression, or too large once compiled.
    #[error("is not a regular expression: {0}")]
    Regex(#[source] regex::Error),
}

/// A `topicPattern`, compiled to match whole topic names.
#[derive(Debug, Clone)]
pub struct TopicPattern {
    text: String,
    regex: Regex,
}

impl PartialEq for TopicPattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl TopicPattern {
    /// Compiles `text`; refused when empty, longer than [`MAX_PATTERN_CHARS`], not a regular
    /// expression, or too large once compiled.
    pub fn new(text: &str) -> Result<Self, TopicPatternError> {
        if text.is_empty() {
            return Err(TopicPatternError::Empty);
        }
        if text.chars().count() > MAX_PATTERN_CHARS {
            return Err(TopicPatternError::TooLong);
        }
        let regex = RegexBuilder::new(&format!("^(?:{text})$"))
            .size_limit(PATTERN_SIZE_LIMIT)
            .nest_limit(64)
            .build()
            .map_err(TopicPatternError::Regex)?;
        Ok(Self { text: text.into(), regex })
    }

    /// The pattern as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether `topic` is a valid topic name matched in full; an internal topic (see
    /// [`is_internal_topic`]) only when the pattern, or one of its `|` alternatives, is its
    /// name (as written, or with its dots escaped).
    pub fn matches(&self, topic: &str) -> bool {
        topic_name_problem(topic).is_none()
            && self.regex.is_match(topic)
            && (!is_internal_topic(topic) || self.names(topic))
    }

    fn names(&self, topic: &str) -> bool {
        let escaped = regex::escape(topic);
        self.text.split('|').any(|alternative| alternative == topic || alternative == escaped)
    }
}

/// Whether `topic` is a Kafka internal or platform topic, which a pattern reads only when it
/// names it: a name starting with `__` (the brokers' `__consumer_offsets` and
/// `__transaction_state`, Amazon MSK's `__amazon_msk_canary`, Confluent's `__confluent...`).
pub fn is_internal_topic(topic: &str) -> bool {
    topic.starts_with("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_matches_whole_topic_names_only() {
        let p = TopicPattern::new("metrics-.*").expect("pattern");
        assert!(p.matches("metrics-1") && p.matches("metrics-"));
        assert!(!p.matches("my-metrics-12"), "a partial match is not a match, as in Druid");
        let either = TopicPattern::new("clicks|impressions").expect("pattern");
        assert!(either.matches("clicks") && either.matches("impressions") && !either.matches("clicksx"));
        assert!(!TopicPattern::new(".*").expect("pattern").matches("white space"), "not a topic name");
    }

    #[test]
    fn internal_topics_are_matched_only_when_named() {
        let topics = [
            "__consumer_offsets",
            "__transaction_state",
            "__amazon_msk_canary",
            "__amazon_msk_canary_state",
            "_schemas",
            "events",
            "x__y",
        ];
        let matched = |pattern: &str| {
            let p = TopicPattern::new(pattern).expect("pattern");
            topics.iter().filter(|t| p.matches(t)).copied().collect::<Vec<_>>()
        };
        assert_eq!(matched(".*"), ["_schemas", "events", "x__y"], "as exclude.internal.topics does");
        assert_eq!(matched("_.*"), ["_schemas"]);
        assert_eq!(matched("__.*"), Vec::<&str>::new(), "a prefix does not name a topic");
        assert_eq!(matched("__amazon_msk_canary.*"), Vec::<&str>::new());
        assert_eq!(matched("__amazon_msk_canary"), ["__amazon_msk_canary"], "named exactly");
        assert_eq!(matched("events|__consumer_offsets"), ["__consumer_offsets", "events"], "named in an alternative");
        assert_eq!(matched("__transaction_state|.*"), ["__transaction_state", "_schemas", "events", "x__y"]);
        let dotted = TopicPattern::new(r"__a\.b").expect("escaped");
        assert!(dotted.matches("__a.b") && !dotted.matches("__aXb"), "escaped dots name the topic");
        assert!(TopicSource::Pattern(TopicPattern::new(".*").expect("pattern")).reads("events"));
        assert!(!TopicSource::Pattern(TopicPattern::new(".*").expect("pattern")).reads("__consumer_offsets"));
        assert!(TopicSource::Topic("__consumer_offsets".into()).reads("__consumer_offsets"), "a topic is named");
    }

    #[test]
    fn hostile_patterns_are_refused() {
        assert!(TopicPattern::new("").is_err());
        assert!(TopicPattern::new("(").expect_err("syntax").to_string().contains("not a regular expression"));
        assert!(TopicPattern::new(&"a".repeat(MAX_PATTERN_CHARS + 1)).is_err());
        let huge = "(a{1000}){1000}";
        assert!(TopicPattern::new(huge).is_err(), "compiled size is bounded");
    }
}

//! The names a spec gives: the datasource under Druid's rules for ids, the topic under Kafka's.
//! Both end up in S3 keys, DynamoDB keys and URLs, so a name that breaks them is refused at
//! submit rather than found later in a cleanup or a merge.

/// Longest datasource name, in bytes: the width of Druid's `dataSource` metadata columns.
pub const MAX_DATASOURCE_BYTES: usize = 255;
/// Longest Kafka topic name.
pub const MAX_TOPIC_CHARS: usize = 249;

/// Why `name` is not a datasource name, following Druid's `IdUtils.validateId`: not empty, no
/// leading `.`, no `/`, no whitespace but the space, no control characters; and at most
/// [`MAX_DATASOURCE_BYTES`] bytes.
pub fn datasource_name_problem(name: &str) -> Option<String> {
    if name.trim().is_empty() {
        return Some("must not be empty".into());
    }
    if name.len() > MAX_DATASOURCE_BYTES {
        return Some(format!("is {} bytes long, over the limit of {MAX_DATASOURCE_BYTES}", name.len()));
    }
    if name.starts_with('.') {
        return Some("must not start with '.'".into());
    }
    if name.contains('/') {
        return Some("must not contain '/'".into());
    }
    name.chars().enumerate().find_map(|(i, c)| {
        (c.is_control() || (c.is_whitespace() && c != ' '))
            .then(|| format!("must not contain character U+{:04X} (at position {i}): no whitespace but the space, no control characters", c as u32))
    })
}

/// Why `topic` is not a Kafka topic name: 1 to 249 characters of `[a-zA-Z0-9._-]`, not `.` or
/// `..`.
pub fn topic_name_problem(topic: &str) -> Option<String> {
    if topic.is_empty() {
        return Some("missing: name the Kafka topic".into());
    }
    if topic.chars().count() > MAX_TOPIC_CHARS {
        return Some(format!("is longer than Kafka's limit of {MAX_TOPIC_CHARS} characters"));
    }
    if topic == "." || topic == ".." {
        return Some("must not be '.' or '..'".into());
    }
    topic
        .chars()
        .position(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .map(|i| format!("character {i} is not one of Kafka's: ASCII letters, digits, '.', '_' and '-'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datasource_names_follow_druids_rules() {
        for good in ["wikipedia", "my datasource", "a.b-c_d", "données", &"x".repeat(255)] {
            assert_eq!(datasource_name_problem(good), None, "{good}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("  ", "empty"),
            (".hidden", "'.'"),
            ("a/0000/000000000001", "'/'"),
            ("tab\there", "U+0009"),
            ("line\nbreak", "U+000A"),
            ("nul\0", "U+0000"),
            ("nbsp\u{a0}", "U+00A0"),
            (&"x".repeat(256), "256 bytes"),
        ] {
            let problem = datasource_name_problem(bad).unwrap_or_default();
            assert!(problem.contains(why), "{bad:?}: {problem:?}");
        }
    }

    #[test]
    fn topics_follow_kafkas_rules() {
        for good in ["wikipedia", "a.b_c-D9", &"t".repeat(249)] {
            assert_eq!(topic_name_problem(good), None, "{good}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "ünïcode", &"t".repeat(250)] {
            assert!(topic_name_problem(bad).is_some(), "{bad:?}");
        }
    }
}

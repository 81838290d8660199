//! Which items of a partition a range query reads: sort keys from one key (inclusive) to
//! another (exclusive), in order or reversed, at most so many. Sort keys compare as bytes
//! (UTF-8), as DynamoDB and SQLite's binary collation compare them, so time-ordered keys
//! (`seg#<sortable start>#...`) are read by time.

/// A range of sort keys: `from <= sk < to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkRange {
    /// The first sort key read (inclusive).
    pub from: String,
    /// The end of the range (exclusive).
    pub to: String,
    /// Newest (greatest) key first.
    pub descending: bool,
    /// At most this many items (all when `None`).
    pub limit: Option<usize>,
}

impl SkRange {
    /// The keys from `from` (inclusive) to `to` (exclusive), ascending, all of them.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Self {
        Self { from: from.into(), to: to.into(), descending: false, limit: None }
    }

    /// Every key that starts with `prefix` (every key, for an empty prefix).
    pub fn prefix(prefix: &str) -> Self {
        Self::new(prefix, prefix_end(prefix))
    }

    /// The same keys, greatest first.
    pub fn descending(mut self) -> Self {
        self.descending = true;
        self
    }

    /// The same keys, at most `limit` of them.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Whether `sk` is in the range (ignoring the limit).
    pub fn contains(&self, sk: &str) -> bool {
        self.from.as_str() <= sk && sk < self.to.as_str()
    }

    /// Whether no key can be in the range.
    pub fn is_empty(&self) -> bool {
        self.to <= self.from || self.limit == Some(0)
    }
}

/// The least key greater than every key that starts with `prefix`: its last character
/// incremented (UTF-8's byte order is the order of code points), dropped when it is the
/// greatest; a key past every other (`"\u{10FFFF}"`) for an empty prefix.
pub fn prefix_end(prefix: &str) -> String {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=0x10FFFF).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return chars.into_iter().collect();
        }
    }
    "\u{10FFFF}".repeat(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_holds_exactly_the_keys_with_the_prefix() {
        let r = SkRange::prefix("seg#");
        assert_eq!(r.to, "seg$");
        for (sk, inside) in [("seg#", true), ("seg#zzz", true), ("seg", false), ("seg$", false), ("sum#", false)] {
            assert_eq!(r.contains(sk), inside, "{sk}");
        }
        assert_eq!(prefix_end("a\u{D7FF}"), "a\u{E000}", "surrogates skipped");
        assert_eq!(prefix_end("a\u{10FFFF}"), "b");
        assert!(SkRange::prefix("").contains("anything"));
        assert!(SkRange::new("b", "a").is_empty() && SkRange::new("a", "b").limit(0).is_empty());
    }
}

//! Quoting text that came from outside (a query, a spec, a header) in an error: never more
//! than a bounded excerpt, so an error cannot echo a hostile input back whole.

use std::borrow::Cow;

/// `text` whole when it has at most `max_chars` characters, else its first `max_chars`
/// characters followed by `... (N bytes)`.
pub fn excerpt(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => Cow::Owned(format!("{}... ({} bytes)", &text[..end], text.len())),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::excerpt;

    #[test]
    fn long_text_is_cut_at_a_character_boundary_and_sized() {
        assert_eq!(excerpt("short", 5), "short");
        assert_eq!(excerpt("ééééé!", 3), "ééé... (11 bytes)");
        assert_eq!(excerpt(&"x".repeat(10_000), 4), "xxxx... (10000 bytes)");
    }
}

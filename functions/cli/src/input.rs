//! What a command reads: a file, or standard input for `-`.

use anyhow::{Context, Result};
use std::io::Read;
use std::path::Path;

/// The text of `path`, or of standard input when it is `-`.
pub fn read_text(path: &Path) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("read standard input")?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))
    }
}

/// The JSON of `path`, or of standard input when it is `-`.
pub fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = read_text(path)?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

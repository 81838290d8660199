//! `GET /status`: the answer every Druid service gives about itself (Druid's `StatusResource`):
//! the Druid version whose API the server speaks, its modules, and its memory. Druid's tools
//! ask it first: plywood (Turnilo's engine) reads `version` and refuses a server whose version
//! does not start with `major.minor.patch`.

use serde_json::{json, Value};

/// The Druid release whose API reference the routes are built to (the supervisor list's and
/// report's fields are Druid 34's); tools gate what they send on it.
pub const DRUID_VERSION: &str = "34.0.0";

/// Bytes in a MiB.
const MIB: i64 = 1024 * 1024;

/// Druid's `/status` answer: `version`, `modules` (this server, by name and version) and
/// `memory` (`maxMemory` the function's memory or the machine's, `usedMemory` this process's
/// resident set; `directMemory` -1, as Druid reports when it cannot tell).
pub fn answer() -> Value {
    let max = memory_limit().unwrap_or(-1);
    let used = resident().unwrap_or(-1);
    let free = if max >= 0 && used >= 0 { (max - used).max(0) } else { -1 };
    json!({
        "version": DRUID_VERSION,
        "modules": [{"name": "sluice", "artifact": "sluice", "version": env!("CARGO_PKG_VERSION")}],
        "memory": {
            "maxMemory": max,
            "totalMemory": max,
            "freeMemory": free,
            "usedMemory": used,
            "directMemory": -1,
        },
    })
}

/// The memory this process may use: the Lambda function's (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`,
/// MB), or the machine's (`/proc/meminfo`).
fn memory_limit() -> Option<i64> {
    if let Some(mb) = std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE").ok().and_then(|v| v.parse::<i64>().ok()) {
        return Some(mb.saturating_mul(MIB));
    }
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, "MemTotal:")
}

/// This process's resident set (`/proc/self/status`).
fn resident() -> Option<i64> {
    kib_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmRSS:")
}

/// Bytes of the `kB` figure on the line starting with `name`.
fn kib_field(text: &str, name: &str) -> Option<i64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: i64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kib_fields_are_read_in_bytes() {
        let text = "Name:\tsluice\nVmRSS:\t   2048 kB\nThreads:\t4\n";
        assert_eq!(kib_field(text, "VmRSS:"), Some(2048 * 1024));
        assert_eq!(kib_field(text, "VmSwap:"), None);
        assert_eq!(kib_field("VmRSS: lots kB", "VmRSS:"), None);
    }

    #[test]
    fn the_version_is_one_plywood_accepts() {
        let answer = answer();
        let version = answer["version"].as_str().unwrap_or_default();
        let parts: Vec<&str> = version.split('.').collect();
        assert_eq!(parts.len(), 3, "{version}");
        assert!(parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())), "{version}");
        assert_eq!(answer["modules"][0]["version"], env!("CARGO_PKG_VERSION"));
        let memory = &answer["memory"];
        for field in ["maxMemory", "totalMemory", "freeMemory", "usedMemory", "directMemory"] {
            assert!(memory[field].is_i64(), "{field}: {memory}");
        }
        if cfg!(target_os = "linux") {
            let (used, max) = (memory["usedMemory"].as_i64(), memory["maxMemory"].as_i64());
            assert!(used.is_some_and(|u| u > 0) && max >= used, "{memory}");
        }
    }
}

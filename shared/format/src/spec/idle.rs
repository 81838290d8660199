//! Druid's idle supervisors (`ioConfig.idleConfig`): a supervisor whose topics received no
//! record for `inactiveAfterMillis`, with every record read and published, is `IDLE`. It
//! invokes no task until records arrive, and the next pass after they do plans them.

use serde::{Deserialize, Serialize};

/// `idleConfig`, with Druid's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct IdleConfig {
    /// Whether the supervisor may go idle (default false).
    pub enabled: bool,
    /// How long without a new record, caught up, before it does (10 minutes).
    pub inactive_after_millis: u64,
}

impl Default for IdleConfig {
    fn default() -> Self {
        Self { enabled: false, inactive_after_millis: 600_000 }
    }
}

/// The longest `inactiveAfterMillis` accepted: 30 days.
pub const MAX_INACTIVE_AFTER_MILLIS: u64 = 30 * 86_400_000;

impl IdleConfig {
    /// Whether a supervisor active last at `active_ms` (a new record, a task not finished, or
    /// lag) is idle at `now_ms`.
    pub fn idle(&self, active_ms: i64, now_ms: i64) -> bool {
        self.enabled
            && now_ms.saturating_sub(active_ms) >= i64::try_from(self.inactive_after_millis).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_after_the_inactive_time_only_when_enabled() {
        let c: IdleConfig = serde_json::from_value(serde_json::json!({"enabled": true})).expect("reads");
        assert_eq!(c.inactive_after_millis, 600_000, "Druid's default");
        assert!(!c.idle(1_000, 600_999));
        assert!(c.idle(1_000, 601_000));
        let off = IdleConfig { enabled: false, ..c };
        assert!(!off.idle(0, i64::MAX));
    }
}

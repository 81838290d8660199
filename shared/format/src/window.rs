//! The message-time window of a task: rows before `lateMessageRejectionStartDateTime` or
//! `taskStart - lateMessageRejectionPeriod`, or after `taskStart + taskDuration +
//! earlyMessageRejectionPeriod`, are thrown away (counted, not errors), as in Druid.

use crate::spec::IoSettings;

/// Accepted row times: `[min, max]`, each bound optional (Druid's task `minimumMessageTime`
/// and `maximumMessageTime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct MessageWindow {
    /// Earliest accepted time (ms).
    #[serde(rename = "minimumMessageTime")]
    pub min: Option<i64>,
    /// Latest accepted time (ms).
    #[serde(rename = "maximumMessageTime")]
    pub max: Option<i64>,
}

impl MessageWindow {
    /// The window of a task that started at `task_start` (ms).
    pub fn new(io: &IoSettings, task_start: i64) -> Self {
        let late = io.late_message_rejection_period.map(|p| p.add_to(task_start, -1));
        let min = match (late, io.late_message_rejection_start) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let max = io.early_message_rejection_period.map(|p| p.add_to(io.task_duration.add_to(task_start, 1), 1));
        Self { min, max }
    }

    /// Returns true when a row at `time` is kept.
    pub fn accepts(&self, time: i64) -> bool {
        self.min.is_none_or(|m| time >= m) && self.max.is_none_or(|m| time <= m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::load_spec_value;
    use crate::time::parse_iso_instant;

    fn io(extra: serde_json::Value) -> IoSettings {
        let mut io = serde_json::json!({"topic": "t", "inputFormat": {"type": "json"}, "taskDuration": "PT1H", "consumerProperties": {"bootstrap.servers": "b"}});
        io.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        let spec = serde_json::json!({"type": "kafka", "spec": {"dataSchema": {"dataSource": "d", "timestampSpec": {"column": "t"}, "dimensionsSpec": {"dimensions": []}}, "ioConfig": io}});
        load_spec_value(spec).expect("spec").spec.io
    }

    #[test]
    fn rejects_late_and_early_rows_like_druid() {
        let start = parse_iso_instant("2024-01-01T12:00:00Z").expect("time");
        let w = MessageWindow::new(
            &io(serde_json::json!({"lateMessageRejectionPeriod": "PT10M", "earlyMessageRejectionPeriod": "PT5M"})),
            start,
        );
        let at = |s: &str| w.accepts(parse_iso_instant(s).expect("time"));
        assert!(!at("2024-01-01T11:49:59Z"));
        assert!(at("2024-01-01T11:50:00Z"));
        assert!(at("2024-01-01T13:05:00Z"), "task end + early period is still accepted");
        assert!(!at("2024-01-01T13:05:01Z"));
        let open = MessageWindow::new(&io(serde_json::json!({})), start);
        assert!(open.accepts(0) && open.accepts(i64::MAX / 2));
        let dated = MessageWindow::new(
            &io(serde_json::json!({"lateMessageRejectionStartDateTime": "2024-01-01T00:00:00Z"})),
            start,
        );
        assert!(!dated.accepts(parse_iso_instant("2023-12-31T23:59:59Z").expect("time")));
    }
}

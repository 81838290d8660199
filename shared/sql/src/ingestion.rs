//! The rows of `sys.supervisors` and `sys.tasks`, which a server that reads ingestion's
//! metadata gives (`Segments::supervisors`, `Segments::tasks`), in Druid's column order.

use serde_json::{json, Value};

/// One supervisor, as `sys.supervisors` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SupervisorRow {
    /// The supervisor's id (its datasource).
    pub id: String,
    /// Druid's basic state (`RUNNING`, `SUSPENDED`, `UNHEALTHY_SUPERVISOR`, ...).
    pub state: String,
    /// Druid's detailed state.
    pub detailed_state: String,
    /// Whether it is healthy.
    pub healthy: bool,
    /// The stream it reads (its topic, or its topic pattern).
    pub source: String,
    /// Whether it is suspended (or terminated).
    pub suspended: bool,
    /// Its spec as JSON text, secrets redacted.
    pub spec: String,
}

/// One task, as `sys.tasks` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    /// Druid's task id.
    pub id: String,
    /// Its group.
    pub group_id: String,
    /// Druid's task type.
    pub kind: String,
    /// Its datasource.
    pub datasource: String,
    /// When it was created, ISO 8601.
    pub created_time: String,
    /// `RUNNING`, `SUCCESS` or `FAILED`.
    pub status: String,
    /// `PENDING`, `RUNNING` or `NONE`.
    pub runner_status: String,
    /// Milliseconds it ran for (-1 while it runs).
    pub duration_ms: i64,
    /// Why it failed.
    pub error: Option<String>,
}

impl SupervisorRow {
    /// Its values in `sys.supervisors`' column order.
    pub fn values(&self) -> Vec<Value> {
        vec![
            json!(self.id),
            json!(self.state),
            json!(self.detailed_state),
            json!(i64::from(self.healthy)),
            json!("kafka"),
            json!(self.source),
            json!(i64::from(self.suspended)),
            json!(self.spec),
        ]
    }
}

impl TaskRow {
    /// Its values in `sys.tasks`' column order; a task has no host (Druid's unassigned
    /// location: no host, ports -1).
    pub fn values(&self) -> Vec<Value> {
        vec![
            json!(self.id),
            json!(self.group_id),
            json!(self.kind),
            json!(self.datasource),
            json!(self.created_time),
            json!(self.created_time),
            json!(self.status),
            json!(self.runner_status),
            json!(self.duration_ms),
            Value::Null,
            Value::Null,
            json!(-1),
            json!(-1),
            json!(self.error),
        ]
    }
}

//! The events the functions accept, parsed with the path of any field at fault.

use crate::error::FunctionError;
use serde::Deserialize;
use sluice_format::spec::batch::task_id_problem;
use sluice_pipeline::invoker::Job;
use sluice_pipeline::task::TaskId;

/// What the supervisor is invoked with: the template's EventBridge Scheduler input (its
/// `<aws.scheduler.*>` context attributes filled in), an EventBridge rule's scheduled event,
/// or an object naming one datasource to run alone. Fields are read when present; others are
/// ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SupervisorEvent {
    /// The scheduled time (ISO-8601), from EventBridge Scheduler.
    pub scheduled_time: Option<String>,
    /// The scheduler's id of this attempt.
    pub execution_id: Option<String>,
    /// The scheduled time (ISO-8601), from an EventBridge rule.
    pub time: Option<String>,
    /// `Scheduled Event` from EventBridge.
    #[serde(rename = "detail-type")]
    pub detail_type: Option<String>,
    /// Only this datasource.
    pub datasource: Option<String>,
}

/// Parses a supervisor event: a JSON object (an empty one is a plain tick).
pub fn supervisor_event(payload: serde_json::Value) -> Result<SupervisorEvent, FunctionError> {
    if !payload.is_object() {
        return Err(FunctionError::InvalidEvent {
            field: "(event)".into(),
            reason: format!("expected a JSON object (an EventBridge Scheduler event), got {payload}"),
        });
    }
    parse(payload)
}

/// Parses an indexer or merger event: a job (`{"job": "index" | "merge", "task": {...}}`, or
/// `{"job": "batch-index", "batch": id, "split": n}`, `{"job": "batch-publish", "batch": id}`).
pub fn job_event(payload: serde_json::Value) -> Result<Job, FunctionError> {
    // Read through a plain struct: serde's internally tagged enums lose the path of a bad field.
    let event: JobEvent = parse(payload)?;
    let missing = |field: &str| FunctionError::InvalidEvent { field: field.into(), reason: "missing".into() };
    let batch = || -> Result<String, FunctionError> {
        let id = event.batch.clone().ok_or_else(|| missing("batch"))?;
        match task_id_problem(&id) {
            Some(reason) => Err(FunctionError::InvalidEvent { field: "batch".into(), reason }),
            None => Ok(id),
        }
    };
    Ok(match event.job {
        JobKind::Index => Job::Index { task: event.task.clone().ok_or_else(|| missing("task"))? },
        JobKind::Merge => Job::Merge { task: event.task.clone().ok_or_else(|| missing("task"))? },
        JobKind::BatchIndex => Job::BatchIndex { batch: batch()?, split: event.split.ok_or_else(|| missing("split"))? },
        JobKind::BatchPublish => Job::BatchPublish { batch: batch()? },
    })
}

#[derive(Deserialize)]
struct JobEvent {
    job: JobKind,
    task: Option<TaskId>,
    batch: Option<String>,
    split: Option<u32>,
}

#[derive(Deserialize)]
enum JobKind {
    #[serde(rename = "index")]
    Index,
    #[serde(rename = "merge")]
    Merge,
    #[serde(rename = "batch-index")]
    BatchIndex,
    #[serde(rename = "batch-publish")]
    BatchPublish,
}

fn parse<T: serde::de::DeserializeOwned>(payload: serde_json::Value) -> Result<T, FunctionError> {
    serde_path_to_error::deserialize(payload).map_err(|e| {
        let path = e.path().to_string();
        FunctionError::InvalidEvent {
            field: if path == "." { "(event)".to_string() } else { path },
            reason: e.into_inner().to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_scheduler_events_and_names_bad_fields() {
        let scheduled = json!({"version": "0", "id": "53dc4d37", "detail-type": "Scheduled Event", "source": "aws.scheduler",
            "account": "123456789012", "time": "2026-11-29T15:00:00Z", "region": "us-east-1",
            "resources": ["arn:aws:scheduler:us-east-1:123456789012:schedule/default/sluice"], "detail": "{}"});
        let e = supervisor_event(scheduled).expect("EventBridge rule event");
        assert_eq!(e.detail_type.as_deref(), Some("Scheduled Event"));
        let scheduler = json!({"source": "aws.scheduler", "scheduleArn": "arn:aws:scheduler:us-east-1:123456789012:schedule/default/s",
            "scheduledTime": "2026-11-29T15:00:00Z", "executionId": "d32c5kddcf5bb8c3", "attemptNumber": "1"});
        let e = supervisor_event(scheduler).expect("EventBridge Scheduler event");
        assert_eq!(
            (e.scheduled_time.as_deref(), e.execution_id.as_deref()),
            (Some("2026-11-29T15:00:00Z"), Some("d32c5kddcf5bb8c3"))
        );
        assert_eq!(supervisor_event(json!({})).expect("tick"), SupervisorEvent::default());
        let err = supervisor_event(json!([1])).expect_err("not an object");
        assert!(!err.is_retryable() && err.to_string().contains("(event)"), "{err}");
        let err = supervisor_event(json!({"datasource": 5})).expect_err("bad field");
        assert!(err.to_string().contains("datasource"), "{err}");

        let job = job_event(json!({"job": "index", "task": {"datasource": "w", "group": 0, "seq": 3}})).expect("job");
        assert!(matches!(job, Job::Index { .. }));
        let err = job_event(json!({"job": "index", "task": {"datasource": "w", "group": 0, "seq": "x"}}))
            .expect_err("bad seq");
        assert!(err.to_string().contains("task.seq"), "{err}");
        let batch =
            job_event(json!({"job": "batch-index", "batch": "index_parallel_w_1", "split": 2})).expect("batch job");
        assert_eq!(batch, Job::BatchIndex { batch: "index_parallel_w_1".into(), split: 2 });
        let payload = serde_json::to_value(Job::BatchPublish { batch: "b".into() }).expect("json");
        assert_eq!(job_event(payload).expect("as the invoker writes it"), Job::BatchPublish { batch: "b".into() });
        let err = job_event(json!({"job": "batch-index", "batch": "../x", "split": 0})).expect_err("bad id");
        assert!(err.to_string().contains("batch"), "{err}");
        let err = job_event(json!({"job": "batch-index", "batch": "b"})).expect_err("no split");
        assert!(err.to_string().contains("split"), "{err}");
        let err = job_event(json!({"job": "merge"})).expect_err("no task");
        assert!(err.to_string().contains("task"), "{err}");
        let err = job_event(json!({"job": "compact"})).expect_err("unknown job");
        assert!(!err.is_retryable() && err.to_string().contains("compact"), "{err}");
    }
}

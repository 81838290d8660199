//! `ioConfig` resolved: the topic or topic pattern, task count and duration, message rejection, consumer
//! properties; options a serverless supervisor has no use for are reported.

use super::names::topic_name_problem;
use super::settings::IoSettings;
use super::topics::{TopicPattern, TopicSource};
use super::{kafka_type, period_opt};
use crate::spec::io_config::IoConfig;
use crate::spec::SpecError;
use crate::time::{parse_iso_instant, Period};
use std::collections::BTreeMap;

pub(super) fn resolve_io(
    io: &IoConfig,
    prefix: &str,
    warn: &mut dyn FnMut(String, &str),
) -> Result<IoSettings, SpecError> {
    let f = |name: &str| format!("{prefix}ioConfig.{name}");
    kafka_type(&io.kind, f("type"))?;
    if io.multi_topic.is_some() {
        return Err(SpecError::field(f("multiTopic"), "replaced by topicPattern (as in Druid 28): give topicPattern"));
    }
    let source = match (&io.topic, &io.topic_pattern) {
        (Some(_), Some(_)) => return Err(SpecError::field(f("topicPattern"), "give topic or topicPattern, not both")),
        (None, Some(pattern)) => TopicSource::Pattern(
            TopicPattern::new(pattern).map_err(|e| SpecError::field(f("topicPattern"), e.to_string()))?,
        ),
        (topic, None) => {
            let topic = topic.clone().unwrap_or_default();
            if let Some(problem) = topic_name_problem(&topic) {
                return Err(SpecError::field(f("topic"), problem));
            }
            TopicSource::Topic(topic)
        }
    };
    if io.task_count == Some(0) {
        return Err(SpecError::field(f("taskCount"), "must be at least 1"));
    }
    let auto_scaler = auto_scaler(io.auto_scaler_config.as_ref(), &f)?;
    let task_count = io.task_count.or_else(|| auto_scaler.as_ref().and_then(|a| a.start_count())).unwrap_or(1);
    let ignored: [(&str, bool, &str); 5] = [
        (
            "replicas",
            io.replicas.is_some_and(|r| r > 1),
            "ignored: each task runs once and is retried, exactly once by the publish protocol",
        ),
        ("startDelay", io.start_delay.is_some(), "ignored: the EventBridge schedule decides when the supervisor runs"),
        ("period", io.period.is_some(), "ignored: the EventBridge schedule decides when the supervisor runs"),
        ("completionTimeout", io.completion_timeout.is_some(), "ignored: publishing is retried by the supervisor"),
        ("configOverrides", io.config_overrides.is_some(), "not implemented"),
    ];
    for (name, present, message) in ignored {
        if present {
            warn(f(name), message);
        }
    }
    let idle = idle(io.idle_config.as_ref(), &f)?;
    let task_duration =
        period_opt(&io.task_duration, f("taskDuration"))?.unwrap_or(Period { months: 0, millis: 3_600_000 });
    let consumer_properties = io
        .consumer_properties
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
            )
        })
        .collect::<BTreeMap<_, _>>();
    if !consumer_properties.contains_key("bootstrap.servers") {
        return Err(SpecError::field(f("consumerProperties"), "missing \"bootstrap.servers\""));
    }
    Ok(IoSettings {
        source,
        task_count,
        task_duration,
        use_earliest_offset: io.use_earliest_offset,
        late_message_rejection_period: period_opt(&io.late_message_rejection_period, f("lateMessageRejectionPeriod"))?,
        early_message_rejection_period: period_opt(
            &io.early_message_rejection_period,
            f("earlyMessageRejectionPeriod"),
        )?,
        late_message_rejection_start: io
            .late_message_rejection_start_date_time
            .as_deref()
            .map(|s| {
                parse_iso_instant(s)
                    .map_err(|e| SpecError::field(f("lateMessageRejectionStartDateTime"), e.to_string()))
            })
            .transpose()?,
        consumer_properties,
        poll_timeout_ms: io.poll_timeout.unwrap_or(100),
        auto_scaler,
        idle,
    })
}

/// `autoScalerConfig` read and checked as Druid checks it; the settings when it is enabled.
fn auto_scaler(
    given: Option<&serde_json::Value>,
    f: &dyn Fn(&str) -> String,
) -> Result<Option<crate::spec::autoscaler::AutoScalerConfig>, SpecError> {
    let Some(given) = given else { return Ok(None) };
    let config: crate::spec::autoscaler::AutoScalerConfig =
        serde_json::from_value(given.clone()).map_err(|e| SpecError::field(f("autoScalerConfig"), e.to_string()))?;
    config.check().map_err(|(field, why)| SpecError::field(f(&format!("autoScalerConfig.{field}")), why))?;
    Ok(config.enable_task_auto_scaler.then_some(config))
}

/// `idleConfig` read and checked: `enabled` a boolean, `inactiveAfterMillis` a positive count
/// of at most 30 days; the settings when it is enabled.
fn idle(
    given: Option<&serde_json::Value>,
    f: &dyn Fn(&str) -> String,
) -> Result<Option<crate::spec::idle::IdleConfig>, SpecError> {
    use crate::spec::idle::{IdleConfig, MAX_INACTIVE_AFTER_MILLIS};
    let Some(given) = given else { return Ok(None) };
    let serde_json::Value::Object(o) = given else {
        return Err(SpecError::field(f("idleConfig"), "expected an object"));
    };
    if o.get("enabled").is_some_and(|v| !v.is_boolean()) {
        return Err(SpecError::field(f("idleConfig.enabled"), "expected true or false"));
    }
    if o.get("inactiveAfterMillis").is_some_and(|v| v.as_u64().is_none_or(|n| n == 0 || n > MAX_INACTIVE_AFTER_MILLIS))
    {
        return Err(SpecError::field(
            f("idleConfig.inactiveAfterMillis"),
            format!("expected a positive number of milliseconds, at most {MAX_INACTIVE_AFTER_MILLIS}"),
        ));
    }
    let config: IdleConfig =
        serde_json::from_value(given.clone()).map_err(|e| SpecError::field(f("idleConfig"), e.to_string()))?;
    Ok(config.enabled.then_some(config))
}

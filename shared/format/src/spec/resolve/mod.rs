//! Turns the parsed JSON sections into the settings Sluice runs with: defaults applied,
//! values validated, unimplemented options reported.

mod io_settings;
mod names;
mod schema;
mod settings;
mod topics;
mod tuning_settings;

pub use names::{datasource_name_problem, topic_name_problem, MAX_DATASOURCE_BYTES, MAX_TOPIC_CHARS};
pub use settings::{
    Compression, DatasourceSpec, IoSettings, RealtimeConfig, SluiceConfig, TuningSettings, DEFAULT_MAX_BYTES_IN_MEMORY,
    DEFAULT_MAX_ROWS_IN_MEMORY,
};
pub use topics::{is_internal_topic, TopicPattern, TopicPatternError, TopicSource, MAX_PATTERN_CHARS};

use super::{SpecError, SpecWarning, SupervisorSpecJson};
use crate::time::Period;
use std::collections::HashSet;

/// The dotted path of a field, from its name under the spec's root.
type At<'a> = &'a dyn Fn(&str) -> String;
/// Reports an option that is ignored or only partly implemented: its path and what happens.
type Warn<'a> = &'a mut dyn FnMut(String, &str);

pub(super) fn resolve(
    json: SupervisorSpecJson,
    prefix: &str,
    warnings: &mut Vec<SpecWarning>,
) -> Result<DatasourceSpec, SpecError> {
    let f = |name: &str| format!("{prefix}{name}");
    let mut warn = |field: String, message: &str| warnings.push(SpecWarning { field, message: message.to_string() });
    let ds = json.data_schema;
    if let Some(problem) = datasource_name_problem(&ds.data_source) {
        return Err(SpecError::field(f("dataSchema.dataSource"), problem));
    }
    let (timestamp, dims_spec, legacy_format) = schema::parser(&ds, &f)?;
    schema::check_timestamp(&timestamp, &f)?;
    let input_format = schema::input_format(json.io_config.input_format.clone(), legacy_format, &f, &mut warn)?;
    let mut names = HashSet::new();
    let dimensions = schema::dimensions(&dims_spec, &mut names, &f, &mut warn)?;
    schema::metrics(&ds.metrics_spec, &mut names, &f)?;
    let granularity = schema::granularity(ds.granularity_spec.clone().unwrap_or_default(), &f, &mut warn)?;
    let transform = schema::transform(ds.transform_spec.clone().unwrap_or_default(), &f)?;
    let io = io_settings::resolve_io(&json.io_config, prefix, &mut warn)?;
    let tuning = tuning_settings::resolve_tuning(&json.tuning_config, prefix, &mut warn)?;
    let sluice = json.sluice_config.unwrap_or_default();
    Period::parse(&sluice.task_time_budget)
        .map_err(|e| SpecError::field(f("sluiceConfig.taskTimeBudget"), e.to_string()))?;
    if sluice.max_records_per_task == 0 {
        return Err(SpecError::field(f("sluiceConfig.maxRecordsPerTask"), "must be positive"));
    }
    if let Some(rt) = &sluice.realtime {
        let fixed = |value: &str, name: &str, range: std::ops::RangeInclusive<i64>| {
            let field = f(&format!("sluiceConfig.realtime.{name}"));
            let ms = Period::parse(value)
                .map_err(|e| SpecError::field(field.clone(), e.to_string()))?
                .fixed_millis()
                .ok_or_else(|| SpecError::field(field.clone(), "must be a fixed period (no months or years)"))?;
            if !range.contains(&ms) {
                let (lo, hi) = (range.start() / 1000, range.end() / 1000);
                return Err(SpecError::field(field, format!("must be between {lo} s and {hi} s")));
            }
            Ok(())
        };
        fixed(&rt.checkpoint_period, "checkpointPeriod", 100..=600_000)?;
        fixed(&rt.idle_after, "idleAfter", 1_000..=86_400_000)?;
    }
    Ok(DatasourceSpec {
        data_source: ds.data_source,
        timestamp,
        discover_dimensions: dimensions.is_empty() || dims_spec.use_schema_discovery == Some(true),
        schema_discovery: dims_spec.use_schema_discovery == Some(true),
        dimensions,
        dimension_exclusions: dims_spec.dimension_exclusions,
        metrics: ds.metrics_spec,
        granularity,
        transform,
        input_format,
        io,
        tuning,
        sluice,
        suspended: json.suspended.unwrap_or(false),
    })
}

/// Checks a section's optional `type`, which Druid's Kafka supervisor spec gives as `kafka`.
fn kafka_type(kind: &Option<String>, field: String) -> Result<(), SpecError> {
    match kind.as_deref() {
        None | Some("kafka") => Ok(()),
        Some(other) => {
            Err(SpecError::field(field, format!("expected \"kafka\", got {:?}", crate::text::excerpt(other, 40))))
        }
    }
}

fn period_opt(v: &Option<String>, field: String) -> Result<Option<Period>, SpecError> {
    v.as_deref().map(|s| Period::parse(s).map_err(|e| SpecError::field(field, e.to_string()))).transpose()
}

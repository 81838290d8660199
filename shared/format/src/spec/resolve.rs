//! Turns the parsed JSON sections into the settings Sluice runs with: defaults applied,
//! values validated, unimplemented options reported.

use super::aggregator::AggregatorSpec;
use super::data_schema::{DimensionSchema, DimensionType, GranularitySpec, TimestampSpec, TransformSpec};
use super::input_format::InputFormat;
use super::tuning::IndexSpec;
use super::{SpecError, SpecWarning, SupervisorSpecJson};
use crate::codec::Codec;
use crate::time::{parse_iso_instant, Period};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// A datasource spec resolved with defaults, ready to drive ingestion.
#[derive(Debug, Clone)]
pub struct DatasourceSpec {
    /// Datasource name.
    pub data_source: String,
    /// How the timestamp is read.
    pub timestamp: TimestampSpec,
    /// Declared dimensions, in order (empty with discovery).
    pub dimensions: Vec<DimensionSchema>,
    /// Fields never discovered as dimensions.
    pub dimension_exclusions: Vec<String>,
    /// Whether dimensions are discovered from the input (no dimension list given).
    pub discover_dimensions: bool,
    /// Aggregators.
    pub metrics: Vec<AggregatorSpec>,
    /// Granularities and rollup.
    pub granularity: GranularitySpec,
    /// Filter and transforms.
    pub transform: TransformSpec,
    /// Record value format.
    pub input_format: InputFormat,
    /// Kafka settings.
    pub io: IoSettings,
    /// Memory, persist and segment settings.
    pub tuning: TuningSettings,
    /// Serverless settings.
    pub sluice: SluiceConfig,
    /// Whether the spec was submitted suspended.
    pub suspended: bool,
}

/// Resolved `ioConfig`.
#[derive(Debug, Clone, PartialEq)]
pub struct IoSettings {
    /// Topic name.
    pub topic: String,
    /// Number of partition groups.
    pub task_count: u32,
    /// Task duration.
    pub task_duration: Period,
    /// Where to start without committed offsets.
    pub use_earliest_offset: bool,
    /// `lateMessageRejectionPeriod`.
    pub late_message_rejection_period: Option<Period>,
    /// `earlyMessageRejectionPeriod`.
    pub early_message_rejection_period: Option<Period>,
    /// `lateMessageRejectionStartDateTime`, in ms.
    pub late_message_rejection_start: Option<i64>,
    /// librdkafka properties as strings.
    pub consumer_properties: BTreeMap<String, String>,
    /// Poll timeout in ms.
    pub poll_timeout_ms: u64,
}

/// Resolved `tuningConfig`.
#[derive(Debug, Clone, PartialEq)]
pub struct TuningSettings {
    /// Rows in memory before a persist.
    pub max_rows_in_memory: u64,
    /// Estimated bytes in memory before a persist; `None` when disabled.
    pub max_bytes_in_memory: Option<u64>,
    /// Rows per final segment.
    pub max_rows_per_segment: u64,
    /// Rows per task before handoff.
    pub max_total_rows: u64,
    /// Persist period.
    pub intermediate_persist_period: Period,
    /// Parse exceptions tolerated.
    pub max_parse_exceptions: u64,
    /// Parse exceptions kept with their reasons.
    pub max_saved_parse_exceptions: u64,
    /// Log each parse exception.
    pub log_parse_exceptions: bool,
    /// Reset out-of-range offsets automatically.
    pub reset_offset_automatically: bool,
    /// Compression of final segments.
    pub index: Compression,
    /// Compression of hydrants.
    pub intermediate_index: Compression,
}

/// Column compression chosen by an `indexSpec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compression {
    /// Codec of dimension columns (dictionaries, row ids, bitmaps).
    pub dimensions: Codec,
    /// Codec of metric and time columns.
    pub metrics: Codec,
}

impl Default for Compression {
    fn default() -> Self {
        Self { dimensions: Codec::Lz4, metrics: Codec::Lz4 }
    }
}

/// Sluice's serverless settings, in the optional `sluiceConfig` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SluiceConfig {
    /// Most records one task reads (default 2,000,000), sized for the Lambda time limit.
    #[serde(default = "default_max_records")]
    pub max_records_per_task: u64,
    /// Most record bytes one task reads (default 512 MiB).
    #[serde(default = "default_max_bytes")]
    pub max_bytes_per_task: u64,
    /// Time a task may run before it checkpoints and returns incomplete (default `PT10M`).
    #[serde(default = "default_budget")]
    pub task_time_budget: String,
    /// Also commit the published offsets to a Kafka consumer group named after the datasource,
    /// so Kafka's lag tools see the progress (informational: Sluice never reads them back).
    #[serde(default)]
    pub commit_offsets_to_kafka: bool,
}

fn default_max_records() -> u64 {
    2_000_000
}
fn default_max_bytes() -> u64 {
    512 << 20
}
fn default_budget() -> String {
    "PT10M".to_string()
}

impl Default for SluiceConfig {
    fn default() -> Self {
        Self {
            max_records_per_task: default_max_records(),
            max_bytes_per_task: default_max_bytes(),
            task_time_budget: default_budget(),
            commit_offsets_to_kafka: false,
        }
    }
}

/// Default `maxBytesInMemory`: 64 MiB, sized for a Lambda of 512 MiB or more.
pub const DEFAULT_MAX_BYTES_IN_MEMORY: u64 = 64 << 20;

pub(super) fn resolve(
    json: SupervisorSpecJson,
    prefix: &str,
    warnings: &mut Vec<SpecWarning>,
) -> Result<DatasourceSpec, SpecError> {
    let f = |name: &str| format!("{prefix}{name}");
    let mut warn = |field: String, message: &str| warnings.push(SpecWarning { field, message: message.to_string() });
    let ds = json.data_schema;
    if ds.data_source.trim().is_empty() {
        return Err(SpecError::field(f("dataSchema.dataSource"), "must not be empty"));
    }

    // Timestamp, dimensions and format: from the current fields or the legacy parser.
    let (timestamp, dims_spec, legacy_format) = match &ds.parser {
        Some(p) => {
            if !matches!(p.kind.as_str(), "string" | "map") {
                return Err(SpecError::field(
                    f("dataSchema.parser.type"),
                    format!("parser type {:?} is not supported: use string", p.kind),
                ));
            }
            let fmt = p
                .parse_spec
                .input_format()
                .map_err(|m| SpecError::field(f("dataSchema.parser.parseSpec.format"), m))?;
            (p.parse_spec.timestamp_spec.clone(), p.parse_spec.dimensions_spec.clone(), Some(fmt))
        }
        None => {
            let ts = ds.timestamp_spec.clone().ok_or_else(|| {
                SpecError::field(
                    f("dataSchema.timestampSpec"),
                    "missing: give timestampSpec (or the legacy parser.parseSpec)",
                )
            })?;
            (ts, ds.dimensions_spec.clone().unwrap_or_default(), None)
        }
    };
    crate::timestamp::TimestampFormat::parse(&timestamp.format)
        .map_err(|m| SpecError::field(f("dataSchema.timestampSpec.format"), m))?;
    if let Some(missing) = &timestamp.missing_value {
        let ok = match missing {
            serde_json::Value::String(s) => parse_iso_instant(s).is_ok(),
            serde_json::Value::Number(_) => true,
            _ => false,
        };
        if !ok {
            return Err(SpecError::field(
                f("dataSchema.timestampSpec.missingValue"),
                "expected an ISO-8601 instant or milliseconds",
            ));
        }
    }
    let input_format = match (&json.io_config.input_format, legacy_format) {
        (Some(fmt), _) => fmt.clone(),
        (None, Some(fmt)) => fmt,
        (None, None) => {
            return Err(SpecError::field(
                f("ioConfig.inputFormat"),
                "missing: give ioConfig.inputFormat (or the legacy parser)",
            ))
        }
    };
    if let InputFormat::Kafka { header_format, key_format, .. } = &input_format {
        if header_format.is_some() || key_format.is_some() {
            warn(
                f("ioConfig.inputFormat.headerFormat"),
                "Kafka header and key columns are not implemented; only the value is parsed",
            );
        }
    }
    if let InputFormat::Json { flatten_spec: Some(fs), feature_spec, .. } = input_format.value_format() {
        for (i, field) in fs.fields.iter().enumerate() {
            if !matches!(field.kind.as_str(), "root" | "path") {
                return Err(SpecError::field(
                    f(&format!("ioConfig.inputFormat.flattenSpec.fields[{i}].type")),
                    format!("flatten field type {:?} is not supported: use root or path", field.kind),
                ));
            }
            if field.kind == "path" && field.expr.is_none() {
                return Err(SpecError::field(
                    f(&format!("ioConfig.inputFormat.flattenSpec.fields[{i}].expr")),
                    "missing JSONPath",
                ));
            }
        }
        if feature_spec.is_some() {
            warn(f("ioConfig.inputFormat.featureSpec"), "ignored: Sluice's JSON parser has fixed features");
        }
    }

    let mut names = HashSet::new();
    let dimensions: Vec<DimensionSchema> = dims_spec.dimensions.iter().map(|d| d.schema()).collect();
    for (i, d) in dimensions.iter().enumerate() {
        if d.name.is_empty() || d.name == "__time" {
            return Err(SpecError::field(
                f(&format!("dataSchema.dimensionsSpec.dimensions[{i}]")),
                format!("invalid dimension name {:?}", d.name),
            ));
        }
        if !names.insert(d.name.clone()) {
            return Err(SpecError::field(
                f(&format!("dataSchema.dimensionsSpec.dimensions[{i}]")),
                format!("duplicate column name {:?}", d.name),
            ));
        }
        if d.kind != DimensionType::String && d.create_bitmap_index == Some(true) {
            warn(
                f(&format!("dataSchema.dimensionsSpec.dimensions[{i}].createBitmapIndex")),
                "numeric dimensions have no bitmap index",
            );
        }
    }
    if dims_spec.spatial_dimensions.as_ref().is_some_and(|v| v.as_array().is_none_or(|a| !a.is_empty())) {
        warn(
            f("dataSchema.dimensionsSpec.spatialDimensions"),
            "spatial dimensions are not implemented and are ignored",
        );
    }
    if dims_spec.use_schema_discovery == Some(true) {
        warn(
            f("dataSchema.dimensionsSpec.useSchemaDiscovery"),
            "typed schema discovery is not implemented: discovered dimensions are strings",
        );
    }
    if dims_spec.include_all_dimensions == Some(true) {
        warn(
            f("dataSchema.dimensionsSpec.includeAllDimensions"),
            "not implemented: only the listed dimensions are kept",
        );
    }

    for (i, agg) in ds.metrics_spec.iter().enumerate() {
        let at = |name: &str| f(&format!("dataSchema.metricsSpec[{i}].{name}"));
        if agg.name().is_empty() || agg.name() == "__time" {
            return Err(SpecError::field(at("name"), format!("invalid metric name {:?}", agg.name())));
        }
        if !names.insert(agg.name().to_string()) {
            return Err(SpecError::field(at("name"), format!("duplicate column name {:?}", agg.name())));
        }
        validate_aggregator(agg, &at)?;
    }

    let granularity = ds.granularity_spec.clone().unwrap_or_default();
    if granularity.kind != "uniform" {
        warn(f("dataSchema.granularitySpec.type"), "treated as uniform");
    }
    if granularity.intervals.is_some() {
        warn(f("dataSchema.granularitySpec.intervals"), "ignored for streaming ingestion: every interval is accepted");
    }
    if granularity.segment_granularity == crate::granularity::Granularity::None {
        return Err(SpecError::field(
            f("dataSchema.granularitySpec.segmentGranularity"),
            "NONE would make a segment per millisecond: use a period such as HOUR or DAY",
        ));
    }
    let transform = ds.transform_spec.clone().unwrap_or_default();
    for (i, t) in transform.transforms.iter().enumerate() {
        if t.kind != "expression" {
            return Err(SpecError::field(
                f(&format!("dataSchema.transformSpec.transforms[{i}].type")),
                format!("transform type {:?} is not supported: use expression", t.kind),
            ));
        }
        crate::expr::parse(&t.expression, &mut |_| 0).map_err(|e| {
            SpecError::field(f(&format!("dataSchema.transformSpec.transforms[{i}].expression")), e.to_string())
        })?;
    }
    if let Some(filter) = &transform.filter {
        filter
            .compile(&mut |_| 0)
            .map_err(|e| SpecError::field(f("dataSchema.transformSpec.filter"), e.to_string()))?;
    }

    let io = resolve_io(&json.io_config, prefix, &mut warn)?;
    let tuning = resolve_tuning(&json.tuning_config, prefix, &mut warn)?;
    let sluice = json.sluice_config.unwrap_or_default();
    Period::parse(&sluice.task_time_budget)
        .map_err(|e| SpecError::field(f("sluiceConfig.taskTimeBudget"), e.to_string()))?;
    if sluice.max_records_per_task == 0 {
        return Err(SpecError::field(f("sluiceConfig.maxRecordsPerTask"), "must be positive"));
    }

    Ok(DatasourceSpec {
        data_source: ds.data_source,
        timestamp,
        discover_dimensions: dimensions.is_empty(),
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

fn validate_aggregator(agg: &AggregatorSpec, at: &dyn Fn(&str) -> String) -> Result<(), SpecError> {
    use AggregatorSpec::*;
    match agg {
        LongSum(a) | DoubleSum(a) | FloatSum(a) | LongMin(a) | LongMax(a) | DoubleMin(a) | DoubleMax(a)
        | FloatMin(a) | FloatMax(a) => match (&a.field_name, &a.expression) {
            (None, None) => {
                return Err(SpecError::field(
                    at("fieldName"),
                    format!("{} needs fieldName or expression", agg.type_name()),
                ))
            }
            (Some(_), Some(_)) => {
                return Err(SpecError::field(at("expression"), "give fieldName or expression, not both"))
            }
            (None, Some(e)) => {
                crate::expr::parse(e, &mut |_| 0).map_err(|err| SpecError::field(at("expression"), err.to_string()))?;
            }
            _ => {}
        },
        LongFirst(a) | LongLast(a) | DoubleFirst(a) | DoubleLast(a) | FloatFirst(a) | FloatLast(a) | StringFirst(a)
        | StringLast(a) => {
            if a.time_column.as_deref().is_some_and(|c| c != "__time") {
                return Err(SpecError::field(at("timeColumn"), "only __time is supported"));
            }
            if a.max_string_bytes == Some(0) {
                return Err(SpecError::field(at("maxStringBytes"), "must be positive"));
            }
        }
        HyperUnique(s) | HllSketchBuild(s) => {
            if s.lg_k.is_some_and(|k| !(4..=21).contains(&k)) {
                return Err(SpecError::field(at("lgK"), "must be between 4 and 21"));
            }
            if let Some(t) = &s.tgt_hll_type {
                if !matches!(t.as_str(), "HLL_4" | "HLL_6" | "HLL_8") {
                    return Err(SpecError::field(at("tgtHllType"), format!("{t:?} is not one of HLL_4, HLL_6, HLL_8")));
                }
            }
            if s.is_input_hyper_unique == Some(true) {
                return Err(SpecError::field(at("isInputHyperUnique"), "pre-built hyperUnique input is not supported"));
            }
        }
        Count { .. } => {}
    }
    Ok(())
}

fn period_opt(v: &Option<String>, field: String) -> Result<Option<Period>, SpecError> {
    v.as_deref().map(|s| Period::parse(s).map_err(|e| SpecError::field(field, e.to_string()))).transpose()
}

fn resolve_io(
    io: &super::io_config::IoConfig,
    prefix: &str,
    warn: &mut dyn FnMut(String, &str),
) -> Result<IoSettings, SpecError> {
    let f = |name: &str| format!("{prefix}ioConfig.{name}");
    if let Some(kind) = &io.kind {
        if kind != "kafka" {
            return Err(SpecError::field(f("type"), format!("expected \"kafka\", got {kind:?}")));
        }
    }
    if io.topic_pattern.is_some() || io.multi_topic.is_some() {
        return Err(SpecError::field(f("topicPattern"), "multi-topic ingestion is not supported: give one topic"));
    }
    let topic = io
        .topic
        .clone()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| SpecError::field(f("topic"), "missing: name the Kafka topic"))?;
    let task_count = io.task_count.unwrap_or(1);
    if task_count == 0 {
        return Err(SpecError::field(f("taskCount"), "must be at least 1"));
    }
    let ignored: [(&str, bool, &str); 7] = [
        (
            "replicas",
            io.replicas.is_some_and(|r| r > 1),
            "ignored: each task runs once and is retried, exactly once by the publish protocol",
        ),
        ("startDelay", io.start_delay.is_some(), "ignored: the EventBridge schedule decides when the supervisor runs"),
        ("period", io.period.is_some(), "ignored: the EventBridge schedule decides when the supervisor runs"),
        ("completionTimeout", io.completion_timeout.is_some(), "ignored: publishing is retried by the supervisor"),
        ("autoScalerConfig", io.auto_scaler_config.is_some(), "not implemented: taskCount is fixed"),
        ("idleConfig", io.idle_config.is_some(), "not implemented"),
        ("configOverrides", io.config_overrides.is_some(), "not implemented"),
    ];
    for (name, present, message) in ignored {
        if present {
            warn(f(name), message);
        }
    }
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
        topic,
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
    })
}

fn codec(name: &Option<String>, field: String) -> Result<Codec, SpecError> {
    match name.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("lz4") => Ok(Codec::Lz4),
        Some("zstd") => Ok(Codec::Zstd),
        Some("none" | "uncompressed") => Ok(Codec::None),
        Some("lzf") => Ok(Codec::Lz4),
        Some(other) => Err(SpecError::field(field, format!("compression {other:?} is not one of lz4, zstd, none"))),
    }
}

fn resolve_index(spec: &IndexSpec, at: &str, warn: &mut dyn FnMut(String, &str)) -> Result<Compression, SpecError> {
    if let Some(bitmap) = &spec.bitmap {
        if bitmap.get("type").and_then(|t| t.as_str()).is_some_and(|t| t != "roaring") {
            warn(format!("{at}.bitmap"), "only roaring bitmaps are implemented: roaring is used");
        }
    }
    if spec.dimension_compression.as_deref() == Some("lzf") || spec.metric_compression.as_deref() == Some("lzf") {
        warn(at.to_string(), "lzf compression is not implemented: lz4 is used");
    }
    for (name, present) in [
        ("stringDictionaryEncoding", spec.string_dictionary_encoding.is_some()),
        ("jsonCompression", spec.json_compression.is_some()),
        ("complexMetricCompression", spec.complex_metric_compression.is_some()),
        ("longEncoding", spec.long_encoding.is_some()),
    ] {
        if present {
            warn(format!("{at}.{name}"), "ignored: Sluice's segment format fixes this encoding");
        }
    }
    Ok(Compression {
        dimensions: codec(&spec.dimension_compression, format!("{at}.dimensionCompression"))?,
        metrics: codec(&spec.metric_compression, format!("{at}.metricCompression"))?,
    })
}

fn resolve_tuning(
    t: &super::tuning::TuningConfig,
    prefix: &str,
    warn: &mut dyn FnMut(String, &str),
) -> Result<TuningSettings, SpecError> {
    let f = |name: &str| format!("{prefix}tuningConfig.{name}");
    if let Some(kind) = &t.kind {
        if kind != "kafka" {
            return Err(SpecError::field(f("type"), format!("expected \"kafka\", got {kind:?}")));
        }
    }
    let positive = |v: Option<u64>, name: &str, default: u64| -> Result<u64, SpecError> {
        match v {
            Some(0) => Err(SpecError::field(f(name), "must be positive")),
            Some(v) => Ok(v),
            None => Ok(default),
        }
    };
    let max_bytes_in_memory = match t.max_bytes_in_memory {
        None | Some(0) => Some(DEFAULT_MAX_BYTES_IN_MEMORY),
        Some(-1) => None,
        Some(v) if v > 0 => Some(v as u64),
        Some(v) => {
            return Err(SpecError::field(
                f("maxBytesInMemory"),
                format!("must be positive, 0 (default) or -1 (no limit), got {v}"),
            ))
        }
    };
    let mut max_parse_exceptions = t.max_parse_exceptions.unwrap_or(u64::MAX);
    if t.report_parse_exceptions == Some(false) {
        warn(f("reportParseExceptions"), "deprecated: false is the default; maxParseExceptions decides");
    }
    if t.report_parse_exceptions == Some(true) {
        if t.max_parse_exceptions.is_some_and(|m| m > 0) {
            warn(f("reportParseExceptions"), "deprecated: overrides maxParseExceptions with 0");
        }
        max_parse_exceptions = 0;
    }
    let ignored: [(&str, bool); 14] = [
        ("maxPendingPersists", t.max_pending_persists.is_some()),
        ("handoffConditionTimeout", t.handoff_condition_timeout.is_some()),
        ("skipSequenceNumberAvailabilityCheck", t.skip_sequence_number_availability_check.is_some()),
        ("workerThreads", t.worker_threads.is_some()),
        ("chatThreads", t.chat_threads.is_some()),
        ("chatRetries", t.chat_retries.is_some()),
        ("httpTimeout", t.http_timeout.is_some()),
        ("shutdownTimeout", t.shutdown_timeout.is_some()),
        ("offsetFetchPeriod", t.offset_fetch_period.is_some()),
        ("intermediateHandoffPeriod", t.intermediate_handoff_period.is_some()),
        ("partitionsSpec", t.partitions_spec.is_some()),
        ("segmentWriteOutMediumFactory", t.segment_write_out_medium_factory.is_some()),
        ("appendSchemaVersions", t.append_schema_versions.is_some()),
        ("numPersistThreads", t.num_persist_threads.is_some()),
    ];
    for (name, present) in ignored {
        if present {
            warn(f(name), "ignored: not meaningful for serverless tasks");
        }
    }
    let index = match &t.index_spec {
        Some(spec) => resolve_index(spec, &f("indexSpec"), warn)?,
        None => Compression::default(),
    };
    let intermediate_index = match &t.index_spec_for_intermediate_persists {
        Some(spec) => resolve_index(spec, &f("indexSpecForIntermediatePersists"), warn)?,
        None => index,
    };
    Ok(TuningSettings {
        max_rows_in_memory: positive(t.max_rows_in_memory, "maxRowsInMemory", 150_000)?,
        max_bytes_in_memory,
        max_rows_per_segment: positive(t.max_rows_per_segment, "maxRowsPerSegment", 5_000_000)?,
        max_total_rows: positive(t.max_total_rows, "maxTotalRows", 20_000_000)?,
        intermediate_persist_period: period_opt(&t.intermediate_persist_period, f("intermediatePersistPeriod"))?
            .unwrap_or(Period { months: 0, millis: 600_000 }),
        max_parse_exceptions,
        max_saved_parse_exceptions: t.max_saved_parse_exceptions.unwrap_or(10).max(10),
        log_parse_exceptions: t.log_parse_exceptions.unwrap_or(false),
        reset_offset_automatically: t.reset_offset_automatically,
        index,
        intermediate_index,
    })
}

//! `tuningConfig` resolved: in-memory limits, segment sizes, parse exception handling and the
//! index specs' compression; options a serverless task has no use for are reported.

use super::settings::{Compression, TuningSettings, DEFAULT_MAX_BYTES_IN_MEMORY, DEFAULT_MAX_ROWS_IN_MEMORY};
use super::{kafka_type, period_opt};
use crate::codec::Codec;
use crate::spec::tuning::{IndexSpec, TuningConfig};
use crate::spec::SpecError;
use crate::spec::{DEFAULT_MAX_ROWS_PER_SEGMENT, DEFAULT_MAX_TOTAL_ROWS};
use crate::time::Period;

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

/// `maxSavedParseExceptions`: at least 10, at most what a checkpoint item holds (said when
/// the spec asks for more).
fn saved_parse_exceptions(asked: Option<u64>, field: String, warn: &mut dyn FnMut(String, &str)) -> u64 {
    let max = crate::meters::MAX_SAVED_PARSE_EXCEPTIONS as u64;
    let asked = asked.unwrap_or(10).max(10);
    if asked > max {
        warn(field, "at most 500 parse exceptions are kept (the latest), with reasons cut at 200 characters: they travel in every checkpoint item");
    }
    asked.min(max)
}

pub(super) fn resolve_tuning(
    t: &TuningConfig,
    prefix: &str,
    warn: &mut dyn FnMut(String, &str),
) -> Result<TuningSettings, SpecError> {
    let f = |name: &str| format!("{prefix}tuningConfig.{name}");
    kafka_type(&t.kind, f("type"))?;
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
    if t.report_parse_exceptions == Some(true) {
        if t.max_parse_exceptions.is_some_and(|m| m > 0) {
            warn(f("reportParseExceptions"), "deprecated: overrides maxParseExceptions with 0");
        }
        max_parse_exceptions = 0;
    }
    if t.max_pending_persists.is_some_and(|n| n > 0) {
        warn(f("maxPendingPersists"), "one persist runs beside reading (Druid's default 0); more are not queued");
    }
    let ignored: [(&str, bool); 13] = [
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
        max_rows_in_memory: positive(t.max_rows_in_memory, "maxRowsInMemory", DEFAULT_MAX_ROWS_IN_MEMORY)?,
        max_bytes_in_memory,
        max_rows_per_segment: positive(t.max_rows_per_segment, "maxRowsPerSegment", DEFAULT_MAX_ROWS_PER_SEGMENT)?,
        max_total_rows: positive(t.max_total_rows, "maxTotalRows", DEFAULT_MAX_TOTAL_ROWS)?,
        intermediate_persist_period: period_opt(&t.intermediate_persist_period, f("intermediatePersistPeriod"))?
            .unwrap_or(Period { months: 0, millis: 600_000 }),
        max_parse_exceptions,
        max_saved_parse_exceptions: saved_parse_exceptions(
            t.max_saved_parse_exceptions,
            f("maxSavedParseExceptions"),
            warn,
        ),
        log_parse_exceptions: t.log_parse_exceptions.unwrap_or(false),
        reset_offset_automatically: t.reset_offset_automatically,
        index,
        intermediate_index,
    })
}

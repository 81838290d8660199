//! `dataSchema` and the input format checked: the timestamp, dimensions, metrics, granularity
//! and transforms, from the current fields or Druid's legacy parser.

use super::{At, Warn};
use crate::spec::aggregator::AggregatorSpec;
use crate::spec::data_schema::{
    DataSchemaJson, DimensionSchema, DimensionType, DimensionsSpec, GranularitySpec, TimestampSpec, TransformSpec,
};
use crate::spec::input_format::{HeaderEncoding, InputFormat, RegistrySettings};
use crate::spec::SpecError;
use crate::time::parse_iso_instant;
use std::collections::HashSet;

/// The timestamp and dimensions, from the current fields or the legacy parser, with the legacy
/// parser's input format if there is one.
pub(super) fn parser(
    ds: &DataSchemaJson,
    f: At,
) -> Result<(TimestampSpec, DimensionsSpec, Option<InputFormat>), SpecError> {
    Ok(match &ds.parser {
        Some(p) => {
            let fmt = p.input_format().map_err(|(at, m)| SpecError::field(f(&format!("dataSchema.parser.{at}")), m))?;
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
    })
}

/// Checks the timestamp format and the value used when a record has none.
pub(super) fn check_timestamp(timestamp: &TimestampSpec, f: At) -> Result<(), SpecError> {
    crate::timestamp::TimestampFormat::parse(&timestamp.format)
        .map_err(|m| SpecError::field(f("dataSchema.timestampSpec.format"), m.to_string()))?;
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
    Ok(())
}

/// The input format: `ioConfig.inputFormat`, or the legacy parser's.
pub(super) fn input_format(
    given: Option<InputFormat>,
    legacy_format: Option<InputFormat>,
    f: At,
    warn: Warn,
) -> Result<InputFormat, SpecError> {
    let input_format = match (given, legacy_format) {
        (Some(fmt), _) => fmt,
        (None, Some(fmt)) => fmt,
        (None, None) => {
            return Err(SpecError::field(
                f("ioConfig.inputFormat"),
                "missing: give ioConfig.inputFormat (or the legacy parser)",
            ))
        }
    };
    if let InputFormat::Kafka { value_format, header_format, key_format, .. } = &input_format {
        if matches!(**value_format, InputFormat::Kafka { .. }) {
            return Err(SpecError::field(f("ioConfig.inputFormat.valueFormat"), "a kafka format cannot nest another"));
        }
        if let Some(h) = header_format {
            if h.kind != "string" {
                return Err(SpecError::field(
                    f("ioConfig.inputFormat.headerFormat.type"),
                    format!("header format {:?} is not supported: use string", h.kind),
                ));
            }
            if let Some(e) = h.encoding.as_deref().filter(|e| HeaderEncoding::named(e).is_none()) {
                return Err(SpecError::field(
                    f("ioConfig.inputFormat.headerFormat.encoding"),
                    format!("encoding {e:?} is not supported: use UTF-8, ISO-8859-1 or US-ASCII"),
                ));
            }
        }
        if let Some(k) = key_format {
            if matches!(**k, InputFormat::Kafka { .. }) {
                return Err(SpecError::field(
                    f("ioConfig.inputFormat.keyFormat"),
                    "a kafka format cannot nest another",
                ));
            }
        }
    }
    let key_format = input_format.kafka_columns().and_then(|c| c.key).map(|(_, format)| format);
    let formats = [
        (Some(input_format.value_format()), "ioConfig.inputFormat"),
        (key_format.as_ref(), "ioConfig.inputFormat.keyFormat"),
    ];
    for (format, at) in formats {
        let Some(RegistrySettings { url, urls, .. }) = format.and_then(InputFormat::registry) else { continue };
        let decoder = match format {
            Some(InputFormat::Protobuf { .. }) => "protoBytesDecoder",
            _ => "avroBytesDecoder",
        };
        if url.is_none() && urls.as_ref().is_none_or(Vec::is_empty) {
            return Err(SpecError::field(f(&format!("{at}.{decoder}.url")), "missing: give url or urls"));
        }
    }
    let (flatten_spec, feature_spec) = match input_format.value_format() {
        InputFormat::Json { flatten_spec, feature_spec, .. } => (flatten_spec.as_ref(), feature_spec.as_ref()),
        InputFormat::AvroStream { flatten_spec, .. } | InputFormat::Protobuf { flatten_spec, .. } => {
            (flatten_spec.as_ref(), None)
        }
        _ => (None, None),
    };
    if let Some(fs) = flatten_spec {
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
    Ok(input_format)
}

/// The declared dimensions, each name new to `names`.
pub(super) fn dimensions(
    dims_spec: &DimensionsSpec,
    names: &mut HashSet<String>,
    f: At,
    warn: Warn,
) -> Result<Vec<DimensionSchema>, SpecError> {
    let dimensions: Vec<DimensionSchema> = dims_spec.dimensions.iter().map(|d| d.schema()).collect();
    for (i, d) in dimensions.iter().enumerate() {
        if d.name.is_empty() || d.name == "__time" || d.name.contains(crate::json_path::NESTED_SEPARATOR) {
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
            "discovered fields are typed per segment (long, double, string, json); arrays of literals are multi-value strings, not ARRAY columns",
        );
    }
    if dims_spec.include_all_dimensions == Some(true) {
        warn(
            f("dataSchema.dimensionsSpec.includeAllDimensions"),
            "not implemented: only the listed dimensions are kept",
        );
    }
    Ok(dimensions)
}

/// Checks each metric, its name new to `names`.
pub(super) fn metrics(metrics: &[AggregatorSpec], names: &mut HashSet<String>, f: At) -> Result<(), SpecError> {
    for (i, agg) in metrics.iter().enumerate() {
        let at = |name: &str| f(&format!("dataSchema.metricsSpec[{i}].{name}"));
        if agg.name().is_empty() || agg.name() == "__time" {
            return Err(SpecError::field(at("name"), format!("invalid metric name {:?}", agg.name())));
        }
        if !names.insert(agg.name().to_string()) {
            return Err(SpecError::field(at("name"), format!("duplicate column name {:?}", agg.name())));
        }
        validate_aggregator(agg, &at)?;
    }
    Ok(())
}

/// The granularity spec, checked.
pub(super) fn granularity(granularity: GranularitySpec, f: At, warn: Warn) -> Result<GranularitySpec, SpecError> {
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
    Ok(granularity)
}

/// The transform spec, each expression and the filter compiled once to check them.
pub(super) fn transform(transform: TransformSpec, f: At) -> Result<TransformSpec, SpecError> {
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
    Ok(transform)
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
        ThetaSketch(t) => {
            if let Some(size) = t.size {
                crate::sketches::theta_lg_k(size).map_err(|e| SpecError::field(at("size"), e.to_string()))?;
            }
            if t.is_input_theta_sketch == Some(true) {
                return Err(SpecError::field(
                    at("isInputThetaSketch"),
                    "pre-built sketch input is not supported at ingestion",
                ));
            }
            if t.error_bounds_std_dev.is_some() {
                return Err(SpecError::field(at("errorBoundsStdDev"), "error bounds are not supported yet"));
            }
        }
        QuantilesSketch(q) => {
            if let Some(k) = q.k {
                crate::sketches::check_quantiles_k(k).map_err(|e| SpecError::field(at("k"), e.to_string()))?;
            }
        }
        Count { .. } => {}
    }
    Ok(())
}

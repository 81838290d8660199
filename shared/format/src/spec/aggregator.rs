//! `metricsSpec` aggregators: what the incremental index computes per rolled-up row.

use serde::{Deserialize, Serialize};

/// One aggregator of `metricsSpec`, as Druid spells it in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AggregatorSpec {
    /// Counts ingested rows.
    #[serde(rename = "count")]
    Count {
        /// Output column name.
        name: String,
    },
    /// Sums a long field.
    #[serde(rename = "longSum", rename_all = "camelCase")]
    LongSum(NumericAgg),
    /// Sums a double field.
    #[serde(rename = "doubleSum", rename_all = "camelCase")]
    DoubleSum(NumericAgg),
    /// Sums a float field.
    #[serde(rename = "floatSum", rename_all = "camelCase")]
    FloatSum(NumericAgg),
    /// Minimum of a long field.
    #[serde(rename = "longMin")]
    LongMin(NumericAgg),
    /// Maximum of a long field.
    #[serde(rename = "longMax")]
    LongMax(NumericAgg),
    /// Minimum of a double field.
    #[serde(rename = "doubleMin")]
    DoubleMin(NumericAgg),
    /// Maximum of a double field.
    #[serde(rename = "doubleMax")]
    DoubleMax(NumericAgg),
    /// Minimum of a float field.
    #[serde(rename = "floatMin")]
    FloatMin(NumericAgg),
    /// Maximum of a float field.
    #[serde(rename = "floatMax")]
    FloatMax(NumericAgg),
    /// The long value with the earliest timestamp.
    #[serde(rename = "longFirst")]
    LongFirst(FirstLastAgg),
    /// The long value with the latest timestamp.
    #[serde(rename = "longLast")]
    LongLast(FirstLastAgg),
    /// The double value with the earliest timestamp.
    #[serde(rename = "doubleFirst")]
    DoubleFirst(FirstLastAgg),
    /// The double value with the latest timestamp.
    #[serde(rename = "doubleLast")]
    DoubleLast(FirstLastAgg),
    /// The float value with the earliest timestamp.
    #[serde(rename = "floatFirst")]
    FloatFirst(FirstLastAgg),
    /// The float value with the latest timestamp.
    #[serde(rename = "floatLast")]
    FloatLast(FirstLastAgg),
    /// The string value with the earliest timestamp.
    #[serde(rename = "stringFirst")]
    StringFirst(FirstLastAgg),
    /// The string value with the latest timestamp.
    #[serde(rename = "stringLast")]
    StringLast(FirstLastAgg),
    /// Approximate distinct count (Druid's `hyperUnique`), kept as a DataSketches HLL sketch.
    #[serde(rename = "hyperUnique", rename_all = "camelCase")]
    HyperUnique(SketchAgg),
    /// Approximate distinct count as an Apache DataSketches HLL sketch (`HLLSketchBuild`).
    #[serde(rename = "HLLSketchBuild", rename_all = "camelCase")]
    HllSketchBuild(SketchAgg),
    /// Distinct count with set operations, as an Apache DataSketches theta sketch.
    #[serde(rename = "thetaSketch", rename_all = "camelCase")]
    ThetaSketch(ThetaAgg),
    /// Quantiles of a numeric field, as an Apache DataSketches KLL sketch of doubles
    /// ([`crate::sketches::Quantiles`]).
    #[serde(rename = "quantilesDoublesSketch", rename_all = "camelCase")]
    QuantilesSketch(QuantilesAgg),
}

/// Fields of `thetaSketch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThetaAgg {
    /// Output column name.
    pub name: String,
    /// Input field whose distinct values are counted (or a theta sketch column).
    pub field_name: String,
    /// Entries the sketch retains, a power of 2 (default 16,384).
    pub size: Option<u32>,
    /// Whether the input holds serialized sketches: only for sketch columns at query time.
    pub is_input_theta_sketch: Option<bool>,
    /// Whether the result is the estimate (default) or the sketch.
    pub should_finalize: Option<bool>,
    /// Standard deviations of the error bounds of a finalized result: not supported.
    pub error_bounds_std_dev: Option<u32>,
}

/// Fields of `quantilesDoublesSketch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuantilesAgg {
    /// Output column name.
    pub name: String,
    /// Input field (numbers) or a quantiles sketch column.
    pub field_name: String,
    /// Druid's accuracy parameter, a power of 2 (default 128).
    pub k: Option<u16>,
    /// Druid's bound on values counted for its buffers: accepted, not needed here.
    pub max_stream_length: Option<u64>,
    /// Whether the result is the count of values (default) or the sketch.
    pub should_finalize: Option<bool>,
}

/// Fields of the numeric sum/min/max aggregators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumericAgg {
    /// Output column name.
    pub name: String,
    /// Input field; either this or `expression` is required.
    pub field_name: Option<String>,
    /// A Druid expression computing the input, instead of `fieldName`.
    pub expression: Option<String>,
}

/// Fields of the first/last aggregators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FirstLastAgg {
    /// Output column name.
    pub name: String,
    /// Input field.
    pub field_name: String,
    /// Column holding the time to order by; only `__time` is supported.
    pub time_column: Option<String>,
    /// Longest string kept by `stringFirst`/`stringLast`, in bytes (default 1024).
    pub max_string_bytes: Option<u32>,
}

/// Fields of the distinct-count sketch aggregators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SketchAgg {
    /// Output column name.
    pub name: String,
    /// Input field whose distinct values are counted.
    pub field_name: String,
    /// log2 of the number of sketch buckets, 4..=21 (default 12).
    #[serde(rename = "lgK")]
    pub lg_k: Option<u8>,
    /// Sketch register width: `HLL_4`, `HLL_6` or `HLL_8` (default `HLL_4`).
    pub tgt_hll_type: Option<String>,
    /// Whether estimates are rounded; applies at query time.
    pub round: Option<bool>,
    /// `hyperUnique` input already holding sketches: not supported.
    pub is_input_hyper_unique: Option<bool>,
}

/// The physical kind of an aggregator's stored value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MetricKind {
    /// 64-bit signed integer.
    Long,
    /// 64-bit float.
    Double,
    /// 32-bit float.
    Float,
    /// (time, long) pair ordered by time.
    LongFirstLast,
    /// (time, double) pair ordered by time.
    DoubleFirstLast,
    /// (time, float) pair ordered by time.
    FloatFirstLast,
    /// (time, string) pair ordered by time.
    StringFirstLast,
    /// A serialized HLL sketch.
    HllSketch,
    /// A serialized theta sketch.
    ThetaSketch,
    /// A serialized quantiles (KLL) sketch.
    QuantilesSketch,
}

impl AggregatorSpec {
    /// The output column name.
    pub fn name(&self) -> &str {
        use AggregatorSpec::*;
        match self {
            Count { name } => name,
            LongSum(a) | DoubleSum(a) | FloatSum(a) | LongMin(a) | LongMax(a) | DoubleMin(a) | DoubleMax(a)
            | FloatMin(a) | FloatMax(a) => &a.name,
            LongFirst(a) | LongLast(a) | DoubleFirst(a) | DoubleLast(a) | FloatFirst(a) | FloatLast(a)
            | StringFirst(a) | StringLast(a) => &a.name,
            HyperUnique(a) | HllSketchBuild(a) => &a.name,
            ThetaSketch(a) => &a.name,
            QuantilesSketch(a) => &a.name,
        }
    }

    /// The input field read by the aggregator, if it reads one by name.
    pub fn field_name(&self) -> Option<&str> {
        use AggregatorSpec::*;
        match self {
            Count { .. } => None,
            LongSum(a) | DoubleSum(a) | FloatSum(a) | LongMin(a) | LongMax(a) | DoubleMin(a) | DoubleMax(a)
            | FloatMin(a) | FloatMax(a) => a.field_name.as_deref(),
            LongFirst(a) | LongLast(a) | DoubleFirst(a) | DoubleLast(a) | FloatFirst(a) | FloatLast(a)
            | StringFirst(a) | StringLast(a) => Some(&a.field_name),
            HyperUnique(a) | HllSketchBuild(a) => Some(&a.field_name),
            ThetaSketch(a) => Some(&a.field_name),
            QuantilesSketch(a) => Some(&a.field_name),
        }
    }

    /// The column a first/last aggregator orders by, when it names one (`timeColumn`).
    pub fn time_column(&self) -> Option<&str> {
        use AggregatorSpec::*;
        match self {
            LongFirst(a) | LongLast(a) | DoubleFirst(a) | DoubleLast(a) | FloatFirst(a) | FloatLast(a)
            | StringFirst(a) | StringLast(a) => a.time_column.as_deref(),
            _ => None,
        }
    }

    /// The Druid type name, as written in the spec.
    pub fn type_name(&self) -> &'static str {
        use AggregatorSpec::*;
        match self {
            Count { .. } => "count",
            LongSum(_) => "longSum",
            DoubleSum(_) => "doubleSum",
            FloatSum(_) => "floatSum",
            LongMin(_) => "longMin",
            LongMax(_) => "longMax",
            DoubleMin(_) => "doubleMin",
            DoubleMax(_) => "doubleMax",
            FloatMin(_) => "floatMin",
            FloatMax(_) => "floatMax",
            LongFirst(_) => "longFirst",
            LongLast(_) => "longLast",
            DoubleFirst(_) => "doubleFirst",
            DoubleLast(_) => "doubleLast",
            FloatFirst(_) => "floatFirst",
            FloatLast(_) => "floatLast",
            StringFirst(_) => "stringFirst",
            StringLast(_) => "stringLast",
            HyperUnique(_) => "hyperUnique",
            HllSketchBuild(_) => "HLLSketchBuild",
            ThetaSketch(_) => "thetaSketch",
            QuantilesSketch(_) => "quantilesDoublesSketch",
        }
    }

    /// How the aggregator's value is stored.
    pub fn metric_kind(&self) -> MetricKind {
        use AggregatorSpec::*;
        match self {
            Count { .. } | LongSum(_) | LongMin(_) | LongMax(_) => MetricKind::Long,
            DoubleSum(_) | DoubleMin(_) | DoubleMax(_) => MetricKind::Double,
            FloatSum(_) | FloatMin(_) | FloatMax(_) => MetricKind::Float,
            LongFirst(_) | LongLast(_) => MetricKind::LongFirstLast,
            DoubleFirst(_) | DoubleLast(_) => MetricKind::DoubleFirstLast,
            FloatFirst(_) | FloatLast(_) => MetricKind::FloatFirstLast,
            StringFirst(_) | StringLast(_) => MetricKind::StringFirstLast,
            HyperUnique(_) | HllSketchBuild(_) => MetricKind::HllSketch,
            ThetaSketch(_) => MetricKind::ThetaSketch,
            QuantilesSketch(_) => MetricKind::QuantilesSketch,
        }
    }
}

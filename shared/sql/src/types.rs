//! Druid SQL's column types: how each reads in `INFORMATION_SCHEMA`, in the native query a
//! column is planned into, and in JDBC's codes (which SQLAlchemy dialects map).

use sluice_format::segment::{ColumnEntry, ColumnType};

/// The SQL type of a column or expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlType {
    /// `__time` and time functions' results: milliseconds, shown as ISO 8601.
    Timestamp,
    /// Strings.
    Varchar,
    /// 64-bit integers.
    Bigint,
    /// 64-bit floats.
    Double,
    /// 32-bit floats.
    Float,
    /// Conditions in a select list: shown as `true` or `false`.
    Boolean,
    /// A metric SQL cannot compute with (a sketch), by its type name.
    Complex(String),
}

impl SqlType {
    /// The type of a segment column.
    pub fn of_column(entry: &ColumnEntry) -> Self {
        match entry.kind {
            ColumnType::Time => SqlType::Timestamp,
            ColumnType::String => SqlType::Varchar,
            ColumnType::Json => SqlType::Complex("json".into()),
            ColumnType::Long => SqlType::Bigint,
            ColumnType::Double => SqlType::Double,
            ColumnType::Float => SqlType::Float,
            ColumnType::Metric => match entry.aggregator.as_ref().map(|a| (a.metric_kind(), a.type_name())) {
                Some((sluice_format::spec::MetricKind::Long, _)) => SqlType::Bigint,
                Some((sluice_format::spec::MetricKind::Double, _)) => SqlType::Double,
                Some((sluice_format::spec::MetricKind::Float, _)) => SqlType::Float,
                Some((_, name)) => SqlType::Complex(name.to_string()),
                None => SqlType::Complex("unknown".into()),
            },
        }
    }

    /// The name `INFORMATION_SCHEMA.COLUMNS.DATA_TYPE` and `sqlTypesHeader` give.
    pub fn sql_name(&self) -> String {
        match self {
            SqlType::Timestamp => "TIMESTAMP".into(),
            SqlType::Varchar => "VARCHAR".into(),
            SqlType::Bigint => "BIGINT".into(),
            SqlType::Double => "DOUBLE".into(),
            SqlType::Float => "FLOAT".into(),
            SqlType::Boolean => "BOOLEAN".into(),
            SqlType::Complex(name) => format!("COMPLEX<{name}>"),
        }
    }

    /// The native type `typesHeader` gives: `LONG`, `STRING`, `DOUBLE`, `FLOAT` or `COMPLEX<...>`.
    pub fn native_name(&self) -> String {
        match self {
            SqlType::Timestamp | SqlType::Bigint | SqlType::Boolean => "LONG".into(),
            SqlType::Varchar => "STRING".into(),
            SqlType::Double => "DOUBLE".into(),
            SqlType::Float => "FLOAT".into(),
            SqlType::Complex(name) => format!("COMPLEX<{name}>"),
        }
    }

    /// `java.sql.Types` code (`INFORMATION_SCHEMA.COLUMNS.JDBC_TYPE`).
    pub fn jdbc_type(&self) -> i64 {
        match self {
            SqlType::Timestamp => 93,
            SqlType::Varchar => 12,
            SqlType::Bigint => -5,
            SqlType::Double => 8,
            SqlType::Float => 6,
            SqlType::Boolean => 16,
            SqlType::Complex(_) => 1111,
        }
    }

    /// Whether arithmetic applies.
    pub fn is_numeric(&self) -> bool {
        matches!(self, SqlType::Bigint | SqlType::Double | SqlType::Float | SqlType::Boolean | SqlType::Timestamp)
    }

    /// Whether values are integers (longs in native queries).
    pub fn is_integer(&self) -> bool {
        matches!(self, SqlType::Bigint | SqlType::Boolean | SqlType::Timestamp)
    }

    /// The type native filters, dimension specs and virtual columns compare as: `LONG`,
    /// `DOUBLE` or `STRING`, or `COMPLEX<json>` for documents (kept whole).
    pub fn value_type(&self) -> &'static str {
        match self {
            SqlType::Timestamp | SqlType::Bigint | SqlType::Boolean => "LONG",
            SqlType::Double | SqlType::Float => "DOUBLE",
            SqlType::Complex(kind) if kind == "json" => "COMPLEX<json>",
            SqlType::Varchar | SqlType::Complex(_) => "STRING",
        }
    }

    /// The type of arithmetic over `self` and `other`: integers stay integers.
    pub fn arithmetic(&self, other: &SqlType) -> SqlType {
        if self.is_integer() && other.is_integer() {
            SqlType::Bigint
        } else {
            SqlType::Double
        }
    }
}

/// A named, typed column of a relation or a result.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The name.
    pub name: String,
    /// The type.
    pub ty: SqlType,
}

impl Column {
    /// A column.
    pub fn new(name: impl Into<String>, ty: SqlType) -> Self {
        Self { name: name.into(), ty }
    }
}

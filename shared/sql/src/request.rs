//! Druid's SQL request body: `query`, `resultFormat`, the header flags, `parameters` and
//! `context`.

use crate::SqlError;
use serde::Deserialize;

/// Longest SQL text accepted.
pub const MAX_SQL_BYTES: usize = 256 << 10;
/// Most `?` parameters a request may bind.
pub const MAX_PARAMETERS: usize = 1_000;

/// A Druid SQL request.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SqlRequest {
    /// The SQL text.
    pub query: String,
    /// How rows are written (`object` by default).
    #[serde(default)]
    pub result_format: ResultFormat,
    /// A first row naming the columns.
    #[serde(default)]
    pub header: bool,
    /// With `header`, each column's native type.
    #[serde(default)]
    pub types_header: bool,
    /// With `header`, each column's SQL type.
    #[serde(default)]
    pub sql_types_header: bool,
    /// Values of the `?` placeholders, in order.
    #[serde(default)]
    pub parameters: Vec<Parameter>,
    /// Query context: `sqlTimeZone`, `useApproximateCountDistinct`, `timeout`,
    /// `maxSubqueryRows`, `maxSubqueryBytes`, `maxScatterGatherBytes`, ...
    #[serde(default)]
    pub context: serde_json::Map<String, serde_json::Value>,
}

impl SqlRequest {
    /// A request for `query` with every option at its default.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            result_format: ResultFormat::Object,
            header: false,
            types_header: false,
            sql_types_header: false,
            parameters: Vec::new(),
            context: serde_json::Map::new(),
        }
    }

    /// Reads a request body, naming the field at fault.
    pub fn parse(body: &str) -> Result<Self, SqlError> {
        let mut de = serde_json::Deserializer::from_str(body);
        let request: SqlRequest = serde::Deserialize::deserialize(&mut de)
            .map_err(|e| SqlError::Request(format!("not a Druid SQL request: {e}")))?;
        if request.query.len() > MAX_SQL_BYTES {
            return Err(SqlError::Request(format!(
                "query is {} bytes, over the limit of {MAX_SQL_BYTES}",
                request.query.len()
            )));
        }
        if request.parameters.len() > MAX_PARAMETERS {
            return Err(SqlError::Request(format!("more than {MAX_PARAMETERS} parameters")));
        }
        Ok(request)
    }

    /// Whether `COUNT(DISTINCT x)` may be approximate (`useApproximateCountDistinct`, true
    /// by default as in Druid).
    pub fn approximate_count_distinct(&self) -> bool {
        self.context.get("useApproximateCountDistinct").and_then(|v| v.as_bool()).unwrap_or(true)
    }
}

/// A `?` parameter: `{"type": "VARCHAR", "value": "x"}`.
#[derive(Debug, Clone, Deserialize)]
pub struct Parameter {
    /// The SQL type: `VARCHAR`, `BIGINT`, `INTEGER`, `DOUBLE`, `FLOAT`, `BOOLEAN`, `TIMESTAMP`, `DATE`.
    #[serde(rename = "type")]
    pub ty: String,
    /// The value (null allowed).
    pub value: serde_json::Value,
}

/// How result rows are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResultFormat {
    /// A JSON array of objects.
    #[default]
    Object,
    /// A JSON array of arrays.
    Array,
    /// One JSON object per line, then an empty line.
    ObjectLines,
    /// One JSON array per line, then an empty line.
    ArrayLines,
    /// Comma-separated values, then an empty line.
    Csv,
}

impl ResultFormat {
    /// A format by its name (`object`, `array`, `objectLines`, `arrayLines`, `csv`).
    pub fn from_name(name: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
    }

    /// The response's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            ResultFormat::Object | ResultFormat::Array => "application/json",
            ResultFormat::ObjectLines | ResultFormat::ArrayLines | ResultFormat::Csv => "text/plain",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_druid_requests_and_names_bad_fields() {
        let r = SqlRequest::parse(
            r#"{"query": "SELECT 1", "resultFormat": "arrayLines", "header": true, "typesHeader": true,
                "parameters": [{"type": "VARCHAR", "value": "x"}], "context": {"sqlTimeZone": "UTC"}}"#,
        )
        .expect("request");
        assert_eq!(r.result_format, ResultFormat::ArrayLines);
        assert!(r.header && r.types_header && !r.sql_types_header);
        assert_eq!(r.parameters[0].value, serde_json::json!("x"));
        let err = SqlRequest::parse(r#"{"query": "SELECT 1", "resultFormat": "xml"}"#).expect_err("format");
        assert!(err.to_string().contains("xml"), "{err}");
        let err = SqlRequest::parse(r#"{"sql": "SELECT 1"}"#).expect_err("field");
        assert!(err.to_string().contains("query"), "{err}");
        // Fields other clients send (the web console's query id) are ignored, as Druid does.
        assert!(SqlRequest::parse(r#"{"query": "SELECT 1", "sqlQueryId": "x"}"#).is_ok());
        assert_eq!(ResultFormat::from_name("csv"), Some(ResultFormat::Csv));
    }
}

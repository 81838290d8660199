//! Errors of SQL queries, each with the Druid error JSON fields it is answered with.

use sluice_query::QueryError;

/// Why a SQL query was not answered.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The request body is not a Druid SQL request.
    #[error("{0}")]
    Request(String),
    /// The text does not parse; the message names the line and column.
    #[error("{message}")]
    Parse {
        /// What was expected and where.
        message: String,
        /// 1-based line of the problem, when known.
        line: Option<u64>,
        /// 1-based column of the problem, when known.
        column: Option<u64>,
    },
    /// The query names a table or column that does not exist, or mixes things wrongly.
    #[error("{0}")]
    Validation(String),
    /// A construct Sluice does not plan, named.
    #[error("{0}")]
    Unsupported(String),
    /// The planned native query failed.
    #[error(transparent)]
    Query(#[from] QueryError),
}

impl SqlError {
    /// A validation error.
    pub fn validation(message: impl Into<String>) -> Self {
        SqlError::Validation(message.into())
    }

    /// An unsupported-construct error.
    pub fn unsupported(construct: impl std::fmt::Display) -> Self {
        SqlError::Unsupported(format!("{construct} is not supported"))
    }

    /// Druid's `error` and `errorClass` for this error, and whether the client is at fault.
    pub fn druid_kind(&self) -> (&'static str, &'static str, bool) {
        match self {
            SqlError::Request(_) => ("Invalid request", "java.lang.IllegalArgumentException", true),
            SqlError::Parse { .. } => ("SQL parse failed", "org.apache.calcite.sql.parser.SqlParseException", true),
            SqlError::Validation(_) => ("Plan validation failed", "org.apache.calcite.tools.ValidationException", true),
            SqlError::Unsupported(_) => {
                ("Unsupported operation", "org.apache.druid.sql.calcite.planner.UnsupportedSQLQueryException", true)
            }
            SqlError::Query(QueryError::Invalid { .. } | QueryError::Unsupported(_)) => {
                ("Plan validation failed", "org.apache.druid.query.QueryException", true)
            }
            SqlError::Query(QueryError::Timeout(_)) => {
                ("Query timeout", "org.apache.druid.query.QueryTimeoutException", false)
            }
            SqlError::Query(_) => ("Unknown exception", "org.apache.druid.query.QueryException", false),
        }
    }
}

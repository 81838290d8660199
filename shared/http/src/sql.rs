//! `POST /druid/v2/sql`: Druid's SQL request answered in the result format it asks for, or
//! Druid's error JSON (400 for SQL that does not parse, plan or is not supported); through the
//! broker when queries fan out (`sql_broker`).

use super::sql_broker::BrokerSegments;
use super::sql_system::WithIngestion;
use super::{ApiError, ApiState};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use sluice_sql::{run_sql, Segments, SqlError, SqlRequest, StoreSegments};
use std::sync::Arc;

/// Answers a SQL request.
pub async fn query(State(s): State<Arc<ApiState>>, body: String) -> Result<Response, ApiError> {
    let request = SqlRequest::parse(&body)?;
    let (meta, store, cache) = (s.meta.as_ref(), s.store.as_ref(), s.cache.as_ref());
    let result = match &s.fanout {
        Some(fanout) => {
            let segments = BrokerSegments::new(meta, store, cache, fanout, &s.tables);
            run_sql(&WithIngestion::new(&segments, meta), &request).await?
        }
        None => run_sql(&WithIngestion::new(&StoreSegments::new(meta, store, cache), meta), &request).await?,
    };
    let body = result.render(&request);
    Ok(([(header::CONTENT_TYPE, request.result_format.content_type())], body).into_response())
}

/// The table of `datasource` as SQL reads it (its columns and visible segments), `None`
/// without segments.
pub async fn table_of(s: &ApiState, datasource: &str) -> Result<Option<Arc<sluice_sql::Table>>, SqlError> {
    let (meta, store, cache) = (s.meta.as_ref(), s.store.as_ref(), s.cache.as_ref());
    match &s.fanout {
        Some(fanout) => BrokerSegments::new(meta, store, cache, fanout, &s.tables).table(datasource).await,
        None => StoreSegments::new(meta, store, cache).table(datasource).await,
    }
}

impl From<SqlError> for ApiError {
    fn from(e: SqlError) -> Self {
        let (error, class, client) = e.druid_kind();
        let status = match &e {
            SqlError::Query(sluice_query::QueryError::Timeout(_)) => StatusCode::GATEWAY_TIMEOUT,
            _ if client => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, error, class, e.to_string())
    }
}

//! `POST /druid/v2/sql`: Druid's SQL request answered in the result format it asks for, or
//! Druid's error JSON (400 for SQL that does not parse, plan or is not supported); through the
//! broker when queries fan out (`sql_broker`).

use super::sql_broker::BrokerSegments;
use super::sql_system::WithIngestion;
use super::{ApiError, ApiState};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use sluice_format::time::Interval;
use sluice_query::ReadPlan;
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

/// The table of `datasource`'s visible segments overlapping `within` (their columns and
/// segments, read from their directories alone), `None` without segments there.
pub async fn table_in(s: &ApiState, datasource: &str, within: Interval) -> Result<Option<sluice_sql::Table>, SqlError> {
    let (meta, store, cache) = (s.meta.as_ref(), s.store.as_ref(), s.cache.as_ref());
    let directories = ReadPlan::directory_only();
    let source = StoreSegments::new(meta, store, cache);
    let segments = source.segments(datasource, &[within], Some(&directories)).await?;
    Ok(sluice_sql::Table::of(datasource, &segments))
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

//! `sys.supervisors` and `sys.tasks` for SQL: around any source of segments, the supervisors'
//! states and the tasks (live ones and the kept reports of finished ones) read from the
//! metadata store, as the supervisor and task APIs read them.

use super::supervisor_report;
use super::tasks::{list_tasks, ListFilter};
use async_trait::async_trait;
use serde_json::Value;
use sluice_format::time::Interval;
use sluice_pipeline::datasource;
use sluice_query::{PartialCache, QueryError, QuerySegment, ReadPlan};
use sluice_sql::{Segments, ServerRow, SqlError, SupervisorRow, Table, TaskRow};
use sluice_store::metadata::MetadataStore;
use std::sync::Arc;

/// Supervisors `sys.supervisors` lists at most (each costs a status read).
const MAX_SUPERVISOR_ROWS: usize = 1_000;

/// `inner`'s segments, with the supervisors and tasks of `meta`.
pub struct WithIngestion<'a> {
    inner: &'a dyn Segments,
    meta: &'a dyn MetadataStore,
}

impl<'a> WithIngestion<'a> {
    /// `inner`'s segments; `meta`'s supervisors and tasks.
    pub fn new(inner: &'a dyn Segments, meta: &'a dyn MetadataStore) -> Self {
        Self { inner, meta }
    }
}

fn source_error(e: impl std::fmt::Display) -> SqlError {
    SqlError::Query(QueryError::Source(e.to_string()))
}

#[async_trait]
impl Segments for WithIngestion<'_> {
    async fn datasources(&self) -> Result<Vec<String>, SqlError> {
        self.inner.datasources().await
    }

    async fn segments(
        &self,
        datasource: &str,
        intervals: &[Interval],
        plan: Option<&ReadPlan>,
    ) -> Result<Arc<Vec<QuerySegment>>, SqlError> {
        self.inner.segments(datasource, intervals, plan).await
    }

    fn partials(&self) -> Option<Arc<PartialCache>> {
        self.inner.partials()
    }

    async fn lookups(
        &self,
        names: &std::collections::BTreeSet<String>,
    ) -> Result<Arc<sluice_format::lookup::Lookups>, SqlError> {
        self.inner.lookups(names).await
    }

    async fn table(&self, datasource: &str) -> Result<Option<Arc<Table>>, SqlError> {
        self.inner.table(datasource).await
    }

    async fn fan_out(&self, native: &str) -> Option<Result<Value, SqlError>> {
        self.inner.fan_out(native).await
    }

    async fn supervisors(&self) -> Result<Vec<SupervisorRow>, SqlError> {
        let names = datasource::list(self.meta).await.map_err(source_error)?;
        let mut rows = Vec::new();
        for name in names.iter().take(MAX_SUPERVISOR_ROWS) {
            let st = sluice_pipeline::supervisor::status(self.meta, name).await.map_err(source_error)?;
            let (item, _) = datasource::load(self.meta, name).await.map_err(source_error)?;
            rows.push(supervisor_report::row(name, &st, &item.spec));
        }
        Ok(rows)
    }

    fn servers(&self) -> Vec<ServerRow> {
        self.inner.servers()
    }

    async fn tasks(&self) -> Result<Vec<TaskRow>, SqlError> {
        let tasks = list_tasks(self.meta, &ListFilter::everything()).await.map_err(|e| source_error(e.message()))?;
        Ok(tasks.iter().map(|t| t.row()).collect())
    }
}

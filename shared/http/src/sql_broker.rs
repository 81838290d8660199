//! Druid SQL through the broker, when the api function fans queries out: each timeseries, topN
//! or groupBy a SQL query plans over a table is answered by `sluice_broker::run_query`, which
//! sends it to query workers past its threshold (and answers it here below it), and a table's
//! schema comes from its segments' directories alone, read with ranged GETs (two per segment,
//! sixteen at once) and kept while the datasource's visible segments stay the same. Without a
//! fan-out, SQL reads its tables through the segment cache as before.

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use serde_json::Value;
use sluice_broker::FanOut;
use sluice_format::time::{Interval, ETERNITY_END, ETERNITY_START};
use sluice_query::ranged::read_parts;
use sluice_query::source::segment_id;
use sluice_query::ReadPlan;
use sluice_query::{visible_records, PartialCache, QuerySegment, SegmentCache};
use sluice_sql::{Segments, ServerRow, SqlError, StoreSegments, Table};
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

/// Datasources whose tables a cache keeps; past it, the one used longest ago is dropped.
pub const MAX_KEPT_TABLES: usize = 64;
/// Segment directories read at once.
const PARALLEL_DIRECTORIES: usize = 16;

/// Tables kept by datasource, each with a fingerprint of the visible segments it was read from.
#[derive(Debug, Default)]
pub struct TableCache {
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    tick: u64,
    by_datasource: HashMap<String, KeptTable>,
}

#[derive(Debug)]
struct KeptTable {
    fingerprint: u64,
    table: Arc<Table>,
    used: u64,
}

impl TableCache {
    fn get(&self, datasource: &str, fingerprint: u64) -> Option<Arc<Table>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.tick += 1;
        let tick = kept.tick;
        let entry = kept.by_datasource.get_mut(datasource).filter(|e| e.fingerprint == fingerprint)?;
        entry.used = tick;
        Some(entry.table.clone())
    }

    fn put(&self, datasource: &str, fingerprint: u64, table: Arc<Table>) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.by_datasource.len() >= MAX_KEPT_TABLES && !kept.by_datasource.contains_key(datasource) {
            let oldest = kept.by_datasource.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                kept.by_datasource.remove(&oldest);
            }
        }
        let used = kept.tick;
        kept.by_datasource.insert(datasource.to_string(), KeptTable { fingerprint, table, used });
    }
}

/// The stores' segments for one SQL request, with the broker's fan-out.
pub struct BrokerSegments<'a> {
    inner: StoreSegments<'a>,
    meta: &'a dyn MetadataStore,
    store: &'a dyn ObjectStore,
    cache: Option<&'a SegmentCache>,
    fanout: &'a FanOut,
    tables: &'a TableCache,
}

impl<'a> BrokerSegments<'a> {
    /// Segments of `meta`'s timelines in `store`, through `cache`, fanned out by `fanout`.
    pub fn new(
        meta: &'a dyn MetadataStore,
        store: &'a dyn ObjectStore,
        cache: Option<&'a SegmentCache>,
        fanout: &'a FanOut,
        tables: &'a TableCache,
    ) -> Self {
        Self { inner: StoreSegments::new(meta, store, cache), meta, store, cache, fanout, tables }
    }
}

#[async_trait]
impl Segments for BrokerSegments<'_> {
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
        let all = [Interval::new(ETERNITY_START, ETERNITY_END)];
        let (records, _) = visible_records(self.meta, self.cache, datasource, &all, None).await?;
        if records.is_empty() {
            return Ok(None);
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        for r in &records {
            (&r.key, r.num_bytes, r.interval.start, r.interval.end).hash(&mut hasher);
        }
        let fingerprint = hasher.finish();
        if let Some(table) = self.tables.get(datasource, fingerprint) {
            return Ok(Some(table));
        }
        let directories_only = ReadPlan::directory_only();
        let (store, only) = (self.store, &directories_only);
        let segments: Vec<QuerySegment> = futures::stream::iter(records)
            .map(|r| async move {
                let segment = read_parts(store, &r.key, r.num_bytes, Some(only)).await?;
                Ok::<_, SqlError>(QuerySegment { id: segment_id(datasource, &r), interval: r.interval, segment })
            })
            .buffered(PARALLEL_DIRECTORIES)
            .try_collect()
            .await?;
        let table = Table::of(datasource, &segments).map(Arc::new);
        if let Some(t) = &table {
            self.tables.put(datasource, fingerprint, t.clone());
        }
        Ok(table)
    }

    fn servers(&self) -> Vec<ServerRow> {
        ServerRow::fanning_out(&sluice_sql::servers::this_process(), self.fanout.invoker.name())
    }

    async fn fan_out(&self, native: &str) -> Option<Result<Value, SqlError>> {
        let answer = sluice_broker::run_query(self.meta, self.store, self.cache, Some(self.fanout), native).await;
        Some(answer.map(|a| a.result).map_err(SqlError::from))
    }
}

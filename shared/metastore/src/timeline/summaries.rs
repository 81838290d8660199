//! Segment summaries read for queries, kept between them. A record's summary is an item of its
//! own (`sum#`, [`SummaryItem`]) read only for the records a query's interval selected, and
//! only when its filter may prune them; a record an earlier release wrote carries it inline,
//! and a real-time task's hydrant has none. A summary never changes under its record's object
//! key (which names the datasource, chunk, version and partition) and merge, and an item naming
//! another record is not read as this one's: one kept is current for as long as its record.

use crate::timeline::REALTIME_VERSION;
use sluice_format::summary::SegmentSummary;
use sluice_layout::keys::datasource_pk;
use sluice_layout::timeline::{SegmentRecord, SummaryItem};
use sluice_store::metadata::{MetaError, MetadataStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Summaries a cache keeps (each at most 16 KB); past it, it starts over.
pub const MAX_KEPT_SUMMARIES: usize = 16_384;

/// What a cache keeps of a record, by its object key and merge: its summary, or that it has none.
type Kept = HashMap<(String, String), Option<Arc<SegmentSummary>>>;

/// Summaries kept by record, shared by the queries of one process.
#[derive(Debug, Default)]
pub struct SummaryCache {
    kept: Mutex<Kept>,
}

impl SummaryCache {
    /// The summary of `record` of `datasource` in its `sum#` item, read once (`None`: a
    /// hydrant's, no item, one naming another record, or one that does not read). A record
    /// that carries its summary inline (an earlier release's) is its caller's to read.
    pub async fn summary(
        &self,
        meta: &dyn MetadataStore,
        datasource: &str,
        record: &SegmentRecord,
    ) -> Result<Option<Arc<SegmentSummary>>, MetaError> {
        if record.version == REALTIME_VERSION {
            return Ok(None);
        }
        let at = (record.key.clone(), record.merge.clone());
        if let Some(kept) = self.kept.lock().unwrap_or_else(PoisonError::into_inner).get(&at) {
            return Ok(kept.clone());
        }
        let item = meta.get(&datasource_pk(datasource), &record.summary_sk()).await?;
        let summary = item
            .and_then(|i| serde_json::from_value::<SummaryItem>(i.body).ok())
            .filter(|s| s.belongs_to(record))
            .and_then(|s| s.summary)
            .map(Arc::new);
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= MAX_KEPT_SUMMARIES {
            kept.clear();
        }
        kept.insert(at, summary.clone());
        Ok(summary)
    }

    /// Summaries kept.
    pub fn len(&self) -> usize {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sluice_format::summary::{ColumnSummary, SummaryLimits};
    use sluice_store::metadata::{open_metadata, Condition, Item};

    fn record(merge: &str) -> SegmentRecord {
        of("w", merge)
    }

    fn of(datasource: &str, merge: &str) -> SegmentRecord {
        let mut r: SegmentRecord = serde_json::from_value(json!({
            "interval": {"start": 0, "end": 3_600_000},
            "version": "v1", "partition": 0, "key": format!("segments/{datasource}/k"), "numRows": 2, "numBytes": 10,
            "dimensions": ["page"], "metrics": [], "merge": merge, "visible": true
        }))
        .expect("record");
        let columns = [("page".to_string(), ColumnSummary::of_strings(["a"], false, &SummaryLimits::default()))];
        r.summary = SegmentSummary::from_columns(2, columns.into_iter().collect(), &SummaryLimits::default());
        r
    }

    #[tokio::test]
    async fn a_summary_item_is_read_once_for_its_record_and_not_for_another() {
        let dir = tempfile::tempdir().expect("dir");
        let meta = open_metadata(&format!("file://{}", dir.path().display())).await.expect("meta");
        let written = record("m1");
        let (bare, item) = written.split_summary();
        let item = item.expect("a summary");
        let put = |sk: String, body| Item::new(datasource_pk("w"), sk, body);
        meta.put(put(written.summary_sk(), serde_json::to_value(&item).expect("json")), Condition::None)
            .await
            .expect("put");
        let cache = SummaryCache::default();
        let read = cache.summary(meta.as_ref(), "w", &bare).await.expect("read");
        assert_eq!(read.as_deref(), written.summary.as_ref());
        // Kept: read again without the store, whose item is now gone.
        meta.delete(&datasource_pk("w"), &written.summary_sk(), Condition::None).await.expect("delete");
        assert_eq!(cache.summary(meta.as_ref(), "w", &bare).await.expect("kept").as_deref(), written.summary.as_ref());
        assert_eq!(cache.len(), 1);
        // The same key written by another merge: the item left by the first is not its summary.
        meta.put(put(written.summary_sk(), serde_json::to_value(&item).expect("json")), Condition::None)
            .await
            .expect("put");
        let other = record("m2").split_summary().0;
        assert_eq!(cache.summary(meta.as_ref(), "w", &other).await.expect("read"), None);
        // A damaged item reads as no summary.
        meta.put(put(written.summary_sk(), json!({"record": 7})), Condition::None).await.expect("put");
        let third = record("m3").split_summary().0;
        assert_eq!(cache.summary(meta.as_ref(), "w", &third).await.expect("read"), None);
        // Another datasource's record of the same sort key and merge is not the kept one's: its
        // own item is read (here none).
        let elsewhere = of("v", "m1").split_summary().0;
        assert_eq!(elsewhere.sk(), bare.sk());
        assert_eq!(cache.summary(meta.as_ref(), "v", &elsewhere).await.expect("read"), None);
        // A hydrant has no summary item: none is read.
        let hydrant = SegmentRecord { version: REALTIME_VERSION.into(), ..bare.clone() };
        meta.delete(&datasource_pk("w"), &written.summary_sk(), Condition::None).await.expect("delete");
        meta.put(put(hydrant.summary_sk(), serde_json::to_value(&item).expect("json")), Condition::None)
            .await
            .expect("put");
        assert_eq!(cache.summary(meta.as_ref(), "w", &hydrant).await.expect("read"), None);
        assert_eq!(cache.len(), 4, "the hydrant is not kept");
    }
}

//! Segments published for a benchmark without the pipeline: described, uploaded and recorded
//! visible in one version, as a publish leaves them, so that queries read them as any other.

use anyhow::{Context, Result};
use sluice_format::time::Interval;
use sluice_pipeline::task::TaskId;
use sluice_pipeline::timeline::{describe, put_record, SegmentRecord};
use sluice_store::metadata::MetadataStore;
use sluice_store::storage::ObjectStore;

/// Uploads `bytes` as segment `partition` of `interval` in `version` and records it visible.
pub(super) async fn publish_segment(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    (interval, version, partition): (Interval, &str, u32),
    bytes: bytes::Bytes,
    task: Option<TaskId>,
) -> Result<SegmentRecord> {
    let record = describe(datasource, interval, version, partition, &bytes, (task, None), "bench")?;
    store.put_if_absent(&record.key, bytes).await.with_context(|| format!("upload {}", record.key))?;
    let published = SegmentRecord { visible: true, ..record };
    put_record(meta, datasource, &published).await.with_context(|| format!("publish {}", published.key))
}

//! Cleanup of finished replaces, a grace period after they finished (longer than a query's
//! reads and segment fetches take): for a published one, its own segments are marked visible,
//! then the segments it replaced are deleted (record and object), then its item; for one
//! abandoned (or running past [`MAX_REPLACE_RUN_MS`], abandoned first), its own segments and
//! then its item. Each step is idempotent and a kill between steps leaves work the next pass
//! finishes. A replace item is deleted last, so a reader that does not find a replace numbered
//! below the counter knows its segments are marked and the ones it replaced are gone.

use super::{abandon, ReplaceError, ReplaceItem, ReplaceState, MAX_REPLACE_RUN_MS};
use crate::item::parse_body;
use crate::keys::{datasource_pk, replace_sk, REPLACE_PREFIX};
use crate::timeline::{delete_record, mark_visible, read_records, SegmentRecord};
use sluice_store::metadata::{Condition, MetaError, MetadataStore};
use sluice_store::storage::ObjectStore;
use std::collections::HashMap;

/// Cleans up the replaces of `datasource` finished for longer than `grace_ms`; returns how
/// many items were deleted.
pub async fn clean_up(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    now_ms: i64,
    grace_ms: i64,
) -> Result<usize, ReplaceError> {
    let pk = datasource_pk(datasource);
    let mut due = Vec::new();
    for item in meta.query(&pk, REPLACE_PREFIX).await? {
        let r: ReplaceItem = parse_body(datasource, &item)?;
        let finished_long_ago = r.finished_ms.is_some_and(|f| f + grace_ms <= now_ms);
        let overdue = r.state == ReplaceState::Running && r.created_ms + MAX_REPLACE_RUN_MS + grace_ms <= now_ms;
        if overdue {
            if let Some(version) = abandon(meta, datasource, &r, item.version, now_ms).await? {
                let abandoned = ReplaceItem { state: ReplaceState::Abandoned, finished_ms: Some(now_ms), ..r };
                due.push((abandoned, version));
            }
        } else if finished_long_ago {
            due.push((r, item.version));
        }
    }
    if due.is_empty() {
        return Ok(0);
    }
    let records: HashMap<String, SegmentRecord> =
        read_records(meta, datasource).await?.into_iter().map(|r| (r.sk(), r)).collect();
    let mut cleaned = 0;
    for (r, version) in due {
        let own = records.values().filter(|s| s.replace == Some(r.id));
        if r.state == ReplaceState::Published {
            for s in own.filter(|s| !s.visible) {
                match mark_visible(meta, datasource, s).await {
                    // Replaced by a later compaction and deleted since it was read.
                    Ok(_) | Err(MetaError::ConditionFailed { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            for sk in &r.replaces {
                if let Some(s) = records.get(sk) {
                    delete_segment(meta, store, datasource, s).await?;
                }
            }
        } else {
            for s in own {
                delete_segment(meta, store, datasource, s).await?;
            }
        }
        match meta.delete(&pk, &replace_sk(r.id), Condition::Version(version)).await {
            Ok(()) => cleaned += 1,
            Err(MetaError::ConditionFailed { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(cleaned)
}

/// Deletes a segment's object, then its record and summary.
async fn delete_segment(
    meta: &dyn MetadataStore,
    store: &dyn ObjectStore,
    datasource: &str,
    s: &SegmentRecord,
) -> Result<(), ReplaceError> {
    store.delete(&s.key).await.map_err(|source| ReplaceError::Storage { object: s.key.clone(), source })?;
    delete_record(meta, datasource, s).await?;
    Ok(())
}

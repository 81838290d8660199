//! Finished tasks' reports as readers see them: the items and their keys are
//! `sluice-layout`'s [`report`](sluice_layout::report) module; cleanup writes them.

use crate::datasource::{parse_body, DatasourceError};
use crate::task::planned_groups;
use futures::{StreamExt, TryStreamExt};
use sluice_layout::keys::{group_pk, report_block_prefix, REPORT_BLOCK};
pub use sluice_layout::report::TaskReport;
use sluice_layout::report::REPORTS_KEPT_PER_GROUP;
use sluice_layout::task::TaskId;
use sluice_store::metadata::MetadataStore;

/// Groups read at once.
const GROUPS_IN_FLIGHT: usize = 16;

/// The report of task `id`, if it finished and was cleaned up and its group still keeps it.
pub async fn find(meta: &dyn MetadataStore, id: &TaskId) -> Result<Option<TaskReport>, DatasourceError> {
    let item = meta.get(&id.pk(), &id.report_sk()).await?;
    item.map(|i| parse_body(&id.datasource, &i)).transpose()
}

/// The newest reports of a datasource, newest first, at most `max`: each group's reports are
/// read back from its newest task number in blocks of [`REPORT_BLOCK`] tasks until it gave
/// `max` or its kept reports end.
pub async fn recent(
    meta: &dyn MetadataStore,
    datasource: &str,
    max: usize,
) -> Result<Vec<TaskReport>, DatasourceError> {
    let groups = planned_groups(meta, datasource).await?;
    let per_group: Vec<Vec<TaskReport>> = futures::stream::iter(groups)
        .map(|(group, next_seq)| group_recent(meta, datasource, group, next_seq, max))
        .buffered(GROUPS_IN_FLIGHT)
        .try_collect()
        .await?;
    let mut out: Vec<TaskReport> = per_group.into_iter().flatten().collect();
    out.sort_by(|a, b| b.finished_ms.cmp(&a.finished_ms).then_with(|| b.id.cmp(&a.id)));
    out.truncate(max);
    Ok(out)
}

async fn group_recent(
    meta: &dyn MetadataStore,
    datasource: &str,
    group: u32,
    next_seq: u64,
    max: usize,
) -> Result<Vec<TaskReport>, DatasourceError> {
    let pk = group_pk(datasource, group);
    let newest = next_seq.saturating_sub(1) / REPORT_BLOCK;
    let oldest = next_seq.saturating_sub(REPORTS_KEPT_PER_GROUP + REPORT_BLOCK) / REPORT_BLOCK;
    let mut out = Vec::new();
    for block in (oldest..=newest).rev() {
        if out.len() >= max {
            break;
        }
        let items = meta.query(&pk, &report_block_prefix(block)).await?;
        for item in items.iter().rev() {
            out.push(parse_body::<TaskReport>(datasource, item)?);
        }
    }
    Ok(out)
}

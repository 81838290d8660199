//! Reading batch tasks: by id (through the id's claim), by datasource, and a task's report
//! (its splits' meters and kept parse exceptions).

use super::BatchError;
use crate::item::{parse_body, DatasourceError};
use crate::keys::{
    batch_pk, batch_task_sk, datasource_pk, BATCH_IDS_PK, BATCH_SPEC_SK, BATCH_TASK_PREFIX, SPLIT_PREFIX,
};
use sluice_format::meters::{MeterTotals, ParseException};
use sluice_format::spec::batch::{load_batch_value, BatchSpec};
use sluice_layout::batch::{BatchIdItem, BatchSpecItem, BatchTaskItem, SplitItem, SplitState};
use sluice_store::metadata::MetadataStore;

/// A batch task by id with its item's version.
pub async fn load_task(meta: &dyn MetadataStore, id: &str) -> Result<(BatchTaskItem, u64), BatchError> {
    find(meta, id).await?.ok_or_else(|| BatchError::Unknown(id.to_string()))
}

/// A batch task by id with its item's version, or `None`.
pub async fn find(meta: &dyn MetadataStore, id: &str) -> Result<Option<(BatchTaskItem, u64)>, BatchError> {
    let Some(claim) = meta.get(BATCH_IDS_PK, id).await? else { return Ok(None) };
    let claim: BatchIdItem = parse_body("", &claim)?;
    let Some(item) = meta.get(&datasource_pk(&claim.datasource), &batch_task_sk(id)).await? else { return Ok(None) };
    Ok(Some((parse_body(&claim.datasource, &item)?, item.version)))
}

/// Every batch task of a datasource, oldest id first.
pub async fn list(meta: &dyn MetadataStore, datasource: &str) -> Result<Vec<BatchTaskItem>, DatasourceError> {
    let items = meta.query(&datasource_pk(datasource), BATCH_TASK_PREFIX).await?;
    items.iter().map(|i| parse_body(datasource, i)).collect()
}

/// The spec a task was submitted with, as submitted.
pub async fn spec_json(meta: &dyn MetadataStore, id: &str, datasource: &str) -> Result<serde_json::Value, BatchError> {
    let item = meta
        .get(&batch_pk(id), BATCH_SPEC_SK)
        .await?
        .ok_or_else(|| BatchError::Unknown(format!("{id}: its spec item")))?;
    Ok(parse_body::<BatchSpecItem>(datasource, &item)?.spec)
}

/// The spec a task was submitted with, loaded.
pub async fn load_spec(meta: &dyn MetadataStore, id: &str, datasource: &str) -> Result<BatchSpec, BatchError> {
    Ok(load_batch_value(spec_json(meta, id, datasource).await?)?.batch)
}

/// Every split of a task with its item's version, in order: those its item counts (a refused
/// resubmission of its id may have written more).
pub async fn splits(meta: &dyn MetadataStore, task: &BatchTaskItem) -> Result<Vec<(SplitItem, u64)>, BatchError> {
    let items = meta.query(&batch_pk(&task.id), SPLIT_PREFIX).await?;
    let mut out = Vec::with_capacity(items.len());
    for item in &items {
        let split: SplitItem = parse_body(&task.datasource, item)?;
        if split.n < task.splits {
            out.push((split, item.version));
        }
    }
    Ok(out)
}

/// What a batch task did so far: Druid's `ingestionStatsAndErrors` numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchReport {
    /// Its row meters, summed over the splits done.
    pub meters: MeterTotals,
    /// Splits done, of all.
    pub splits_done: u32,
    /// Its splits.
    pub splits: u32,
    /// The kept parse exceptions, with the piece each names.
    pub exceptions: Vec<(String, ParseException)>,
    /// Why splits failed or were given back.
    pub errors: Vec<String>,
}

/// A task's report, read from its splits.
pub async fn report(meta: &dyn MetadataStore, task: &BatchTaskItem) -> Result<BatchReport, BatchError> {
    let mut out = BatchReport { splits: task.splits, ..Default::default() };
    for (split, _) in splits(meta, task).await? {
        if split.state == SplitState::Done {
            out.splits_done += 1;
        }
        if let Some(m) = &split.meters {
            out.meters.merge(m);
        }
        for e in split.exceptions {
            let piece = split.pieces.get(e.partition.max(0) as usize).map(|p| p.name()).unwrap_or_default();
            out.exceptions.push((piece, e));
        }
        out.errors.extend(split.error.map(|e| format!("split {}: {e}", split.n)));
    }
    if let Some(m) = &task.meters {
        out.meters = *m;
    }
    Ok(out)
}

//! Indexing tasks: the items and their state machine live in [`crate::layout::task`]; this
//! module reads a task's checkpoints back.

pub use crate::layout::task::{
    Checkpoint, ClaimRefused, HydrantRef, Progress, TaskId, TaskItem, TaskState, CHECKPOINT_ITEM_BYTES,
};

use crate::datasource::{parse_body, DatasourceError};
use sluice_store::metadata::MetadataStore;

/// Reads a task's checkpoints and folds them into its progress.
pub async fn load_progress(meta: &dyn MetadataStore, id: &TaskId) -> Result<Progress, DatasourceError> {
    let items = meta.query(&id.pk(), &id.checkpoint_prefix()).await?;
    let checkpoints =
        items.iter().map(|i| parse_body::<Checkpoint>(&id.datasource, i)).collect::<Result<Vec<_>, _>>()?;
    Ok(Progress::from_checkpoints(checkpoints))
}

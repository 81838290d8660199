//! The stores a command works on: `--metadata` and `--storage` (or `SLUICE_METADATA`,
//! `SLUICE_STORAGE`), by default the embedded backends under `./.sluice/`. Whichever they are,
//! the batch tasks this process submits or runs may not read them as input.

use anyhow::{Context, Result};
use clap::Args;
use sluice_pipeline::batch::own_in_process;
use sluice_store::metadata::{open_metadata, MetadataStore};
use sluice_store::storage::{open_store, ObjectStore};
use std::sync::Arc;

/// Backend options shared by the commands.
#[derive(Args, Debug, Clone)]
pub struct BackendArgs {
    /// Metadata store: dynamodb://TABLE or file:///DIR [default: ./.sluice/metadata].
    #[arg(long, global = true, env = "SLUICE_METADATA")]
    metadata: Option<String>,
    /// Deep storage: s3://BUCKET/PREFIX or file:///DIR [default: ./.sluice/storage].
    #[arg(long, global = true, env = "SLUICE_STORAGE")]
    storage: Option<String>,
}

/// The opened stores.
pub struct Backends {
    /// Metadata store.
    pub meta: Arc<dyn MetadataStore>,
    /// Deep storage.
    pub store: Arc<dyn ObjectStore>,
}

impl BackendArgs {
    /// Opens the stores, creating the embedded ones' folders, and refuses both as batch input
    /// in this process.
    pub async fn open(&self) -> Result<Backends> {
        let meta_url = match &self.metadata {
            Some(url) => url.clone(),
            None => local("metadata")?,
        };
        let storage_url = self.storage_url()?;
        own_in_process(&storage_url, &meta_url);
        Ok(Backends { meta: open_metadata(&meta_url).await?, store: open_store(&storage_url).await? })
    }

    /// The deep storage URL (the embedded folder's `file://` URL by default, created).
    pub fn storage_url(&self) -> Result<String> {
        match &self.storage {
            Some(url) => Ok(url.clone()),
            None => local("storage"),
        }
    }
}

/// The `file://` URL of the embedded backend folder `name`, created.
fn local(name: &str) -> Result<String> {
    let dir = std::env::current_dir()?.join(".sluice").join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    Ok(format!("file://{}", dir.display()))
}

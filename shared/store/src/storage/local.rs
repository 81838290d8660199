//! The local filesystem store: each object is a file under the root; writes go to a temporary
//! file in the same filesystem and are renamed (or, for `put_if_absent`, hard-linked) into
//! place, so a reader sees a whole object or none.
//!
//! An object's version is its file's inode, size and modification time: every write of the
//! store makes a new file (a new inode), so a replaced object is always another version. A
//! file changed in place by something else, keeping its size, within the file system's
//! timestamp granularity, would go unseen: S3's ETag has no such gap.

use super::{check_key, ObjectMeta, ObjectStore, StorageError};
use async_trait::async_trait;
use bytes::Bytes;
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Folder of temporary files, skipped by `list`.
const TMP: &str = ".tmp";

/// A store rooted at a local folder.
#[derive(Debug, Clone)]
pub struct LocalStore {
    url: String,
    root: PathBuf,
}

impl LocalStore {
    /// Opens (creating when needed) the store at `path`.
    pub fn open(url: &str, path: &str) -> Result<Self, StorageError> {
        let root = PathBuf::from(path);
        std::fs::create_dir_all(root.join(TMP)).map_err(|e| StorageError::Unavailable {
            url: url.into(),
            reason: format!("cannot create {}: {e}", root.display()),
        })?;
        Ok(Self { url: url.into(), root })
    }

    fn path(&self, key: &str) -> Result<PathBuf, StorageError> {
        check_key(key)?;
        if key == TMP || key.starts_with(&format!("{TMP}/")) {
            return Err(StorageError::InvalidKey { key: key.into(), reason: format!("{TMP} is reserved") });
        }
        Ok(self.root.join(key))
    }

    fn failed(&self, operation: &'static str, key: &str, e: impl std::fmt::Display) -> StorageError {
        StorageError::Failed { url: self.url.clone(), operation, key: key.into(), message: e.to_string() }
    }

    /// Writes `bytes` to a synced temporary file next to the objects.
    fn temp_with(&self, key: &str, bytes: &[u8]) -> Result<tempfile::NamedTempFile, StorageError> {
        let mut tmp = tempfile::NamedTempFile::new_in(self.root.join(TMP)).map_err(|e| self.failed("put", key, e))?;
        tmp.write_all(bytes).map_err(|e| self.failed("put", key, e))?;
        tmp.as_file().sync_all().map_err(|e| self.failed("put", key, e))?;
        Ok(tmp)
    }

    fn put_blocking(&self, key: &str, bytes: &[u8], if_absent: bool) -> Result<(), StorageError> {
        let path = self.path(key)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| self.failed("put", key, e))?;
        }
        let tmp = self.temp_with(key, bytes)?;
        if if_absent {
            tmp.persist_noclobber(&path).map_err(|e| {
                if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                    StorageError::AlreadyExists { url: self.url.clone(), key: key.into() }
                } else {
                    self.failed("put_if_absent", key, e.error)
                }
            })?;
        } else {
            tmp.persist(&path).map_err(|e| self.failed("put", key, e.error))?;
        }
        sync_dir(path.parent().unwrap_or(&self.root));
        Ok(())
    }

    fn read_blocking(
        &self,
        key: &str,
        range: Option<Range<u64>>,
        version: Option<&str>,
    ) -> Result<Bytes, StorageError> {
        let path = self.path(key)?;
        let mut file = std::fs::File::open(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StorageError::NotFound { url: self.url.clone(), key: key.into() },
            _ => self.failed("get", key, e),
        })?;
        let meta = file.metadata().map_err(|e| self.failed("get", key, e))?;
        // The file opened is the one read: a version checked here cannot change under the read
        // by a rename, which the store's every write is.
        if version.is_some_and(|v| v != file_version(&meta)) {
            return Err(StorageError::Changed { url: self.url.clone(), key: key.into() });
        }
        let len = meta.len();
        let (start, end) = match range {
            None => (0, len),
            Some(r) => (r.start.min(len), r.end.min(len).max(r.start.min(len))),
        };
        let mut buf = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(start)).map_err(|e| self.failed("get", key, e))?;
        file.read_exact(&mut buf).map_err(|e| self.failed("get", key, e))?;
        Ok(Bytes::from(buf))
    }

    fn list_blocking(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StorageError> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(self.failed("list", prefix, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| self.failed("list", prefix, e))?;
                let path = entry.path();
                let rel = path.strip_prefix(&self.root).map_err(|e| self.failed("list", prefix, e))?;
                let key = rel.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/");
                if key == TMP {
                    continue;
                }
                let meta = entry.metadata().map_err(|e| self.failed("list", prefix, e))?;
                if meta.is_dir() {
                    if prefix.starts_with(&format!("{key}/")) || key.starts_with(prefix) || prefix.is_empty() {
                        stack.push(path);
                    }
                } else if key.starts_with(prefix) {
                    out.push(ObjectMeta { key, size: meta.len(), version: Some(file_version(&meta)) });
                }
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }
}

/// A file's version: its inode, size and modification time (ns).
fn file_version(meta: &std::fs::Metadata) -> String {
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    let modified =
        meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    format!("{inode}-{}-{modified}", meta.len())
}

fn sync_dir(dir: &Path) {
    // Makes the rename durable; failure only weakens durability, never correctness.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(StorageError::Unavailable { url: "file://".into(), reason: format!("storage task failed: {e}") })
    })
}

#[async_trait]
impl ObjectStore for LocalStore {
    fn url(&self) -> &str {
        &self.url
    }

    async fn put(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        let (s, k) = (self.clone(), key.to_string());
        blocking(move || s.put_blocking(&k, &bytes, false)).await
    }

    async fn put_if_absent(&self, key: &str, bytes: Bytes) -> Result<(), StorageError> {
        let (s, k) = (self.clone(), key.to_string());
        blocking(move || s.put_blocking(&k, &bytes, true)).await
    }

    async fn get(&self, key: &str) -> Result<Bytes, StorageError> {
        let (s, k) = (self.clone(), key.to_string());
        blocking(move || s.read_blocking(&k, None, None)).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StorageError> {
        let (s, k) = (self.clone(), key.to_string());
        blocking(move || s.read_blocking(&k, Some(range), None)).await
    }

    async fn get_range_if(&self, key: &str, range: Range<u64>, version: &str) -> Result<Bytes, StorageError> {
        let (s, k, v) = (self.clone(), key.to_string(), version.to_string());
        blocking(move || s.read_blocking(&k, Some(range), Some(&v))).await
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StorageError> {
        let path = self.path(key)?;
        match tokio::fs::metadata(&path).await {
            Ok(m) if m.is_file() => {
                Ok(Some(ObjectMeta { key: key.into(), size: m.len(), version: Some(file_version(&m)) }))
            }
            Ok(_) => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.failed("head", key, e)),
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StorageError> {
        let (s, p) = (self.clone(), prefix.to_string());
        blocking(move || s.list_blocking(&p)).await
    }

    async fn delete(&self, key: &str) -> Result<(), StorageError> {
        let path = self.path(key)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.failed("delete", key, e)),
        }
    }
}

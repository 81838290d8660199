//! What batch work may do in a deployment: a spec comes from whoever may submit tasks, and an
//! indexer reads with its own role and file system, so input is read only from the directories
//! and buckets the deployment names (never, by default, anything), never from the deployment's
//! own deep storage, and only so many splits of all tasks run at once.
//!
//! A `local` file is first opened as a path only (`O_PATH`: nothing of the file is opened,
//! so a device or a FIFO is not touched), and what that names is checked (under an allowed
//! directory as the kernel names it, then a regular file) before the same file is opened for
//! reading, so that a link changed between a check and the open cannot lead out. Whatever
//! leads outside the allowed directories (written so, through a link, missing, unreadable) is
//! refused with one error: none tells whether a file outside exists.
//!
//! The deployment's own stores are never input: its deep storage and, when local, its
//! metadata (whose SQLite holds every spec as submitted), as the process opened them
//! ([`STORAGE_ENV`] and [`METADATA_ENV`], or a command's `--storage` and `--metadata` through
//! [`own_in_process`]).

use super::BatchError;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Directories (`:`-separated) whose files `local` input sources may read.
pub const LOCAL_DIRS_ENV: &str = "SLUICE_BATCH_LOCAL_DIRS";
/// Buckets (`,`-separated) whose objects `s3` input sources may read.
pub const S3_BUCKETS_ENV: &str = "SLUICE_BATCH_S3_BUCKETS";
/// Splits of all batch tasks in flight at once, at most (the template's `BatchMaxConcurrentSplits`).
pub const MAX_SPLITS_ENV: &str = "SLUICE_BATCH_MAX_SPLITS";
/// The indexer function's reserved concurrency (the template's `IndexerReservedConcurrency`;
/// unset or 0: none), within which batch splits must leave the stream's tasks room.
pub const INDEXER_RESERVED_ENV: &str = "SLUICE_INDEXER_RESERVED_CONCURRENCY";
/// The deployment's deep storage, which batch input may not be.
pub const STORAGE_ENV: &str = "SLUICE_STORAGE";
/// The deployment's metadata store, which batch input may not be (when it is local files).
pub const METADATA_ENV: &str = "SLUICE_METADATA";
/// Splits in flight at once when [`MAX_SPLITS_ENV`] is not set.
pub const DEFAULT_MAX_SPLITS: u32 = 100;

/// What this process allows beside its environment ([`allow_in_process`]).
static IN_PROCESS: Mutex<Option<BatchAccess>> = Mutex::new(None);

/// Refuses as batch input, in this process, the deployment's deep storage at `storage` and its
/// metadata at `metadata` (their URLs as the process opened them: a command's `--storage` and
/// `--metadata`, or the folders under `./.sluice` it uses by default).
pub fn own_in_process(storage: &str, metadata: &str) {
    let mut extra = IN_PROCESS.lock().expect("access lock");
    let access = extra.take().unwrap_or_default();
    *extra = Some(access.own_storage(storage).own_metadata(metadata));
}

/// Allows this process's indexers the files under `dir` and the objects of `bucket` too (the
/// local `sluice task submit` allows the directories its user names).
pub fn allow_in_process(dir: Option<&Path>, bucket: Option<&str>) {
    let mut extra = IN_PROCESS.lock().expect("access lock");
    let mut access = extra.take().unwrap_or_default();
    if let Some(dir) = dir {
        access = access.allow_dir(dir);
    }
    if let Some(bucket) = bucket {
        access = access.allow_bucket(bucket);
    }
    *extra = Some(access);
}

/// What this process's indexers may read: [`BatchAccess::from_env`] and what
/// [`allow_in_process`] added.
pub fn process_access() -> BatchAccess {
    let mut access = BatchAccess::from_env();
    if let Some(extra) = IN_PROCESS.lock().expect("access lock").as_ref() {
        access.local_dirs.extend(extra.local_dirs.iter().cloned());
        access.given_dirs.extend(extra.given_dirs.iter().cloned());
        access.s3_buckets.extend(extra.s3_buckets.iter().cloned());
        access.own.extend(extra.own.iter().cloned());
    }
    access
}

/// Splits in flight at once as [`MAX_SPLITS_ENV`] sets it ([`DEFAULT_MAX_SPLITS`] when unset
/// or not a count of at least 1), within the indexers' reservation ([`INDEXER_RESERVED_ENV`]):
/// a cap not below it is lowered to half of it, so that the stream's tasks keep the rest. Each
/// of these is logged once per process, not on every call.
pub fn max_splits_from_env() -> u32 {
    let set = std::env::var(MAX_SPLITS_ENV).ok();
    let reserved = std::env::var(INDEXER_RESERVED_ENV).ok();
    max_splits_of(set.as_deref(), reserved.as_deref())
}

/// Whether a malformed [`MAX_SPLITS_ENV`] was logged.
static MALFORMED_LOGGED: AtomicBool = AtomicBool::new(false);
/// Whether a cap lowered to the indexers' reservation was logged.
static CLAMPED_LOGGED: AtomicBool = AtomicBool::new(false);

/// Whether `logged` was not set before (and sets it): the first of many calls logs.
fn first(logged: &AtomicBool) -> bool {
    !logged.swap(true, Ordering::Relaxed)
}

/// The cap [`MAX_SPLITS_ENV`]'s value `set` and [`INDEXER_RESERVED_ENV`]'s `reserved` make.
fn max_splits_of(set: Option<&str>, reserved: Option<&str>) -> u32 {
    let n = match set.map(|v| (v, v.trim().parse::<u32>().ok().filter(|n| *n > 0))) {
        None => DEFAULT_MAX_SPLITS,
        Some((_, Some(n))) => n,
        Some((value, None)) => {
            if first(&MALFORMED_LOGGED) {
                tracing::warn!(value, "{MAX_SPLITS_ENV} is not a count of at least 1; the default is used");
            }
            DEFAULT_MAX_SPLITS
        }
    };
    match reserved.and_then(|r| r.trim().parse::<u32>().ok()).filter(|r| *r > 0) {
        Some(reserved) if n >= reserved => {
            let lowered = (reserved / 2).max(1);
            if first(&CLAMPED_LOGGED) {
                tracing::warn!(
                    splits = n,
                    reserved,
                    lowered,
                    "{MAX_SPLITS_ENV} is not below the indexers' reserved concurrency ({INDEXER_RESERVED_ENV}): \
                     batch splits are capped at half of it, so that the stream's tasks keep the rest"
                );
            }
            lowered
        }
        _ => n,
    }
}

/// Where one of the deployment's own stores is, as batch input may not read it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OwnPlace {
    /// Objects of `bucket` under `prefix` (every object when it is empty).
    S3 { bucket: String, prefix: String },
    /// Files under a directory, canonical.
    Local(PathBuf),
}

/// One of the deployment's own stores: where it is, and what it is (in errors).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Own {
    place: OwnPlace,
    /// "deep storage", "metadata".
    what: &'static str,
}

/// What batch work may do: the directories and buckets its input may come from, and how many
/// splits of all tasks may run at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchAccess {
    /// Directories, canonical.
    local_dirs: Vec<PathBuf>,
    /// The same directories as named (absolute, `.` and `..` resolved without the file system).
    given_dirs: Vec<PathBuf>,
    /// Bucket names.
    s3_buckets: Vec<String>,
    /// The deployment's own stores, never read as input.
    own: Vec<Own>,
    /// Splits in flight at once across the deployment.
    max_splits: u32,
}

impl Default for BatchAccess {
    fn default() -> Self {
        BatchAccess {
            local_dirs: Vec::new(),
            given_dirs: Vec::new(),
            s3_buckets: Vec::new(),
            own: Vec::new(),
            max_splits: DEFAULT_MAX_SPLITS,
        }
    }
}

impl BatchAccess {
    /// What [`LOCAL_DIRS_ENV`], [`S3_BUCKETS_ENV`], [`MAX_SPLITS_ENV`] (within
    /// [`INDEXER_RESERVED_ENV`]), [`STORAGE_ENV`] and [`METADATA_ENV`] say (directories that do
    /// not exist are left out).
    pub fn from_env() -> Self {
        let mut access = BatchAccess { max_splits: max_splits_from_env(), ..BatchAccess::default() };
        if let Ok(dirs) = std::env::var(LOCAL_DIRS_ENV) {
            for dir in dirs.split(':').filter(|d| !d.trim().is_empty()) {
                access = access.allow_dir(Path::new(dir.trim()));
            }
        }
        if let Ok(buckets) = std::env::var(S3_BUCKETS_ENV) {
            for bucket in buckets.split(',').map(str::trim).filter(|b| !b.is_empty()) {
                access = access.allow_bucket(bucket);
            }
        }
        if let Ok(url) = std::env::var(STORAGE_ENV) {
            access = access.own_storage(&url);
        }
        if let Ok(url) = std::env::var(METADATA_ENV) {
            access = access.own_metadata(&url);
        }
        access
    }

    /// Also allows the files under `dir` (when it exists).
    pub fn allow_dir(mut self, dir: &Path) -> Self {
        match dir.canonicalize() {
            Ok(canonical) => {
                self.local_dirs.push(canonical);
                self.given_dirs.push(lexical(dir));
            }
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "a batch input directory is left out"),
        }
        self
    }

    /// Also allows the objects of `bucket`.
    pub fn allow_bucket(mut self, bucket: &str) -> Self {
        self.s3_buckets.push(bucket.to_string());
        self
    }

    /// Refuses the deployment's deep storage at `url` (`s3://bucket/prefix` or
    /// `file:///path`) as input: its hydrants, segments and lookups are no rows of a spec's.
    pub fn own_storage(self, url: &str) -> Self {
        self.own(url, "deep storage")
    }

    /// Refuses the deployment's metadata at `url` as input when it is local files
    /// (`file:///path`: the SQLite store, which holds every spec unredacted); a DynamoDB table
    /// is no file or object.
    pub fn own_metadata(self, url: &str) -> Self {
        self.own(url, "metadata")
    }

    fn own(mut self, url: &str, what: &'static str) -> Self {
        let place = if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let prefix = prefix.trim_matches('/').to_string();
            OwnPlace::S3 { bucket: bucket.to_string(), prefix }
        } else if let Some(path) = url.strip_prefix("file://") {
            let path = Path::new(path);
            OwnPlace::Local(path.canonicalize().unwrap_or_else(|_| lexical(path)))
        } else {
            return self;
        };
        self.own.push(Own { place, what });
        self
    }

    /// The deployment's own store (its name) that `canonical` is in, if any.
    fn own_dir(&self, canonical: &Path) -> Option<&'static str> {
        self.own.iter().find_map(|o| match &o.place {
            OwnPlace::Local(dir) if canonical.starts_with(dir) => Some(o.what),
            _ => None,
        })
    }

    /// Whether `canonical` is in one of the deployment's own stores (a directory walk passes
    /// over them).
    pub(crate) fn is_own(&self, canonical: &Path) -> bool {
        self.own_dir(canonical).is_some()
    }

    /// Allows `n` splits of all tasks in flight at once (at least one).
    pub fn with_max_splits(mut self, n: u32) -> Self {
        self.max_splits = n.max(1);
        self
    }

    /// Splits of all tasks in flight at once, at most.
    pub fn max_splits(&self) -> u32 {
        self.max_splits
    }

    /// `path`, canonical, when it is under an allowed directory (a directory to walk: files
    /// are opened with [`BatchAccess::open_local`]).
    pub fn local_path(&self, path: &Path) -> Result<PathBuf, BatchError> {
        self.check_written(path)?;
        let canonical = path.canonicalize().map_err(|_| outside(path))?;
        self.check_canonical(path, &canonical)?;
        Ok(canonical)
    }

    /// Opens the regular file at `path` when it is under an allowed directory (and not one of
    /// the deployment's own stores) as the kernel names the file opened: the file, its
    /// canonical path and its size.
    pub fn open_local(&self, path: &Path) -> Result<(File, PathBuf, u64), BatchError> {
        self.check_written(path)?;
        open_checked(path, |opened| self.check_canonical(path, opened))
    }

    /// Refuses a path that is not under an allowed directory as written, before the file
    /// system is asked: an error must not tell whether a file outside exists.
    fn check_written(&self, path: &Path) -> Result<(), BatchError> {
        if self.local_dirs.is_empty() {
            return Err(refused(
                path,
                &format!(
                    "local input sources are not allowed here (set {LOCAL_DIRS_ENV} to the directories they may read)"
                ),
            ));
        }
        let written = lexical(path);
        if !self.local_dirs.iter().chain(&self.given_dirs).any(|d| written.starts_with(d)) {
            return Err(outside(path));
        }
        Ok(())
    }

    /// Refuses `canonical` (where `path` leads) outside the allowed directories, or in one of
    /// the deployment's own stores.
    fn check_canonical(&self, path: &Path, canonical: &Path) -> Result<(), BatchError> {
        if !self.local_dirs.iter().any(|d| canonical.starts_with(d)) {
            return Err(outside(path));
        }
        if let Some(what) = self.own_dir(canonical) {
            return Err(refused(path, &format!("the deployment's own {what} is not batch input")));
        }
        Ok(())
    }

    /// Refuses a bucket not allowed.
    pub fn bucket(&self, bucket: &str) -> Result<(), BatchError> {
        if self.s3_buckets.iter().any(|b| b == bucket) {
            Ok(())
        } else {
            Err(BatchError::Input(format!("s3 input from bucket {bucket:?} is not allowed (see {S3_BUCKETS_ENV})")))
        }
    }

    /// The deployment's own stores in S3: bucket, prefix and what each is.
    fn own_s3(&self) -> impl Iterator<Item = (&str, &str, &'static str)> {
        self.own.iter().filter_map(|o| match &o.place {
            OwnPlace::S3 { bucket, prefix } => Some((bucket.as_str(), prefix.as_str(), o.what)),
            OwnPlace::Local(_) => None,
        })
    }

    /// Refuses an object of a bucket not allowed, or of the deployment's deep storage.
    pub fn object(&self, bucket: &str, key: &str) -> Result<(), BatchError> {
        self.bucket(bucket)?;
        for (own, prefix, what) in self.own_s3() {
            if own == bucket && (prefix.is_empty() || key.strip_prefix(prefix).is_some_and(|r| r.starts_with('/'))) {
                return Err(BatchError::Input(format!(
                    "s3://{bucket}/{key}: the deployment's own {what} (s3://{own}/{prefix}) is not batch input"
                )));
            }
        }
        Ok(())
    }

    /// Refuses a listing of `prefix` in `bucket` that would reach into deep storage.
    pub fn listing(&self, bucket: &str, prefix: &str) -> Result<(), BatchError> {
        self.bucket(bucket)?;
        for (own, own_prefix, what) in self.own_s3() {
            let own_dir = format!("{own_prefix}/");
            let overlaps = own_prefix.is_empty() || own_dir.starts_with(prefix) || prefix.starts_with(&own_dir);
            if own == bucket && overlaps {
                return Err(BatchError::Input(format!(
                    "s3://{bucket}/{prefix}: it lists the deployment's own {what} (s3://{own}/{own_prefix}), which is \
                     not batch input"
                )));
            }
        }
        Ok(())
    }
}

fn refused(path: &Path, why: &str) -> BatchError {
    BatchError::Input(format!("local input {}: {why}", path.display()))
}

/// The one refusal of whatever leads outside the allowed directories: written outside, or
/// leading there through a link, missing, unreadable, or a link to nothing.
fn outside(path: &Path) -> BatchError {
    refused(path, &format!("no readable file there under a directory {LOCAL_DIRS_ENV} allows"))
}

/// Opens the regular file at `path` for reading once `check` accepted its canonical path as
/// the kernel names it. Linux: `path` is opened as a path only (`O_PATH`), which opens nothing
/// of the file (no device's open, no FIFO's wait) and needs no read permission; `check` and
/// the file's type are then judged on that, and only a regular file is opened for reading,
/// through `/proc/self/fd`, the very inode checked. Any failure before `check` accepted the
/// path is [`outside`]: where it failed is not told.
#[cfg(target_os = "linux")]
fn open_checked(
    path: &Path,
    check: impl FnOnce(&Path) -> Result<(), BatchError>,
) -> Result<(File, PathBuf, u64), BatchError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let handle =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path).map_err(|_| outside(path))?;
    let fd = format!("/proc/self/fd/{}", handle.as_raw_fd());
    let opened = std::fs::read_link(&fd).map_err(|_| outside(path))?;
    check(&opened)?;
    let meta = handle.metadata().map_err(|e| refused(path, &e.to_string()))?;
    if !meta.is_file() {
        return Err(refused(path, "not a regular file"));
    }
    let file = File::open(&fd).map_err(|e| refused(path, &e.to_string()))?;
    let read = file.metadata().map_err(|e| refused(path, &e.to_string()))?;
    debug_assert_eq!((read.dev(), read.ino()), (meta.dev(), meta.ino()), "/proc/self/fd reopens the inode checked");
    Ok((file, opened, meta.len()))
}

/// Elsewhere: `path` opened without waiting (a FIFO or a device must not block before it is
/// seen not to be a regular file), then resolved and checked to be the file opened.
#[cfg(not(target_os = "linux"))]
fn open_checked(
    path: &Path,
    check: impl FnOnce(&Path) -> Result<(), BatchError>,
) -> Result<(File, PathBuf, u64), BatchError> {
    let file = open_nonblocking(path).map_err(|_| outside(path))?;
    let opened = opened_path(&file, path)?;
    check(&opened)?;
    let meta = file.metadata().map_err(|e| refused(path, &e.to_string()))?;
    if !meta.is_file() {
        return Err(refused(path, "not a regular file"));
    }
    Ok((file, opened, meta.len()))
}

/// Opens `path` for reading without waiting.
#[cfg(not(target_os = "linux"))]
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// The canonical path of the file `file` opened: `path` resolved, then checked to be the same
/// file (device and inode) as the one opened. Linux names the opened file itself.
#[cfg(not(target_os = "linux"))]
fn opened_path(file: &File, path: &Path) -> Result<PathBuf, BatchError> {
    let canonical = path.canonicalize().map_err(|_| outside(path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let opened = file.metadata().map_err(|e| refused(path, &e.to_string()))?;
        let there = std::fs::metadata(&canonical).map_err(|e| refused(path, &e.to_string()))?;
        if (opened.dev(), opened.ino()) != (there.dev(), there.ino()) {
            return Err(refused(path, "it changed while it was opened"));
        }
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(canonical)
}

/// `path` made absolute and its `.` and `..` resolved as written (links not followed).
fn lexical(path: &Path) -> PathBuf {
    let absolute =
        if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(path) };
    let mut out = PathBuf::new();
    for c in absolute.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;

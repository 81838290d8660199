//! What batch work may do in a deployment: a spec comes from whoever may submit tasks, and an
//! indexer reads with its own role and file system, so input is read only from the directories
//! and buckets the deployment names (never, by default, anything), never from the deployment's
//! own deep storage, and only so many splits of all tasks run at once.
//!
//! A `local` file is opened first and what was opened is checked (a regular file, under an
//! allowed directory as the kernel names it), so that a link changed between a check and the
//! open cannot lead out.

use super::BatchError;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Directories (`:`-separated) whose files `local` input sources may read.
pub const LOCAL_DIRS_ENV: &str = "SLUICE_BATCH_LOCAL_DIRS";
/// Buckets (`,`-separated) whose objects `s3` input sources may read.
pub const S3_BUCKETS_ENV: &str = "SLUICE_BATCH_S3_BUCKETS";
/// Splits of all batch tasks in flight at once, at most (the template's `BatchMaxConcurrentSplits`).
pub const MAX_SPLITS_ENV: &str = "SLUICE_BATCH_MAX_SPLITS";
/// The deployment's deep storage, which batch input may not be.
pub const STORAGE_ENV: &str = "SLUICE_STORAGE";
/// Splits in flight at once when [`MAX_SPLITS_ENV`] is not set.
pub const DEFAULT_MAX_SPLITS: u32 = 100;

/// What this process allows beside its environment ([`allow_in_process`]).
static IN_PROCESS: Mutex<Option<BatchAccess>> = Mutex::new(None);

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
    }
    access
}

/// Splits in flight at once as [`MAX_SPLITS_ENV`] sets it ([`DEFAULT_MAX_SPLITS`] when unset
/// or not a count of at least 1).
pub fn max_splits_from_env() -> u32 {
    match std::env::var(MAX_SPLITS_ENV) {
        Ok(v) => v.trim().parse().ok().filter(|n| *n > 0).unwrap_or_else(|| {
            tracing::warn!(value = v, "{MAX_SPLITS_ENV} is not a count of at least 1; the default is used");
            DEFAULT_MAX_SPLITS
        }),
        Err(_) => DEFAULT_MAX_SPLITS,
    }
}

/// The deployment's deep storage, as batch input may not read it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum OwnStorage {
    /// Objects of `bucket` under `prefix` (every object when it is empty).
    S3 { bucket: String, prefix: String },
    /// Files under a directory, canonical.
    Local(PathBuf),
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
    /// Deep storage, never read as input.
    own: Option<OwnStorage>,
    /// Splits in flight at once across the deployment.
    max_splits: u32,
}

impl Default for BatchAccess {
    fn default() -> Self {
        BatchAccess {
            local_dirs: Vec::new(),
            given_dirs: Vec::new(),
            s3_buckets: Vec::new(),
            own: None,
            max_splits: DEFAULT_MAX_SPLITS,
        }
    }
}

impl BatchAccess {
    /// What [`LOCAL_DIRS_ENV`], [`S3_BUCKETS_ENV`], [`MAX_SPLITS_ENV`] and [`STORAGE_ENV`]
    /// say (directories that do not exist are left out).
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
    pub fn own_storage(mut self, url: &str) -> Self {
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let prefix = prefix.trim_matches('/').to_string();
            self.own = Some(OwnStorage::S3 { bucket: bucket.to_string(), prefix });
        } else if let Some(path) = url.strip_prefix("file://") {
            let path = Path::new(path);
            self.own = Some(OwnStorage::Local(path.canonicalize().unwrap_or_else(|_| lexical(path))));
        }
        self
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
        let canonical = path.canonicalize().map_err(|e| refused(path, &e.to_string()))?;
        self.check_canonical(path, &canonical)?;
        Ok(canonical)
    }

    /// Opens the regular file at `path` when what was opened is under an allowed directory
    /// (and not deep storage): the file, its canonical path and its size.
    pub fn open_local(&self, path: &Path) -> Result<(File, PathBuf, u64), BatchError> {
        self.check_written(path)?;
        let file = open_nonblocking(path).map_err(|e| refused(path, &e.to_string()))?;
        let meta = file.metadata().map_err(|e| refused(path, &e.to_string()))?;
        if !meta.is_file() {
            return Err(refused(path, "not a regular file"));
        }
        let opened = opened_path(&file, path)?;
        self.check_canonical(path, &opened)?;
        Ok((file, opened, meta.len()))
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
            return Err(refused(path, &format!("not under a directory {LOCAL_DIRS_ENV} allows")));
        }
        Ok(())
    }

    /// Refuses `canonical` (where `path` leads) outside the allowed directories, or in deep storage.
    fn check_canonical(&self, path: &Path, canonical: &Path) -> Result<(), BatchError> {
        if !self.local_dirs.iter().any(|d| canonical.starts_with(d)) {
            return Err(refused(path, &format!("not under a directory {LOCAL_DIRS_ENV} allows")));
        }
        if matches!(&self.own, Some(OwnStorage::Local(dir)) if canonical.starts_with(dir)) {
            return Err(refused(path, "the deployment's own deep storage is not batch input"));
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

    /// Refuses an object of a bucket not allowed, or of the deployment's deep storage.
    pub fn object(&self, bucket: &str, key: &str) -> Result<(), BatchError> {
        self.bucket(bucket)?;
        if let Some(OwnStorage::S3 { bucket: own, prefix }) = &self.own {
            if own == bucket
                && (prefix.is_empty() || key.strip_prefix(prefix.as_str()).is_some_and(|r| r.starts_with('/')))
            {
                return Err(BatchError::Input(format!(
                    "s3://{bucket}/{key}: the deployment's own deep storage (s3://{own}/{prefix}) is not batch input"
                )));
            }
        }
        Ok(())
    }

    /// Refuses a listing of `prefix` in `bucket` that would reach into deep storage.
    pub fn listing(&self, bucket: &str, prefix: &str) -> Result<(), BatchError> {
        self.bucket(bucket)?;
        if let Some(OwnStorage::S3 { bucket: own, prefix: own_prefix }) = &self.own {
            let own_dir = format!("{own_prefix}/");
            let overlaps = own_prefix.is_empty() || own_dir.starts_with(prefix) || prefix.starts_with(&own_dir);
            if own == bucket && overlaps {
                return Err(BatchError::Input(format!(
                    "s3://{bucket}/{prefix}: it lists the deployment's own deep storage (s3://{own}/{own_prefix}), \
                     which is not batch input"
                )));
            }
        }
        Ok(())
    }
}

fn refused(path: &Path, why: &str) -> BatchError {
    BatchError::Input(format!("local input {}: {why}", path.display()))
}

/// Opens `path` for reading without waiting: opening a FIFO or a device must not block before
/// the file is seen not to be a regular one.
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

/// The canonical path of the file `file` opened, as the kernel names it: not `path` resolved
/// again, which a link changed meanwhile would lead elsewhere.
#[cfg(target_os = "linux")]
fn opened_path(file: &File, path: &Path) -> Result<PathBuf, BatchError> {
    use std::os::fd::AsRawFd;
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    std::fs::read_link(&link).map_err(|e| refused(path, &format!("cannot tell where the file opened is: {e}")))
}

/// The canonical path of the file `file` opened: `path` resolved, then checked to be the same
/// file (device and inode) as the one opened. Linux names the opened file itself.
#[cfg(not(target_os = "linux"))]
fn opened_path(file: &File, path: &Path) -> Result<PathBuf, BatchError> {
    let canonical = path.canonicalize().map_err(|e| refused(path, &e.to_string()))?;
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
mod tests {
    use super::*;

    #[test]
    fn only_files_under_allowed_directories_are_read() {
        let allowed = tempfile::tempdir().expect("dir");
        let other = tempfile::tempdir().expect("dir");
        std::fs::write(allowed.path().join("a.json"), "{}").expect("write");
        std::fs::write(other.path().join("secret"), "s3cr3t").expect("write");
        let access = BatchAccess::default().allow_dir(allowed.path());
        assert!(access.open_local(&allowed.path().join("a.json")).is_ok());
        let escape = allowed.path().join("..").join(other.path().file_name().expect("name")).join("secret");
        let e = access.open_local(&escape).expect_err("outside").to_string();
        assert!(e.contains("not under") && !e.contains("s3cr3t"), "{e}");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(other.path().join("secret"), allowed.path().join("link")).expect("link");
            assert!(access.open_local(&allowed.path().join("link")).is_err(), "a link out is followed, then refused");
        }
        let missing = access.open_local(&other.path().join("missing")).expect_err("outside").to_string();
        let present = access.open_local(&other.path().join("secret")).expect_err("outside").to_string();
        assert_eq!(
            missing.replace("missing", "x"),
            present.replace("secret", "x"),
            "whether a file outside exists is not told"
        );
        let none = BatchAccess::default().open_local(&allowed.path().join("a.json")).expect_err("nothing allowed");
        assert!(none.to_string().contains(LOCAL_DIRS_ENV), "{none}");
        assert!(BatchAccess::default().allow_bucket("in").bucket("in").is_ok());
        assert!(BatchAccess::default().allow_bucket("in").bucket("deep-storage").is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn what_was_opened_is_checked_not_the_path_resolved_again() {
        let allowed = tempfile::tempdir().expect("dir");
        std::fs::write(allowed.path().join("a.json"), "{}").expect("write");
        let access = BatchAccess::default().allow_dir(allowed.path());
        // The path leads inside (a link swapped back after the open); the file opened is not.
        let environ = File::open("/proc/self/environ").expect("environ");
        let opened = opened_path(&environ, &allowed.path().join("a.json")).expect("named");
        assert_eq!(opened, Path::new("/proc").join(std::process::id().to_string()).join("environ"));
        let e = access.check_canonical(&allowed.path().join("a.json"), &opened).expect_err("outside");
        assert!(e.to_string().contains("not under"), "{e}");
        let (_, inside, size) = access.open_local(&allowed.path().join("a.json")).expect("inside");
        assert_eq!((inside, size), (allowed.path().canonicalize().expect("dir").join("a.json"), 2));
    }

    #[test]
    fn deep_storage_is_no_input_whatever_the_buckets_and_directories_allowed() {
        let access = BatchAccess::default().allow_bucket("seg").allow_bucket("in").own_storage("s3://seg/sluice");
        for key in ["sluice/segments/x.seg", "sluice/hydrants/a.hyd", "sluice/lookups/l.json"] {
            let e = access.object("seg", key).expect_err("deep storage");
            assert!(e.to_string().contains("own deep storage"), "{e}");
        }
        assert!(access.object("seg", "sluice-input/x.json").is_ok(), "beside deep storage, not in it");
        assert!(access.object("in", "sluice/x.json").is_ok(), "another bucket");
        for prefix in ["", "s", "sluice/", "sluice/segments/"] {
            assert!(access.listing("seg", prefix).is_err(), "{prefix:?} lists deep storage");
        }
        assert!(access.listing("seg", "input/").is_ok());
        let whole = BatchAccess::default().allow_bucket("seg").own_storage("s3://seg");
        assert!(whole.object("seg", "input/x.json").is_err(), "deep storage is the whole bucket");

        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("storage")).expect("dir");
        std::fs::write(dir.path().join("storage/a.hyd"), "h").expect("write");
        std::fs::write(dir.path().join("rows.json"), "{}").expect("write");
        let local = BatchAccess::default()
            .allow_dir(dir.path())
            .own_storage(&format!("file://{}", dir.path().join("storage").display()));
        let e = local.open_local(&dir.path().join("storage/a.hyd")).expect_err("deep storage");
        assert!(e.to_string().contains("own deep storage"), "{e}");
        assert!(local.open_local(&dir.path().join("rows.json")).is_ok());
    }
}

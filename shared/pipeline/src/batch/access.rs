//! What a batch spec may read: a spec comes from whoever may submit tasks, and an indexer
//! reads with its own role and file system, so input is read only from the directories and
//! buckets the deployment names (never, by default, anything).

use super::BatchError;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Directories (`:`-separated) whose files `local` input sources may read.
pub const LOCAL_DIRS_ENV: &str = "SLUICE_BATCH_LOCAL_DIRS";
/// Buckets (`,`-separated) whose objects `s3` input sources may read.
pub const S3_BUCKETS_ENV: &str = "SLUICE_BATCH_S3_BUCKETS";

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

/// The directories and buckets batch input may come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchAccess {
    /// Directories, canonical.
    local_dirs: Vec<PathBuf>,
    /// The same directories as named (absolute, `.` and `..` resolved without the file system).
    given_dirs: Vec<PathBuf>,
    /// Bucket names.
    s3_buckets: Vec<String>,
}

impl BatchAccess {
    /// What [`LOCAL_DIRS_ENV`] and [`S3_BUCKETS_ENV`] allow (directories that do not exist are
    /// left out).
    pub fn from_env() -> Self {
        let mut access = BatchAccess::default();
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

    /// `path`, canonical, when it is under an allowed directory.
    pub fn local_path(&self, path: &Path) -> Result<PathBuf, BatchError> {
        let refused = |why: String| BatchError::Input(format!("local input {}: {why}", path.display()));
        if self.local_dirs.is_empty() {
            return Err(refused(format!(
                "local input sources are not allowed here (set {LOCAL_DIRS_ENV} to the directories they may read)"
            )));
        }
        let outside = || refused(format!("not under a directory {LOCAL_DIRS_ENV} allows"));
        // Checked as written before the file system is asked: an error must not tell whether
        // a file outside exists.
        let written = lexical(path);
        if !self.local_dirs.iter().chain(&self.given_dirs).any(|d| written.starts_with(d)) {
            return Err(outside());
        }
        let canonical = path.canonicalize().map_err(|e| refused(e.to_string()))?;
        if self.local_dirs.iter().any(|d| canonical.starts_with(d)) {
            Ok(canonical)
        } else {
            Err(outside())
        }
    }

    /// Refuses a bucket not allowed.
    pub fn bucket(&self, bucket: &str) -> Result<(), BatchError> {
        if self.s3_buckets.iter().any(|b| b == bucket) {
            Ok(())
        } else {
            Err(BatchError::Input(format!("s3 input from bucket {bucket:?} is not allowed (see {S3_BUCKETS_ENV})")))
        }
    }
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
        assert!(access.local_path(&allowed.path().join("a.json")).is_ok());
        let escape = allowed.path().join("..").join(other.path().file_name().expect("name")).join("secret");
        let e = access.local_path(&escape).expect_err("outside").to_string();
        assert!(e.contains("not under") && !e.contains("s3cr3t"), "{e}");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(other.path().join("secret"), allowed.path().join("link")).expect("link");
            assert!(access.local_path(&allowed.path().join("link")).is_err(), "a link out is followed, then refused");
        }
        let missing = access.local_path(&other.path().join("missing")).expect_err("outside").to_string();
        let present = access.local_path(&other.path().join("secret")).expect_err("outside").to_string();
        assert_eq!(
            missing.replace("missing", "x"),
            present.replace("secret", "x"),
            "whether a file outside exists is not told"
        );
        let none = BatchAccess::default().local_path(&allowed.path().join("a.json")).expect_err("nothing allowed");
        assert!(none.to_string().contains(LOCAL_DIRS_ENV), "{none}");
        assert!(BatchAccess::default().allow_bucket("in").bucket("in").is_ok());
        assert!(BatchAccess::default().allow_bucket("in").bucket("deep-storage").is_err());
    }
}

//! Unit tests of what batch input may read: allowed directories and buckets, links out refused
//! alike whatever they lead to, the deployment's own stores, the cap on splits in flight.

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
    assert!(e.contains(&format!("under a directory {LOCAL_DIRS_ENV} allows")) && !e.contains("s3cr3t"), "{e}");
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

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// A link inside an allowed directory to anything outside is refused with one error, whether
/// what it names exists, is a file, a directory, a device or a FIFO; nothing outside is opened.
#[cfg(unix)]
#[test]
fn links_out_are_refused_alike_whatever_they_lead_to() {
    let allowed = tempfile::tempdir().expect("dir");
    let other = tempfile::tempdir().expect("dir");
    std::fs::write(other.path().join("secret"), "s3cr3t").expect("write");
    std::fs::create_dir(other.path().join("dir")).expect("dir");
    let fifo = other.path().join("fifo");
    mkfifo(&fifo);
    let unreadable = other.path().join("unreadable");
    std::fs::write(&unreadable, "x").expect("write");
    std::fs::set_permissions(&unreadable, std::os::unix::fs::PermissionsExt::from_mode(0o000)).expect("chmod");
    let access = BatchAccess::default().allow_dir(allowed.path());
    let targets = [
        other.path().join("secret"),
        other.path().join("missing"),
        other.path().join("dir"),
        other.path().join("missing-dir/file"),
        fifo,
        unreadable,
        PathBuf::from("/dev/null"),
        PathBuf::from("/dev/zero"),
    ];
    let mut errors = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        let link = allowed.path().join(format!("link{i}"));
        std::os::unix::fs::symlink(target, &link).expect("link");
        let e = access.open_local(&link).expect_err("a link out").to_string();
        errors.push((target.clone(), e.replace(&format!("link{i}"), "link")));
    }
    let first = errors[0].1.clone();
    assert!(first.contains(&format!("no readable file there under a directory {LOCAL_DIRS_ENV} allows")), "{first}");
    for (target, e) in &errors {
        assert_eq!(e, &first, "a link to {} is refused as any other", target.display());
    }
    // Inside, a FIFO is told apart (its own directory), without waiting for a writer.
    let inside = allowed.path().join("fifo");
    mkfifo(&inside);
    let e = access.open_local(&inside).expect_err("a FIFO").to_string();
    assert!(e.contains("not a regular file"), "{e}");
    assert!(access.local_path(&allowed.path().join("link1")).is_err(), "a directory to walk, through a link out");
}

#[cfg(target_os = "linux")]
#[test]
fn what_was_opened_is_checked_not_the_path_resolved_again() {
    let allowed = tempfile::tempdir().expect("dir");
    std::fs::write(allowed.path().join("a.json"), "{}").expect("write");
    let access = BatchAccess::default().allow_dir(allowed.path());
    // The check judges the file opened, as the kernel names it, not the path resolved again.
    let mut seen = None;
    let e = open_checked(Path::new("/proc/self/environ"), |opened| {
        seen = Some(opened.to_path_buf());
        access.check_canonical(&allowed.path().join("a.json"), opened)
    })
    .expect_err("outside");
    assert_eq!(seen, Some(Path::new("/proc").join(std::process::id().to_string()).join("environ")));
    assert!(e.to_string().contains("no readable file there"), "{e}");
    let (_, inside, size) = access.open_local(&allowed.path().join("a.json")).expect("inside");
    assert_eq!((inside, size), (allowed.path().canonicalize().expect("dir").join("a.json"), 2));
}

#[test]
fn the_deployments_own_stores_are_no_input_whatever_the_buckets_and_directories_allowed() {
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

    // Local deep storage and metadata (the command's ./.sluice/storage and ./.sluice/metadata).
    let dir = tempfile::tempdir().expect("dir");
    for sub in ["storage", "metadata"] {
        std::fs::create_dir(dir.path().join(sub)).expect("dir");
    }
    std::fs::write(dir.path().join("storage/a.hyd"), "h").expect("write");
    std::fs::write(dir.path().join("metadata/meta.sqlite"), "specs").expect("write");
    std::fs::write(dir.path().join("rows.json"), "{}").expect("write");
    let local = BatchAccess::default()
        .allow_dir(dir.path())
        .own_storage(&format!("file://{}", dir.path().join("storage").display()))
        .own_metadata(&format!("file://{}", dir.path().join("metadata").display()))
        .own_metadata("dynamodb://table");
    let e = local.open_local(&dir.path().join("storage/a.hyd")).expect_err("deep storage");
    assert!(e.to_string().contains("own deep storage"), "{e}");
    let e = local.open_local(&dir.path().join("metadata/meta.sqlite")).expect_err("metadata");
    assert!(e.to_string().contains("own metadata"), "{e}");
    assert!(local.open_local(&dir.path().join("rows.json")).is_ok());
    assert!(local.is_own(&dir.path().canonicalize().expect("dir").join("metadata")));
}

#[test]
fn a_cap_on_splits_is_read_from_its_value_within_the_indexers_reservation() {
    assert_eq!(max_splits_of(None, None), DEFAULT_MAX_SPLITS);
    assert_eq!(max_splits_of(Some(" 40 "), None), 40);
    assert_eq!(max_splits_of(Some("0"), None), DEFAULT_MAX_SPLITS, "at least one");
    assert_eq!(max_splits_of(Some("many"), Some("0")), DEFAULT_MAX_SPLITS, "0: no reservation");
    assert_eq!(max_splits_of(Some("100"), Some("300")), 100);
    assert_eq!(max_splits_of(Some("300"), Some("300")), 150, "the stream keeps half of the reservation");
    assert_eq!(max_splits_of(None, Some("60")), 30);
    assert_eq!(max_splits_of(Some("5"), Some("1")), 1);
    // Logged once, however often the cap is read.
    let flag = AtomicBool::new(false);
    assert!(first(&flag) && !first(&flag) && !first(&flag));
}

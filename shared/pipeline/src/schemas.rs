//! Where a spec's binary formats (of the value, and of the `kafka` format's key) read their
//! schemas from: the schema registry a `schema_registry` decoder names, and the descriptor set
//! file a Protobuf `file` decoder names.
//!
//! A descriptor set file is read only from the directory the deployment names
//! ([`DESCRIPTOR_DIR_ENV`]; none: `file` decoders are refused), as a path relative to it or an
//! absolute path (or `file://` URL) inside it, once resolved (`..` and symbolic links cannot
//! lead out); only a regular file of at most [`MAX_DESCRIPTOR_SET_BYTES`], checked before it
//! is opened (a FIFO or a device is never opened), and read off the async threads.

use sluice_format::input::{FormatSources, SchemaRegistry, SchemaSources};
use sluice_format::spec::{DatasourceSpec, InputFormat, ProtoBytesDecoder};
use sluice_kafka::HttpSchemaRegistry;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The environment variable naming the directory Protobuf `file` decoders read descriptor
/// sets from; read once by the binaries ([`set_descriptor_dir`]).
pub const DESCRIPTOR_DIR_ENV: &str = "SLUICE_DESCRIPTOR_DIR";
/// Largest descriptor set file read: 16 MiB.
pub const MAX_DESCRIPTOR_SET_BYTES: u64 = 16 << 20;

/// Why the deployment's descriptor directory, or a descriptor set file a spec names, is
/// refused. `at` is the spec field; no error holds a file's bytes.
#[derive(Debug, thiserror::Error)]
pub enum DescriptorError {
    /// The directory cannot be resolved.
    #[error("{DESCRIPTOR_DIR_ENV} {dir:?}: {source}")]
    Dir {
        /// The directory as given.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The directory is not one.
    #[error("{DESCRIPTOR_DIR_ENV} {dir:?} is not a directory")]
    NotADirectory {
        /// The directory as given.
        dir: PathBuf,
    },
    /// The directory was already set to another one.
    #[error("{DESCRIPTOR_DIR_ENV}: the descriptor directory is already set to another one")]
    AlreadySet,
    /// A URL of another scheme than `file`.
    #[error(
        "{at}: {scheme}:// descriptors are not supported: give a file path, or the set inline (type inline, descriptorString)"
    )]
    Scheme {
        /// The spec field.
        at: String,
        /// The URL's scheme.
        scheme: String,
    },
    /// No directory is configured.
    #[error(
        "{at} {path:?}: descriptor files are refused: {DESCRIPTOR_DIR_ENV} names no directory to read them from (or give the set inline: type inline, descriptorString)"
    )]
    NoDirectory {
        /// The spec field.
        at: String,
        /// The file as named.
        path: String,
    },
    /// The file resolves outside the directory.
    #[error("{at} {path:?} is not inside the directory {DESCRIPTOR_DIR_ENV} names")]
    Outside {
        /// The spec field.
        at: String,
        /// The file as named.
        path: String,
    },
    /// Not a regular file (a FIFO or a device is never opened).
    #[error("{at} {path:?} is not a regular file")]
    NotAFile {
        /// The spec field.
        at: String,
        /// The file as named.
        path: String,
    },
    /// Larger than [`MAX_DESCRIPTOR_SET_BYTES`].
    #[error("{at} {path:?} is larger than {MAX_DESCRIPTOR_SET_BYTES} bytes")]
    TooLarge {
        /// The spec field.
        at: String,
        /// The file as named.
        path: String,
    },
    /// The file cannot be resolved or read.
    #[error("{at} {path:?}: {source}")]
    Io {
        /// The spec field.
        at: String,
        /// The file as named.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Why the schemas a spec's formats read from cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// A descriptor set file is refused.
    #[error(transparent)]
    Descriptor(#[from] DescriptorError),
    /// A schema registry's settings are refused.
    #[error(transparent)]
    Registry(#[from] sluice_kafka::RegistrySettingsError),
    /// The thread reading them panicked.
    #[error("reading the spec's schemas failed: {0}")]
    Panicked(String),
}

/// The directory descriptor set files may be read from, resolved; none refuses every file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DescriptorDir {
    dir: Option<PathBuf>,
}

impl DescriptorDir {
    /// Refuses every descriptor set file.
    pub fn none() -> Self {
        Self::default()
    }

    /// Descriptor set files under `dir`, which must be a directory (resolved now).
    pub fn new(dir: &Path) -> Result<Self, DescriptorError> {
        let resolved = dir.canonicalize().map_err(|source| DescriptorError::Dir { dir: dir.into(), source })?;
        if !resolved.is_dir() {
            return Err(DescriptorError::NotADirectory { dir: dir.into() });
        }
        Ok(Self { dir: Some(resolved) })
    }

    /// The directory named by [`DESCRIPTOR_DIR_ENV`]'s value (unset or empty: none).
    pub fn from_setting(value: Option<&str>) -> Result<Self, DescriptorError> {
        match value.filter(|v| !v.is_empty()) {
            None => Ok(Self::none()),
            Some(dir) => Self::new(Path::new(dir)),
        }
    }

    /// Reads the descriptor set file `descriptor` names (blocking: call it off the async
    /// threads); `at` is the spec field, named in every error (which never holds the file's
    /// bytes).
    pub fn read(&self, descriptor: &str, at: &str) -> Result<Vec<u8>, DescriptorError> {
        let path = match descriptor.split_once("://") {
            None => descriptor,
            Some(("file", rest)) => rest,
            Some((scheme, _)) => return Err(DescriptorError::Scheme { at: at.into(), scheme: scheme.into() }),
        };
        let named = || (at.to_string(), path.to_string());
        let io = |source| {
            let (at, path) = named();
            DescriptorError::Io { at, path, source }
        };
        let Some(dir) = &self.dir else {
            let (at, path) = named();
            return Err(DescriptorError::NoDirectory { at, path });
        };
        let resolved = dir.join(path).canonicalize().map_err(io)?;
        if !resolved.starts_with(dir) {
            let (at, path) = named();
            return Err(DescriptorError::Outside { at, path });
        }
        // Checked before opening: opening a FIFO waits for a writer, and a device may never end.
        let regular = |m: &std::fs::Metadata| {
            let (at, path) = named();
            if !m.is_file() {
                Err(DescriptorError::NotAFile { at, path })
            } else if m.len() > MAX_DESCRIPTOR_SET_BYTES {
                Err(DescriptorError::TooLarge { at, path })
            } else {
                Ok(())
            }
        };
        regular(&std::fs::metadata(&resolved).map_err(io)?)?;
        let file = std::fs::File::open(&resolved).map_err(io)?;
        // The file opened is checked again, in case another took its place meanwhile.
        regular(&file.metadata().map_err(io)?)?;
        let mut bytes = Vec::new();
        file.take(MAX_DESCRIPTOR_SET_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
        if bytes.len() as u64 > MAX_DESCRIPTOR_SET_BYTES {
            let (at, path) = named();
            return Err(DescriptorError::TooLarge { at, path });
        }
        Ok(bytes)
    }
}

static DEPLOYMENT_DESCRIPTOR_DIR: OnceLock<DescriptorDir> = OnceLock::new();

/// Sets the deployment's descriptor directory, read by the binaries once from
/// [`DESCRIPTOR_DIR_ENV`] as they start (setting another one later is an error). Submissions
/// and tasks use it; until it is set, descriptor files are refused.
pub fn set_descriptor_dir(dir: DescriptorDir) -> Result<(), DescriptorError> {
    match DEPLOYMENT_DESCRIPTOR_DIR.get_or_init(|| dir.clone()) {
        set if *set == dir => Ok(()),
        _ => Err(DescriptorError::AlreadySet),
    }
}

/// The deployment's descriptor directory ([`set_descriptor_dir`]; none until it is set).
pub fn descriptor_dir() -> DescriptorDir {
    DEPLOYMENT_DESCRIPTOR_DIR.get().cloned().unwrap_or_default()
}

/// The registry clients and descriptor sets `spec`'s value and key formats need, descriptor
/// files read from `descriptors` (blocking: see [`schema_sources`] for async callers).
pub fn read_schema_sources(spec: &DatasourceSpec, descriptors: &DescriptorDir) -> Result<SchemaSources, SchemaError> {
    let key = spec.input_format.kafka_columns().and_then(|c| c.key).map(|(_, format)| format);
    Ok(SchemaSources {
        value: format_sources(spec.input_format.value_format(), descriptors, "ioConfig.inputFormat")?,
        key: match &key {
            Some(format) => format_sources(format, descriptors, "ioConfig.inputFormat.keyFormat")?,
            None => FormatSources::default(),
        },
    })
}

/// [`read_schema_sources`] on a blocking thread, so that no file is read on the async threads.
pub async fn schema_sources(spec: &DatasourceSpec, descriptors: &DescriptorDir) -> Result<SchemaSources, SchemaError> {
    let (spec, descriptors) = (spec.clone(), descriptors.clone());
    tokio::task::spawn_blocking(move || read_schema_sources(&spec, &descriptors))
        .await
        .map_err(|e| SchemaError::Panicked(e.to_string()))?
}

fn format_sources(format: &InputFormat, descriptors: &DescriptorDir, at: &str) -> Result<FormatSources, SchemaError> {
    let registry = match format.registry() {
        Some(settings) => Some(Arc::new(HttpSchemaRegistry::new(settings)?) as Arc<dyn SchemaRegistry>),
        None => None,
    };
    let descriptor_set = match format {
        InputFormat::Protobuf { proto_bytes_decoder: ProtoBytesDecoder::File { descriptor, .. }, .. } => {
            Some(Arc::new(descriptors.read(descriptor, &format!("{at}.protoBytesDecoder.descriptor"))?))
        }
        _ => None,
    };
    Ok(FormatSources { registry, descriptor_set })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const AT: &str = "ioConfig.inputFormat.protoBytesDecoder.descriptor";

    /// A descriptor directory holding `set.desc`, and a folder beside it holding `secret.desc`.
    fn folders() -> (tempfile::TempDir, DescriptorDir, PathBuf) {
        let root = tempfile::tempdir().expect("dir");
        std::fs::create_dir(root.path().join("descriptors")).expect("descriptors");
        std::fs::create_dir(root.path().join("outside")).expect("outside");
        std::fs::write(root.path().join("descriptors/set.desc"), b"\x0a\x00").expect("write");
        let secret = root.path().join("outside/secret.desc");
        std::fs::write(&secret, b"password=hunter2").expect("write");
        let dir = DescriptorDir::new(&root.path().join("descriptors")).expect("descriptor dir");
        (root, dir, secret)
    }

    /// Reads on a thread of its own, failing the test if the read does not end promptly.
    fn read_promptly(dir: &DescriptorDir, descriptor: &str) -> Result<Vec<u8>, String> {
        let (dir, descriptor) = (dir.clone(), descriptor.to_string());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(dir.read(&descriptor, AT).map_err(|e| e.to_string())));
        rx.recv_timeout(Duration::from_secs(5)).expect("the read did not end within 5 s")
    }

    #[test]
    fn a_descriptor_file_inside_the_directory_is_read_by_path_or_file_url() {
        let (root, dir, _) = folders();
        let absolute = root.path().join("descriptors/set.desc").display().to_string();
        assert_eq!(read_promptly(&dir, "set.desc").expect("relative"), b"\x0a\x00");
        assert_eq!(read_promptly(&dir, &absolute).expect("absolute"), b"\x0a\x00");
        assert_eq!(read_promptly(&dir, &format!("file://{absolute}")).expect("url"), b"\x0a\x00");
        let e = read_promptly(&dir, "s3://bucket/set.desc").expect_err("s3");
        assert!(e.contains("s3:// descriptors are not supported") && e.contains("descriptorString"), "{e}");
        let e = read_promptly(&dir, "missing.desc").expect_err("missing");
        assert!(e.starts_with(AT) && e.contains("missing.desc"), "{e}");
    }

    #[test]
    fn without_a_directory_descriptor_files_are_refused_naming_the_variable() {
        let (root, _, _) = folders();
        let path = root.path().join("descriptors/set.desc").display().to_string();
        let e = read_promptly(&DescriptorDir::none(), &path).expect_err("no directory");
        assert!(e.starts_with(AT) && e.contains(DESCRIPTOR_DIR_ENV), "{e}");
        assert_eq!(DescriptorDir::from_setting(Some("")).expect("empty"), DescriptorDir::none());
        assert!(DescriptorDir::from_setting(Some(&path)).expect_err("a file").to_string().contains("not a directory"));
    }

    #[test]
    fn paths_leading_out_of_the_directory_are_refused_without_their_contents() {
        let (root, dir, secret) = folders();
        std::os::unix::fs::symlink(&secret, root.path().join("descriptors/link.desc")).expect("symlink");
        for escape in [
            secret.display().to_string(),
            "../outside/secret.desc".to_string(),
            format!("{}/descriptors/../outside/secret.desc", root.path().display()),
            "link.desc".to_string(),
            "/proc/self/environ".to_string(),
            "file:///etc/passwd".to_string(),
        ] {
            let e = read_promptly(&dir, &escape).expect_err(&escape);
            assert!(e.starts_with(AT) && e.contains("is not inside the directory SLUICE_DESCRIPTOR_DIR names"), "{e}");
            assert!(!e.contains("hunter2") && !e.contains("PATH="), "{e}");
        }
    }

    #[test]
    fn fifos_directories_and_large_files_are_refused_before_they_are_read() {
        let (root, dir, _) = folders();
        let fifo = root.path().join("descriptors/fifo.desc");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(made.success(), "mkfifo failed");
        let e = read_promptly(&dir, "fifo.desc").expect_err("fifo");
        assert!(e.contains("\"fifo.desc\" is not a regular file"), "{e}");
        std::fs::create_dir(root.path().join("descriptors/sub")).expect("sub");
        assert!(read_promptly(&dir, "sub").expect_err("directory").contains("is not a regular file"));
        let large = root.path().join("descriptors/large.desc");
        std::fs::File::create(&large).and_then(|f| f.set_len(MAX_DESCRIPTOR_SET_BYTES + 1)).expect("grow");
        let e = read_promptly(&dir, "large.desc").expect_err("too large");
        assert!(e.contains("is larger than 16777216 bytes"), "{e}");
    }
}

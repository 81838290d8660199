//! A batch task's input cut into splits, as Druid's `splitHintSpec` (`maxSize`) cuts it: files
//! in order, packed into splits of at most `maxSplitSize` bytes and `maxNumFiles` files; a file
//! larger than a split is cut into line-aligned byte ranges, unless gzipped (read whole).

use super::access::BatchAccess;
use super::BatchError;
use globset::{Glob, GlobMatcher};
use sluice_format::spec::batch::{InputSource, SplitHint, MAX_INPUT_NAMES, MAX_SPLIT_BYTES};
use sluice_layout::batch::{Piece, PieceSource};
use sluice_store::storage::open_store;
use std::path::Path;

/// Splits one task holds at most: one item and one indexer invocation each.
pub const MAX_SPLITS: usize = 10_000;
/// Directory levels a `local` filter walks under its `baseDir`.
const MAX_DEPTH: usize = 16;
/// Bytes of piece names one split holds at most: its item stays far under DynamoDB's 400 KB.
const MAX_SPLIT_NAME_BYTES: usize = 200_000;
/// Compressions an input cannot be read with, by file suffix.
const UNREAD_COMPRESSIONS: [&str; 6] = [".bz2", ".xz", ".zst", ".zip", ".sz", ".snappy"];

/// One file or object of the input, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// Where.
    pub source: PieceSource,
    /// Bytes.
    pub size: u64,
    /// An object's version (its ETag), which every read of it asks for; `None` for a file.
    pub version: Option<String>,
}

impl InputFile {
    fn name(&self) -> &str {
        match &self.source {
            PieceSource::Inline => "inline",
            PieceSource::Local { path } => path,
            PieceSource::S3 { key, .. } => key,
        }
    }

    fn gzip(&self) -> bool {
        self.name().ends_with(".gz")
    }

    /// Its bytes `[start, end)` as a piece, with its size and version as planned.
    fn piece(&self, start: u64, end: Option<u64>) -> Piece {
        let (size, version) = (Some(self.size), self.version.clone());
        Piece { source: self.source.clone(), start, end, gzip: self.gzip(), size, version }
    }
}

/// The files an input source names, each checked against `access`, in order.
pub async fn input_files(input: &InputSource, access: &BatchAccess) -> Result<Vec<InputFile>, BatchError> {
    let files = match input {
        InputSource::Inline { data } => {
            vec![InputFile { source: PieceSource::Inline, size: data.len() as u64, version: None }]
        }
        InputSource::Local { base_dir, filter, files } => {
            local_files(base_dir.as_deref(), filter.as_deref(), files, access)?
        }
        InputSource::S3 { uris, prefixes, objects, filter } => {
            s3_files(uris, prefixes, objects, filter.as_deref(), access).await?
        }
    };
    if files.is_empty() {
        return Err(BatchError::Input("the input source names no file".into()));
    }
    if files.len() > MAX_INPUT_NAMES {
        return Err(BatchError::Input(format!("the input source names {} files, over {MAX_INPUT_NAMES}", files.len())));
    }
    if let Some(f) = files.iter().find(|f| UNREAD_COMPRESSIONS.iter().any(|s| f.name().ends_with(s))) {
        return Err(BatchError::Input(format!("{}: only gzip (.gz) input is decompressed", f.name())));
    }
    // A gzipped file or object is read whole by one invocation (streamed: its size bounds the
    // time, however little it decompresses to).
    if let Some(f) = files.iter().find(|f| f.gzip() && f.size > MAX_SPLIT_BYTES) {
        return Err(BatchError::Input(format!(
            "{}: a gzipped file is read whole, at most {MAX_SPLIT_BYTES} bytes",
            f.name()
        )));
    }
    Ok(files)
}

fn matcher(filter: Option<&str>) -> Result<Option<GlobMatcher>, BatchError> {
    filter
        .map(|f| Glob::new(f).map(|g| g.compile_matcher()).map_err(|e| BatchError::Input(format!("filter {f:?}: {e}"))))
        .transpose()
}

fn local_files(
    base_dir: Option<&str>,
    filter: Option<&str>,
    files: &[String],
    access: &BatchAccess,
) -> Result<Vec<InputFile>, BatchError> {
    let mut out = Vec::new();
    let mut add = |path: &Path| -> Result<(), BatchError> {
        // Opened and checked as the split will open it: a regular file under an allowed directory.
        let (_, path, size) = access.open_local(path)?;
        out.push(InputFile { source: PieceSource::Local { path: path.display().to_string() }, size, version: None });
        Ok(())
    };
    for f in files {
        add(Path::new(f))?;
    }
    if let Some(base) = base_dir {
        let base = access.local_path(Path::new(base))?;
        let filter = matcher(filter)?;
        let mut found = Vec::new();
        walk(&base, 0, access, &mut found)?;
        found.sort();
        for path in found {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if filter.as_ref().is_none_or(|m| m.is_match(&name)) {
                add(&path)?;
            }
        }
    }
    Ok(out)
}

/// The files under `dir` (canonical), at most [`MAX_INPUT_NAMES`] and [`MAX_DEPTH`] levels
/// down, passing over the deployment's own stores (a `baseDir` of `.` beside `./.sluice`).
fn walk(dir: &Path, depth: usize, access: &BatchAccess, out: &mut Vec<std::path::PathBuf>) -> Result<(), BatchError> {
    let read = std::fs::read_dir(dir).map_err(|e| BatchError::Input(format!("{}: {e}", dir.display())))?;
    for entry in read {
        let entry = entry.map_err(|e| BatchError::Input(format!("{}: {e}", dir.display())))?;
        let kind = entry.file_type().map_err(|e| BatchError::Input(format!("{}: {e}", entry.path().display())))?;
        if kind.is_dir() && access.is_own(&entry.path()) {
            continue;
        } else if kind.is_dir() && depth < MAX_DEPTH {
            walk(&entry.path(), depth + 1, access, out)?;
        } else if kind.is_file() || kind.is_symlink() {
            out.push(entry.path());
        }
        if out.len() > MAX_INPUT_NAMES {
            return Err(BatchError::Input(format!("{} holds over {MAX_INPUT_NAMES} files", dir.display())));
        }
    }
    Ok(())
}

/// `s3://bucket/key` as its bucket and key.
pub fn parse_s3_uri(uri: &str) -> Result<(String, String), BatchError> {
    let bad = || BatchError::Input(format!("{uri:?}: expected s3://bucket/key"));
    let rest = uri.strip_prefix("s3://").ok_or_else(bad)?;
    let (bucket, key) = rest.split_once('/').ok_or_else(bad)?;
    if bucket.is_empty() {
        return Err(bad());
    }
    Ok((bucket.to_string(), key.to_string()))
}

async fn s3_files(
    uris: &[String],
    prefixes: &[String],
    objects: &[(String, String)],
    filter: Option<&str>,
    access: &BatchAccess,
) -> Result<Vec<InputFile>, BatchError> {
    let filter = matcher(filter)?;
    let mut named: Vec<(String, String)> = objects.to_vec();
    for uri in uris {
        named.push(parse_s3_uri(uri)?);
    }
    let mut out = Vec::new();
    for (bucket, key) in named {
        access.object(&bucket, &key)?;
        let store = open_store(&format!("s3://{bucket}")).await.map_err(|e| BatchError::Input(e.to_string()))?;
        let meta = store.head(&key).await.map_err(|e| BatchError::Input(format!("s3://{bucket}/{key}: {e}")))?;
        let meta = meta.ok_or_else(|| BatchError::Input(format!("s3://{bucket}/{key} does not exist")))?;
        out.push(InputFile { source: PieceSource::S3 { bucket, key }, size: meta.size, version: meta.version });
    }
    for prefix in prefixes {
        let (bucket, key_prefix) = parse_s3_uri(prefix)?;
        access.listing(&bucket, &key_prefix)?;
        let store = open_store(&format!("s3://{bucket}")).await.map_err(|e| BatchError::Input(e.to_string()))?;
        let listed = store.list(&key_prefix).await.map_err(|e| BatchError::Input(format!("{prefix}: {e}")))?;
        if listed.len() > MAX_INPUT_NAMES {
            return Err(BatchError::Input(format!("{prefix} holds over {MAX_INPUT_NAMES} objects")));
        }
        for o in listed.into_iter().filter(|o| !o.key.ends_with('/')) {
            if filter.as_ref().is_none_or(|m| m.is_match(&o.key)) {
                access.object(&bucket, &o.key)?;
                let source = PieceSource::S3 { bucket: bucket.clone(), key: o.key };
                out.push(InputFile { source, size: o.size, version: o.version });
            }
        }
    }
    Ok(out)
}

/// The files packed into splits by `hint`.
pub fn splits(files: &[InputFile], hint: SplitHint) -> Result<Vec<Vec<Piece>>, BatchError> {
    let mut out: Vec<Vec<Piece>> = Vec::new();
    let mut current: Vec<Piece> = Vec::new();
    let mut current_bytes = 0u64;
    let mut current_names = 0usize;
    let flush = |current: &mut Vec<Piece>, bytes: &mut u64, out: &mut Vec<Vec<Piece>>| {
        if !current.is_empty() {
            out.push(std::mem::take(current));
        }
        *bytes = 0;
    };
    for f in files {
        let gzip = f.gzip();
        if !gzip && f.size > hint.max_bytes {
            flush(&mut current, &mut current_bytes, &mut out);
            current_names = 0;
            let mut start = 0;
            while start < f.size {
                let end = (start + hint.max_bytes).min(f.size);
                let end = (end < f.size).then_some(end);
                out.push(vec![f.piece(start, end)]);
                start = end.unwrap_or(f.size);
                if out.len() > MAX_SPLITS {
                    break;
                }
            }
            continue;
        }
        let full = current_bytes + f.size > hint.max_bytes || current.len() >= hint.max_files;
        if !current.is_empty() && (full || current_names + f.name().len() > MAX_SPLIT_NAME_BYTES) {
            flush(&mut current, &mut current_bytes, &mut out);
            current_names = 0;
        }
        current_names += f.name().len();
        current.push(f.piece(0, None));
        current_bytes += f.size;
        if out.len() > MAX_SPLITS {
            break;
        }
    }
    flush(&mut current, &mut current_bytes, &mut out);
    if out.len() > MAX_SPLITS {
        return Err(BatchError::Input(format!(
            "the input makes over {MAX_SPLITS} splits: raise splitHintSpec.maxSplitSize or maxNumFiles"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, size: u64) -> InputFile {
        InputFile { source: PieceSource::Local { path: name.into() }, size, version: None }
    }

    #[test]
    fn small_files_are_packed_and_large_ones_cut_unless_gzipped() {
        let hint = SplitHint { max_bytes: 100, max_files: 2 };
        let files = [
            file("a", 30),
            file("b", 30),
            file("c", 30),
            file("big", 250),
            file("big.gz", 250),
            file("d", 60),
            file("e", 50),
        ];
        let got: Vec<Vec<(String, u64, Option<u64>)>> = splits(&files, hint)
            .expect("splits")
            .iter()
            .map(|s| {
                s.iter()
                    .map(|p| match &p.source {
                        PieceSource::Local { path } => (path.clone(), p.start, p.end),
                        other => panic!("{other:?}"),
                    })
                    .collect()
            })
            .collect();
        let w = |n: &str| (n.to_string(), 0, None);
        assert_eq!(
            got,
            vec![
                vec![w("a"), w("b")],
                vec![w("c")],
                vec![("big".into(), 0, Some(100))],
                vec![("big".into(), 100, Some(200))],
                vec![("big".into(), 200, None)],
                vec![w("big.gz")],
                vec![w("d")],
                vec![w("e")],
            ]
        );
        let many: Vec<InputFile> = (0..=MAX_SPLITS).map(|i| file(&format!("f{i}"), 100)).collect();
        assert!(splits(&many, hint).expect_err("too many").to_string().contains("maxSplitSize"));
    }

    #[tokio::test]
    async fn a_local_filter_walks_the_base_directory_in_order() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("day2")).expect("dir");
        for (name, body) in [("b.json", "2"), ("a.json", "1"), ("day2/c.json", "33"), ("notes.txt", "x")] {
            std::fs::write(dir.path().join(name), body).expect("write");
        }
        let access = BatchAccess::default().allow_dir(dir.path());
        let input = InputSource::Local {
            base_dir: Some(dir.path().display().to_string()),
            filter: Some("*.json".into()),
            files: vec![],
        };
        let files = input_files(&input, &access).await.expect("files");
        let names: Vec<(String, u64)> = files
            .iter()
            .map(|f| {
                (
                    Path::new(f.name())
                        .strip_prefix(dir.path().canonicalize().expect("dir"))
                        .expect("under")
                        .display()
                        .to_string(),
                    f.size,
                )
            })
            .collect();
        assert_eq!(names, vec![("a.json".into(), 1), ("b.json".into(), 1), ("day2/c.json".into(), 2)]);
        let zst = InputSource::Local {
            base_dir: None,
            filter: None,
            files: vec![dir.path().join("x.zst").display().to_string()],
        };
        std::fs::write(dir.path().join("x.zst"), "z").expect("write");
        assert!(input_files(&zst, &access).await.expect_err("zstd").to_string().contains("gzip"));
        assert!(input_files(&input, &BatchAccess::default()).await.is_err(), "nothing allowed");
        // A gzipped file is read whole by one invocation: at most a split's bytes, local or not.
        let big = dir.path().join("big.json.gz");
        std::fs::File::create(&big).and_then(|f| f.set_len(MAX_SPLIT_BYTES + 1)).expect("a sparse file");
        let gz = InputSource::Local { base_dir: None, filter: None, files: vec![big.display().to_string()] };
        let e = input_files(&gz, &access).await.expect_err("too large to read whole").to_string();
        assert!(e.contains("read whole"), "{e}");
        assert_eq!(parse_s3_uri("s3://b/a/k.json").expect("uri"), ("b".into(), "a/k.json".into()));
        assert!(parse_s3_uri("s3:///k").is_err() && parse_s3_uri("https://b/k").is_err());
    }
}

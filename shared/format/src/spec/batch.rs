//! Druid's native batch task spec (`index_parallel`; `index` reads the same): its `dataSchema`
//! and `tuningConfig` load as a supervisor spec's do, with one parser and one set of rules; its
//! `ioConfig` names the input source (`inline`, `local`, `s3`) and whether the task appends
//! beside the datasource's segments (`appendToExisting`) or overwrites the time chunks it
//! covers (`dropExisting` widens that to every chunk of `granularitySpec.intervals`).

use super::{load_spec_value, DatasourceSpec, SpecError, SpecWarning};
use crate::time::Interval;
use serde_json::{json, Map, Value};

/// Bytes of `inline` data a spec may hold (it is kept in one metadata item).
pub const MAX_INLINE_BYTES: usize = 256 << 10;
/// Files, URIs, prefixes and objects an input source may name.
pub const MAX_INPUT_NAMES: usize = 10_000;
/// Characters of a task id.
pub const MAX_TASK_ID_CHARS: usize = 200;
/// Druid's default `splitHintSpec.maxSplitSize` for Sluice: the bytes one indexer invocation
/// reads (files are cut into line-aligned ranges of this size, unless gzipped).
pub const DEFAULT_SPLIT_BYTES: u64 = 256 << 20;
/// The largest `maxSplitSize` taken: what one invocation reads in its 15 minutes (an S3 piece
/// is held in memory while it is read).
pub const MAX_SPLIT_BYTES: u64 = 1 << 30;
/// Druid's default `splitHintSpec.maxNumFiles`.
pub const DEFAULT_SPLIT_FILES: usize = 1_000;
/// Druid's default `maxNumConcurrentSubTasks`.
pub const DEFAULT_CONCURRENT_SPLITS: u32 = 1;
/// The most concurrent indexer invocations one task asks for.
pub const MAX_CONCURRENT_SPLITS: u32 = 1_000;

/// Where a batch task's records come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputSource {
    /// The records are in the spec.
    Inline {
        /// Newline-delimited records.
        data: String,
    },
    /// Files of the machine the indexer runs on (only under the directories it is allowed).
    Local {
        /// The directory whose files `filter` matches.
        base_dir: Option<String>,
        /// A wildcard over file names under `base_dir` (`*.json.gz`).
        filter: Option<String>,
        /// Files named one by one.
        files: Vec<String>,
    },
    /// Objects of S3 buckets (only the buckets the indexer is allowed).
    S3 {
        /// `s3://bucket/key` objects.
        uris: Vec<String>,
        /// `s3://bucket/prefix` prefixes: every object under each.
        prefixes: Vec<String>,
        /// `{bucket, path}` objects.
        objects: Vec<(String, String)>,
        /// A wildcard over object keys (`*.json`).
        filter: Option<String>,
    },
}

/// How the input is cut into splits: one indexer invocation each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitHint {
    /// Bytes of input one split holds at most (a larger file is cut into line-aligned ranges,
    /// a gzipped one is never cut).
    pub max_bytes: u64,
    /// Files one split holds at most.
    pub max_files: usize,
}

/// A batch task spec, resolved.
#[derive(Debug, Clone)]
pub struct BatchSpec {
    /// The task id the spec asks for (`id`), if any.
    pub id: Option<String>,
    /// The data schema, input format and tuning, as a supervisor spec of the datasource holds
    /// them (its Kafka settings are placeholders, never used).
    pub spec: DatasourceSpec,
    /// Where the records are.
    pub input: InputSource,
    /// `appendToExisting`: the new segments go beside the visible ones; otherwise they replace
    /// the visible segments of the chunks they cover.
    pub append: bool,
    /// `dropExisting`: an overwrite replaces every chunk of `intervals`, data or not.
    pub drop_existing: bool,
    /// `granularitySpec.intervals`: rows outside are thrown away (empty: every row is kept).
    pub intervals: Vec<Interval>,
    /// `maxNumConcurrentSubTasks`: indexer invocations at once.
    pub max_concurrent: u32,
    /// `splitHintSpec`.
    pub split: SplitHint,
}

/// A loaded batch spec with the warnings found while loading it.
#[derive(Debug, Clone)]
pub struct LoadedBatch {
    /// The spec.
    pub batch: BatchSpec,
    /// Options ignored or unknown, by name.
    pub warnings: Vec<SpecWarning>,
}

/// Whether `id` may name a task: 1 to [`MAX_TASK_ID_CHARS`] characters of letters, digits and
/// `_-.:`.
pub fn task_id_problem(id: &str) -> Option<String> {
    if id.is_empty() || id.chars().count() > MAX_TASK_ID_CHARS {
        return Some(format!("a task id has 1 to {MAX_TASK_ID_CHARS} characters"));
    }
    if !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')) {
        return Some("a task id holds letters, digits and _-.: only".into());
    }
    if id.starts_with('.') {
        return Some("a task id does not start with '.'".into());
    }
    None
}

/// Loads a Druid batch task spec (`{"type": "index_parallel", "spec": {...}}`).
pub fn load_batch_value(raw: Value) -> Result<LoadedBatch, SpecError> {
    let Value::Object(mut top) = raw else { return Err(SpecError::field("(task)", "expected a JSON object")) };
    let kind = top.remove("type").and_then(|t| t.as_str().map(String::from));
    match kind.as_deref() {
        Some("index_parallel" | "index") => {}
        Some(other) => {
            return Err(SpecError::field(
                "type",
                format!("task type {other:?} is not supported: Sluice runs index_parallel (and index) batch tasks"),
            ))
        }
        None => return Err(SpecError::field("type", "expected \"index_parallel\"")),
    }
    let mut warnings = Vec::new();
    let id = match top.remove("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => match task_id_problem(&id) {
            Some(problem) => return Err(SpecError::field("id", problem)),
            None => Some(id),
        },
        Some(_) => return Err(SpecError::field("id", "expected a string")),
    };
    let Some(Value::Object(mut spec)) = top.remove("spec") else {
        return Err(SpecError::field("spec", "expected an object holding dataSchema, ioConfig and tuningConfig"));
    };
    for key in top.keys() {
        let message = if key == "context" { "task context is ignored" } else { "unknown option, ignored" };
        warnings.push(SpecWarning { field: key.clone(), message: message.into() });
    }
    let mut io = match spec.remove("ioConfig") {
        Some(Value::Object(io)) => io,
        _ => return Err(SpecError::field("spec.ioConfig", "expected an object")),
    };
    let mut schema = match spec.remove("dataSchema") {
        Some(Value::Object(schema)) => schema,
        _ => return Err(SpecError::field("spec.dataSchema", "expected an object")),
    };
    let intervals = take_intervals(&mut schema)?;
    let tuning = match spec.remove("tuningConfig") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(t)) => t,
        Some(_) => return Err(SpecError::field("spec.tuningConfig", "expected an object")),
    };
    for key in spec.keys() {
        warnings.push(SpecWarning { field: format!("spec.{key}"), message: "unknown option, ignored".into() });
    }
    let io_kind = io.remove("type");
    if let Some(t) = io_kind.as_ref().filter(|t| !matches!(t.as_str(), Some("index_parallel" | "index"))) {
        return Err(SpecError::field("spec.ioConfig.type", format!("expected \"index_parallel\", got {t}")));
    }
    if io.contains_key("firehose") {
        return Err(SpecError::field("spec.ioConfig.firehose", "firehoses were removed from Druid: use inputSource"));
    }
    let input = input_source(io.remove("inputSource"))?;
    let input_format = io.remove("inputFormat").ok_or_else(|| {
        SpecError::field("spec.ioConfig.inputFormat", "expected an input format (json, csv, tsv, regex, ...)")
    })?;
    if input_format.get("type").and_then(Value::as_str) == Some("kafka") {
        return Err(SpecError::field("spec.ioConfig.inputFormat.type", "the kafka format reads Kafka records only"));
    }
    let append = flag(&mut io, "appendToExisting")?;
    let drop_existing = flag(&mut io, "dropExisting")?;
    if drop_existing && (append || intervals.is_empty()) {
        return Err(SpecError::field(
            "spec.ioConfig.dropExisting",
            "dropExisting needs appendToExisting false and granularitySpec.intervals (the chunks it empties)",
        ));
    }
    for key in io.keys() {
        warnings.push(SpecWarning { field: format!("spec.ioConfig.{key}"), message: "unknown option, ignored".into() });
    }
    let (tuning, max_concurrent, split) = batch_tuning(tuning, &mut warnings)?;
    let supervisor = json!({"type": "kafka", "spec": {
        "dataSchema": Value::Object(schema),
        "ioConfig": {"topic": "batch", "consumerProperties": {"bootstrap.servers": "batch.invalid:9092"},
            "inputFormat": input_format},
        "tuningConfig": Value::Object(tuning),
    }});
    let loaded = load_spec_value(supervisor)?;
    warnings.extend(loaded.warnings);
    let batch = BatchSpec { id, spec: loaded.spec, input, append, drop_existing, intervals, max_concurrent, split };
    Ok(LoadedBatch { batch, warnings })
}

/// Removes and parses `granularitySpec.intervals` (a batch-only field the supervisor spec
/// loader warns about).
fn take_intervals(schema: &mut Map<String, Value>) -> Result<Vec<Interval>, SpecError> {
    let field = "spec.dataSchema.granularitySpec.intervals";
    let Some(Value::Object(g)) = schema.get_mut("granularitySpec") else { return Ok(Vec::new()) };
    let texts = match g.remove("intervals") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(texts)) if texts.len() <= MAX_INPUT_NAMES => texts,
        Some(_) => return Err(SpecError::field(field, format!("expected at most {MAX_INPUT_NAMES} intervals"))),
    };
    let mut out = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let text = text.as_str().ok_or_else(|| SpecError::field(format!("{field}[{i}]"), "expected a string"))?;
        let interval = Interval::parse(text).map_err(|e| SpecError::field(format!("{field}[{i}]"), e.to_string()))?;
        if interval.end <= interval.start {
            return Err(SpecError::field(format!("{field}[{i}]"), "an interval ends after it starts"));
        }
        out.push(interval);
    }
    Ok(out)
}

fn flag(io: &mut Map<String, Value>, name: &str) -> Result<bool, SpecError> {
    match io.remove(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(_) => Err(SpecError::field(format!("spec.ioConfig.{name}"), "expected true or false")),
    }
}

/// The supervisor's `tuningConfig` a batch `tuningConfig` amounts to, with the batch-only
/// settings taken out.
fn batch_tuning(
    mut tuning: Map<String, Value>,
    warnings: &mut Vec<SpecWarning>,
) -> Result<(Map<String, Value>, u32, SplitHint), SpecError> {
    let f = |name: &str| format!("spec.tuningConfig.{name}");
    if let Some(t) = tuning.remove("type").filter(|t| !matches!(t.as_str(), Some("index_parallel" | "index"))) {
        return Err(SpecError::field(f("type"), format!("expected \"index_parallel\", got {t}")));
    }
    if tuning.remove("forceGuaranteedRollup").is_some_and(|v| v == Value::Bool(true)) {
        return Err(SpecError::field(
            f("forceGuaranteedRollup"),
            "perfect rollup (hashed or range partitioning) is not supported: a batch task appends dynamic partitions; \
             compaction rolls them up afterwards",
        ));
    }
    if let Some(p) = tuning.remove("partitionsSpec") {
        match p.get("type").and_then(Value::as_str) {
            None | Some("dynamic") => {
                for key in ["maxRowsPerSegment", "maxTotalRows"] {
                    if let Some(v) = p.get(key) {
                        tuning.insert(key.into(), v.clone());
                    }
                }
            }
            Some(other) => {
                return Err(SpecError::field(
                    f("partitionsSpec.type"),
                    format!("{other:?} partitioning is not supported: use \"dynamic\""),
                ))
            }
        }
    }
    let max_concurrent = match tuning.remove("maxNumConcurrentSubTasks") {
        None | Some(Value::Null) => DEFAULT_CONCURRENT_SPLITS,
        Some(v) => match v.as_u64() {
            Some(n @ 1..) => n.min(u64::from(MAX_CONCURRENT_SPLITS)) as u32,
            _ => return Err(SpecError::field(f("maxNumConcurrentSubTasks"), "expected a count of at least 1")),
        },
    };
    let mut split = SplitHint { max_bytes: DEFAULT_SPLIT_BYTES, max_files: DEFAULT_SPLIT_FILES };
    if let Some(hint) = tuning.remove("splitHintSpec") {
        match hint.get("type").and_then(Value::as_str) {
            Some("maxSize") => {
                if let Some(v) = hint.get("maxSplitSize") {
                    let bytes = v.as_u64().filter(|b| *b > 0).ok_or_else(|| {
                        SpecError::field(f("splitHintSpec.maxSplitSize"), "expected a byte count above 0")
                    })?;
                    split.max_bytes = bytes.min(MAX_SPLIT_BYTES);
                }
                if let Some(v) = hint.get("maxNumFiles") {
                    let files = v
                        .as_u64()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| SpecError::field(f("splitHintSpec.maxNumFiles"), "expected a count above 0"))?;
                    split.max_files = files.min(MAX_INPUT_NAMES as u64) as usize;
                }
            }
            other => {
                return Err(SpecError::field(
                    f("splitHintSpec.type"),
                    format!("expected \"maxSize\", got {}", other.unwrap_or("nothing")),
                ))
            }
        }
    }
    for key in
        ["maxRetry", "taskStatusCheckPeriodMs", "chatHandlerTimeout", "chatHandlerNumRetries", "totalNumMergeTasks"]
    {
        if tuning.remove(key).is_some() {
            warnings.push(SpecWarning {
                field: f(key),
                message: "ignored: splits are retried by the supervisor until they publish".into(),
            });
        }
    }
    tuning.insert("type".into(), "kafka".into());
    Ok((tuning, max_concurrent, split))
}

/// Reads `inputSource`, refusing what could reach credentials or other endpoints.
fn input_source(raw: Option<Value>) -> Result<InputSource, SpecError> {
    let field = "spec.ioConfig.inputSource";
    let Some(Value::Object(mut source)) = raw else {
        return Err(SpecError::field(field, "expected an object (inline, local or s3)"));
    };
    let kind = source.remove("type").and_then(|t| t.as_str().map(String::from)).unwrap_or_default();
    let strings = |source: &mut Map<String, Value>, name: &str| -> Result<Vec<String>, SpecError> {
        let bad = || SpecError::field(format!("{field}.{name}"), format!("expected at most {MAX_INPUT_NAMES} strings"));
        match source.remove(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) if items.len() <= MAX_INPUT_NAMES => {
                items.into_iter().map(|v| v.as_str().map(String::from).ok_or_else(bad)).collect()
            }
            Some(_) => Err(bad()),
        }
    };
    let text = |source: &mut Map<String, Value>, name: &str| -> Result<Option<String>, SpecError> {
        match source.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(SpecError::field(format!("{field}.{name}"), "expected a string")),
        }
    };
    let out = match kind.as_str() {
        "inline" => {
            let data = text(&mut source, "data")?.unwrap_or_default();
            if data.len() > MAX_INLINE_BYTES {
                return Err(SpecError::field(
                    format!("{field}.data"),
                    format!(
                        "{} bytes of inline data, over {MAX_INLINE_BYTES}: use a local or s3 input source",
                        data.len()
                    ),
                ));
            }
            InputSource::Inline { data }
        }
        "local" => {
            let base_dir = text(&mut source, "baseDir")?;
            let filter = text(&mut source, "filter")?;
            let files = strings(&mut source, "files")?;
            if base_dir.is_none() && files.is_empty() {
                return Err(SpecError::field(field, "a local input source names baseDir (with filter) or files"));
            }
            InputSource::Local { base_dir, filter, files }
        }
        "s3" => {
            for refused in ["properties", "endpointConfig", "clientConfig", "proxyConfig", "awsAssumedRoleArn"] {
                if source.contains_key(refused) {
                    return Err(SpecError::field(
                        format!("{field}.{refused}"),
                        "not accepted: the indexer reads S3 with its own role and endpoint, never with credentials \
                         or endpoints from a spec",
                    ));
                }
            }
            let uris = strings(&mut source, "uris")?;
            let prefixes = strings(&mut source, "prefixes")?;
            let objects = match source.remove("objects") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) if items.len() <= MAX_INPUT_NAMES => items
                    .iter()
                    .map(|o| match (o.get("bucket").and_then(Value::as_str), o.get("path").and_then(Value::as_str)) {
                        (Some(b), Some(p)) => Ok((b.to_string(), p.to_string())),
                        _ => Err(SpecError::field(format!("{field}.objects"), "each object has a bucket and a path")),
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(SpecError::field(format!("{field}.objects"), "expected an array")),
            };
            let filter = text(&mut source, "filter")?;
            if [uris.is_empty(), prefixes.is_empty(), objects.is_empty()].iter().filter(|e| !**e).count() != 1 {
                return Err(SpecError::field(field, "an s3 input source names exactly one of uris, prefixes, objects"));
            }
            InputSource::S3 { uris, prefixes, objects, filter }
        }
        other => {
            return Err(SpecError::field(
                format!("{field}.type"),
                format!("input source {other:?} is not supported: use inline, local or s3"),
            ))
        }
    };
    if let Some(key) = source.keys().next() {
        return Err(SpecError::field(format!("{field}.{key}"), "unknown option"));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;

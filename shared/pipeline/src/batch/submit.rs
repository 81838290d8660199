//! Submitting a batch task: the spec checked, its input listed and cut into splits, then the
//! id claimed and the task's items written. A resubmission of the same spec under the same id
//! is the same task (nothing new is written); another spec under a taken id is refused.

use super::access::BatchAccess;
use super::plan::{input_files, splits};
use super::BatchError;
use crate::datasource;
use crate::item::{parse_body, to_json, DatasourceError};
use crate::keys::{batch_pk, batch_task_sk, datasource_pk, split_sk, BATCH_IDS_PK, BATCH_SPEC_SK};
use sluice_format::spec::batch::{load_batch_value, task_id_problem};
use sluice_format::spec::InputFormat;
use sluice_format::spec::SpecWarning;
use sluice_format::time::format_iso;
use sluice_layout::batch::{BatchIdItem, BatchSpecItem, BatchState, BatchTaskItem, Piece, SplitItem};
use sluice_store::metadata::{Condition, Item, MetaError, MetadataStore};

/// A task submitted.
#[derive(Debug, Clone)]
pub struct Submitted {
    /// Its id.
    pub id: String,
    /// Its datasource.
    pub datasource: String,
    /// Its splits.
    pub splits: u32,
    /// The spec's ignored or unknown options.
    pub warnings: Vec<SpecWarning>,
    /// The same spec was submitted under this id before: this is that task.
    pub existed: bool,
}

/// Submits a batch spec into its datasource, which must exist (a supervisor spec submitted):
/// its segments go beside the stream's. Input is read only where `access` allows.
pub async fn submit(
    meta: &dyn MetadataStore,
    access: &BatchAccess,
    raw: serde_json::Value,
    now_ms: i64,
) -> Result<Submitted, BatchError> {
    let text = canonical(&raw).to_string();
    if text.len() > MAX_SPEC_BYTES {
        return Err(BatchError::Input(format!(
            "the spec is {} bytes of JSON, over {MAX_SPEC_BYTES}: it is kept in one metadata item",
            text.len()
        )));
    }
    let digest = format!("{:016x}", xxhash_rust::xxh64::xxh64(text.as_bytes(), 0));
    let loaded = load_batch_value(raw.clone())?;
    let batch = loaded.batch;
    let name = batch.spec.data_source.clone();
    datasource::load(meta, &name).await.map_err(|e| match e {
        DatasourceError::Unknown(_) => BatchError::Input(format!(
            "datasource {name:?} does not exist: a batch task writes into a datasource whose supervisor spec \
             was submitted (POST /druid/indexer/v1/supervisor)"
        )),
        e => e.into(),
    })?;
    let id = batch.id.clone().unwrap_or_else(|| generated_id(&name, now_ms));
    let files = input_files(&batch.input, access).await?;
    let planned = splits(&files, batch.split)?;
    header_rows_fit(&batch.spec.input_format, &planned)?;
    let claim = BatchIdItem { datasource: name.clone(), digest };
    match meta.put(Item::new(BATCH_IDS_PK, &id, to_json(&claim)), Condition::Absent).await {
        Ok(_) => {}
        Err(MetaError::ConditionFailed { .. }) => {
            let held = meta.get(BATCH_IDS_PK, &id).await?.ok_or_else(|| BatchError::IdTaken(id.clone()))?;
            if parse_body::<BatchIdItem>(&name, &held)? != claim {
                return Err(BatchError::IdTaken(id));
            }
        }
        Err(e) => return Err(e.into()),
    }
    let pk = batch_pk(&id);
    meta.put(Item::new(&pk, BATCH_SPEC_SK, to_json(&BatchSpecItem { spec: raw })), Condition::None).await?;
    for (n, pieces) in planned.iter().enumerate() {
        let split = SplitItem::pending(n as u32, pieces.clone());
        match meta.put(Item::new(&pk, split_sk(n as u32), to_json(&split)), Condition::Absent).await {
            Ok(_) => {}
            // Written by an earlier submission of this id: its input must have been listed alike.
            Err(MetaError::ConditionFailed { .. }) => {
                let held = meta.get(&pk, &split_sk(n as u32)).await?;
                let held = held.map(|item| parse_body::<SplitItem>(&name, &item)).transpose()?;
                if held.is_some_and(|h| !same_pieces(&h.pieces, &split.pieces)) {
                    return Err(BatchError::Input(format!(
                        "task {id} was submitted before and its input is listed otherwise now (files added, \
                         grown or gone): submit it under a new id"
                    )));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    let task = BatchTaskItem {
        id: id.clone(),
        datasource: name.clone(),
        state: BatchState::Running,
        splits: planned.len() as u32,
        append: batch.append,
        max_concurrent: batch.max_concurrent,
        created_ms: now_ms,
        finished_ms: None,
        error: None,
        replace: None,
        segments: 0,
        replaced: 0,
        meters: None,
        publish_attempts: 0,
    };
    let existed =
        match meta.put(Item::new(datasource_pk(&name), batch_task_sk(&id), to_json(&task)), Condition::Absent).await {
            Ok(_) => false,
            Err(MetaError::ConditionFailed { .. }) => true,
            Err(e) => return Err(e.into()),
        };
    Ok(Submitted { id, datasource: name, splits: planned.len() as u32, warnings: loaded.warnings, existed })
}

/// Whether `held` (written by an earlier submission) lists the pieces `planned` does: a piece
/// an earlier release wrote without its file's size or its object's version matches one with
/// them.
fn same_pieces(held: &[Piece], planned: &[Piece]) -> bool {
    let same = |h: &Piece, p: &Piece| {
        let size = h.size.and(p.size);
        let version = h.version.as_ref().and(p.version.clone());
        *h == Piece { size, version, ..p.clone() }
    };
    held.len() == planned.len() && held.iter().zip(planned).all(|(h, p)| same(h, p))
}

/// Refuses header rows (`findColumnsFromHeader`, `skipHeaderRows`) over splits that are not
/// each one whole file: a split's parser reads them once, from its first line.
fn header_rows_fit(format: &InputFormat, planned: &[Vec<Piece>]) -> Result<(), BatchError> {
    let (InputFormat::Csv(d) | InputFormat::Tsv(d)) = format else { return Ok(()) };
    if !d.find_columns_from_header && d.skip_header_rows == 0 {
        return Ok(());
    }
    if planned.iter().all(|s| s.len() == 1 && s[0].start == 0 && s[0].end.is_none()) {
        return Ok(());
    }
    Err(BatchError::Input(
        "findColumnsFromHeader and skipHeaderRows are read once per split, from its first line: give the columns, \
         or set splitHintSpec maxNumFiles 1 and a maxSplitSize above the largest file"
            .into(),
    ))
}

/// Bytes of a batch spec's JSON at most (its metadata item stays under DynamoDB's 400 KB).
pub const MAX_SPEC_BYTES: usize = 350_000;

/// `v` with every object's keys in order: the same spec hashes alike whatever its key order.
fn canonical(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            serde_json::Value::Object(keys.into_iter().map(|k| (k.clone(), canonical(&m[k]))).collect())
        }
        serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Druid's form of a task id: `index_parallel_<datasource>_<random>_<time>` (without the
/// datasource when its name cannot be in an id).
fn generated_id(datasource: &str, now_ms: i64) -> String {
    let random: String = (0..8).map(|_| fastrand::lowercase()).collect();
    let id = format!("index_parallel_{datasource}_{random}_{}", format_iso(now_ms));
    if task_id_problem(&id).is_none() {
        id
    } else {
        format!("index_parallel_{random}_{}", format_iso(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_layout::batch::PieceSource;

    fn format(header: bool) -> InputFormat {
        let spec = serde_json::json!({"type": "index_parallel", "spec": {
            "dataSchema": {"dataSource": "d", "timestampSpec": {"column": "t"}, "dimensionsSpec": {"dimensions": []}},
            "ioConfig": {"inputSource": {"type": "inline", "data": ""},
                "inputFormat": if header { serde_json::json!({"type": "csv", "findColumnsFromHeader": true}) }
                    else { serde_json::json!({"type": "csv", "columns": ["t", "a"]}) }}}});
        load_batch_value(spec).expect("spec").batch.spec.input_format
    }

    #[test]
    fn header_rows_need_each_split_to_be_one_whole_file() {
        let piece = |path: &str, start, end| Piece {
            source: PieceSource::Local { path: path.into() },
            start,
            end,
            gzip: false,
            size: None,
            version: None,
        };
        let whole = vec![vec![piece("a", 0, None)], vec![piece("b", 0, None)]];
        let packed = vec![vec![piece("a", 0, None), piece("b", 0, None)]];
        let cut = vec![vec![piece("a", 0, Some(10))], vec![piece("a", 10, None)]];
        assert!(header_rows_fit(&format(true), &whole).is_ok());
        for planned in [&packed, &cut] {
            let e = header_rows_fit(&format(true), planned).expect_err("a header read once per split");
            assert!(e.to_string().contains("findColumnsFromHeader"), "{e}");
            assert!(header_rows_fit(&format(false), planned).is_ok(), "columns given");
        }
    }
}

//! The merged schema: dimension order (a topological merge of the inputs' orders) and
//! dictionaries (a k-way merge of the inputs' sorted dictionaries).

use super::MergeError;
use crate::segment::{sort_prefix, ColumnType, DictionaryTooLarge, Segment, StoredDictionary};
use crate::spec::MultiValueHandling;
use std::collections::HashMap;

/// Orders the union of the inputs' dimensions so that each input's order is kept (a
/// topological merge); inputs that disagree are an error. The path columns of `json` columns
/// come last, sorted by name (their parent and path), whatever order each input has them in;
/// a `json` column whose inputs hold more than [`crate::json_path::MAX_PATHS`] paths in all
/// keeps none (it is incomplete: see [`incomplete_columns`]).
pub fn merged_dimension_order(inputs: &[Segment]) -> Result<Vec<(String, ColumnType, MultiValueHandling)>, MergeError> {
    let mut names: Vec<(String, ColumnType, MultiValueHandling)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut edges: Vec<Vec<usize>> = Vec::new();
    let auto = auto_names(inputs);
    let mut paths: std::collections::BTreeMap<String, (ColumnType, MultiValueHandling)> = Default::default();
    let dropped = incomplete_columns(inputs);
    for seg in inputs {
        let mut prev: Option<usize> = None;
        for col in seg.directory().columns.iter().filter(|c| !matches!(c.kind, ColumnType::Time | ColumnType::Metric)) {
            if let Some(p) = &col.nested_path {
                if !dropped.contains(&p.column) {
                    paths.insert(col.name.clone(), (col.kind, col.multi_value_handling.unwrap_or_default()));
                }
                continue;
            }
            let id = match index.get(&col.name) {
                Some(&id) => {
                    // An `auto` column typed differently by its inputs is indexed again (see
                    // [`auto_types_differ`]).
                    if names[id].1 != col.kind && !auto.contains(col.name.as_str()) {
                        return Err(MergeError::Incompatible {
                            object: seg.object().into(),
                            reason: format!(
                                "dimension {:?} is {:?} here and {:?} elsewhere",
                                col.name, col.kind, names[id].1
                            ),
                        });
                    }
                    id
                }
                None => {
                    index.insert(col.name.clone(), names.len());
                    names.push((col.name.clone(), col.kind, col.multi_value_handling.unwrap_or_default()));
                    edges.push(Vec::new());
                    names.len() - 1
                }
            };
            if let Some(p) = prev {
                edges[p].push(id);
            }
            prev = Some(id);
        }
    }
    let mut indegree = vec![0usize; names.len()];
    edges.iter().flatten().for_each(|&b| indegree[b] += 1);
    let mut order = Vec::with_capacity(names.len());
    let mut done = vec![false; names.len()];
    while order.len() < names.len() {
        let next =
            (0..names.len()).find(|&i| !done[i] && indegree[i] == 0).ok_or_else(|| MergeError::Incompatible {
                object: inputs[0].object().into(),
                reason: "inputs disagree on the order of their dimensions".into(),
            })?;
        done[next] = true;
        edges[next].iter().for_each(|&b| indegree[b] -= 1);
        order.push(names[next].clone());
    }
    order.extend(paths.into_iter().map(|(name, (kind, mvh))| (name, kind, mvh)));
    Ok(order)
}

/// The names some input marks `auto`.
fn auto_names(inputs: &[Segment]) -> std::collections::HashSet<&str> {
    inputs.iter().flat_map(|s| s.directory().columns.iter()).filter(|c| c.auto).map(|c| c.name.as_str()).collect()
}

/// The `json` columns the merge marks incomplete: an input says so, or the inputs hold more
/// than [`crate::json_path::MAX_PATHS`] of its paths together (then none is kept).
pub fn incomplete_columns(inputs: &[Segment]) -> std::collections::HashSet<String> {
    let mut paths: HashMap<&str, std::collections::HashSet<&str>> = HashMap::new();
    let mut out = std::collections::HashSet::new();
    for c in inputs.iter().flat_map(|s| s.directory().columns.iter()) {
        if c.incomplete {
            out.insert(c.name.clone());
        }
        if let Some(p) = &c.nested_path {
            paths.entry(p.column.as_str()).or_default().insert(c.name.as_str());
        }
    }
    out.extend(paths.into_iter().filter(|(_, p)| p.len() > crate::json_path::MAX_PATHS).map(|(c, _)| c.to_string()));
    out
}

/// Whether a column some input marks `auto` is stored as different types by different inputs
/// (an `auto` one or a declared one): such inputs are indexed again, which types the column
/// from all their values.
pub fn auto_types_differ(inputs: &[Segment]) -> bool {
    let auto = auto_names(inputs);
    let mut kinds: HashMap<&str, ColumnType> = HashMap::new();
    inputs.iter().flat_map(|s| s.directory().columns.iter()).filter(|c| auto.contains(c.name.as_str())).any(|c| {
        let kind = *kinds.entry(c.name.as_str()).or_insert(c.kind);
        kind != c.kind
    })
}

/// Whether the merged column `name` gets a bitmap per value: unless no input that has the
/// column has them (`createBitmapIndex: false` carries over through merges and re-indexing).
pub fn keeps_bitmaps(inputs: &[Segment], name: &str) -> bool {
    let mut having = inputs.iter().filter_map(|s| s.column(name)).peekable();
    having.peek().is_none() || having.any(|c| c.parts.contains_key("bitmaps"))
}

/// K-way merges sorted dictionaries into their sorted union, returning it with each input's
/// table from local id (0 null, k value k-1) to merged code; fails when the union would pass
/// 4 GiB.
pub fn merge_dictionaries(
    locals: &[StoredDictionary],
) -> Result<(StoredDictionary, Vec<Vec<u32>>), DictionaryTooLarge> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut tables: Vec<Vec<u32>> = locals
        .iter()
        .map(|l| {
            let mut t = Vec::with_capacity(l.len() + 1);
            t.push(0);
            t
        })
        .collect();
    // (value's sort prefix, value, input, its index): values are borrowed, each copied once
    // into the union; most comparisons are of the prefixes alone.
    let head = |i: usize, k: usize| {
        let v = locals[i].get(k);
        Reverse((sort_prefix(v), v, i, k))
    };
    let mut heap: BinaryHeap<Reverse<(u64, &str, usize, usize)>> =
        locals.iter().enumerate().filter(|(_, l)| !l.is_empty()).map(|(i, _)| head(i, 0)).collect();
    let most = |f: fn(&StoredDictionary) -> usize| locals.iter().map(f).max().unwrap_or(0);
    let mut merged = StoredDictionary::with_capacity(most(StoredDictionary::len), most(StoredDictionary::bytes));
    // The smallest head is replaced in place by its input's next value: one sift per value.
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((_, v, i, k)) = *top;
        if merged.last() != Some(v) {
            merged.push(v)?;
        }
        tables[i].push(merged.len() as u32);
        if k + 1 < locals[i].len() {
            *top = head(i, k + 1);
        } else {
            std::collections::binary_heap::PeekMut::pop(top);
        }
    }
    Ok((merged, tables))
}

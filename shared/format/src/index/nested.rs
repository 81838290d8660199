//! The path columns of `json` dimensions, built when a hydrant is persisted: each distinct
//! document of the column's sorted dictionary is parsed once, and each literal path found
//! becomes a string column of its own (sorted dictionary, one id per row, bitmaps), so that a
//! path is read and filtered without parsing documents.

use crate::json_path::{literal_paths, literal_text, MAX_PATHS};
use crate::segment::{DimLayout, FormatError, NestedPath, StoredDictionary};
use crate::spec::{DimensionType, MultiValueHandling};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One path column of a `json` dimension.
pub(super) struct PathColumn {
    /// Its layout (a string dimension naming its `json` column and path).
    pub layout: DimLayout,
    /// The `json` dimension's position among the persisted dimensions.
    pub parent: usize,
    /// (document id in the parent's dictionary, value id in this column's), for the documents
    /// holding the path.
    pub ids: Vec<(u32, u32)>,
}

impl PathColumn {
    /// This column's code of each row, from the parent's codes (0 null, id otherwise).
    pub fn codes(&self, parent_codes: impl Iterator<Item = u32>, documents: usize) -> Vec<u32> {
        let mut by_document = vec![0u32; documents + 1];
        for &(doc, id) in &self.ids {
            by_document[doc as usize] = id;
        }
        parent_codes.map(|c| by_document.get(c as usize).copied().unwrap_or(0)).collect()
    }
}

/// The path columns of the `json` dimension `name` (at `parent`) whose documents are
/// `documents`, paths in normalized order; and whether some path was left without a column
/// (past [`MAX_PATHS`]).
pub(super) fn path_columns(
    name: &str,
    parent: usize,
    documents: &StoredDictionary,
    bitmaps: bool,
) -> Result<(Vec<PathColumn>, bool), FormatError> {
    let mut by_path: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
    let mut incomplete = false;
    for k in 0..documents.len() {
        let doc: serde_json::Value = serde_json::from_str(documents.get(k))
            .map_err(|e| FormatError::new("incremental index", format!("json dimension {name:?}: {e}")))?;
        let mut literals = Vec::new();
        incomplete |= !literal_paths(&doc, MAX_PATHS, &mut literals);
        for (path, value) in &literals {
            let Some(text) = literal_text(value) else { continue };
            let key = path.text();
            // A key the normalized form cannot say (quotes of both kinds) is read from the documents.
            let round_trips = crate::json_path::JsonPath::parse(&key).is_ok_and(|p| p == *path);
            if !round_trips || (!by_path.contains_key(&key) && by_path.len() >= MAX_PATHS) {
                incomplete = true;
                continue;
            }
            by_path.entry(key).or_default().push((k as u32 + 1, text));
        }
    }
    let mut columns = Vec::with_capacity(by_path.len());
    for (path, values) in by_path {
        let mut distinct: Vec<&str> = values.iter().map(|(_, v)| v.as_str()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut dictionary = StoredDictionary::with_capacity(distinct.len(), distinct.iter().map(|s| s.len()).sum());
        for v in &distinct {
            dictionary.push(v).map_err(|e| FormatError::new("incremental index", e.to_string()))?;
        }
        let ids = (values.iter())
            .map(|(doc, v)| (*doc, distinct.binary_search(&v.as_str()).map_or(0, |i| i as u32 + 1)))
            .collect();
        columns.push(PathColumn {
            layout: DimLayout {
                name: NestedPath::column_name(name, &path),
                kind: DimensionType::String,
                multi_value_handling: MultiValueHandling::SortedArray,
                dictionary: Arc::new(dictionary),
                bitmap_index: bitmaps,
                nested_path: Some(NestedPath { column: name.to_string(), path }),
                incomplete: false,
                auto: false,
            },
            parent,
            ids,
        });
    }
    Ok((columns, incomplete))
}

//! `json` columns as a query reads them. A path (`nested-field`, or `json_value(x, path)` of
//! one column) is read from the path's own column where the segment stores one, with its
//! dictionary and bitmaps, so filters on it use the index; absent from a complete column it
//! is null; otherwise it is read from the documents.

use super::{load, renamed, Column, SegmentColumns};
use crate::QueryError;
use sluice_format::expr::{json_value, CastType};
use sluice_format::json_path::JsonPath;
use sluice_format::segment::{ColumnType, FormatError, NestedPath, Segment};
use sluice_format::value::Value;

impl<'s> SegmentColumns<'s> {
    /// The literals at `path` of `column`, as strings or cast.
    pub(crate) fn nested(
        &mut self,
        column: &str,
        path: &JsonPath,
        cast: Option<CastType>,
    ) -> Result<Column<'s>, QueryError> {
        let segment = self.segment;
        if segment.column(column).is_some_and(|e| e.kind == ColumnType::Json && !e.incomplete) {
            let stored = match segment.column(&NestedPath::column_name(column, &path.text())) {
                None => return Ok(Column::Absent),
                Some(entry) => load(segment, entry).map_err(renamed(segment))?,
            };
            return Ok(match (cast, stored) {
                (Some(to), Column::String(dim)) => numbers(&dim, to),
                (_, stored) => stored,
            });
        }
        let documents = self.column(column)?;
        let times = self.times()?;
        Ok(Column::Values((0..self.num_rows()).map(|r| json_value(&documents.value(r, &times), path, cast)).collect()))
    }
}

/// A path column's literals cast to numbers, each value once, as a numeric column.
fn numbers<'s>(dim: &super::StringDim<'s>, to: CastType) -> Column<'s> {
    let per_id: Vec<Value> = (0..=dim.dictionary.len() as u32)
        .map(|id| dim.dictionary.get(id).map_or(Value::Null, |s| to.apply(Value::String(s.to_string()))))
        .collect();
    let mut nulls = roaring::RoaringBitmap::new();
    let mut value = |row: usize, id: u32| {
        let v = per_id.get(id as usize).unwrap_or(&Value::Null);
        if v.is_null() {
            nulls.insert(row as u32);
        }
        v
    };
    match to {
        CastType::Long => {
            let values = dim.ids.iter().enumerate().map(|(r, &id)| value(r, id).as_long().unwrap_or(0)).collect();
            Column::Long(values, nulls)
        }
        CastType::Double => {
            let values = dim.ids.iter().enumerate().map(|(r, &id)| value(r, id).as_double().unwrap_or(0.0)).collect();
            Column::Double(values, nulls)
        }
        CastType::String => Column::Values(dim.ids.iter().enumerate().map(|(r, &id)| value(r, id).clone()).collect()),
    }
}

/// A `json` column's documents, each parsed once, one per row.
pub(crate) fn documents<'s>(
    seg: &'s Segment,
    entry: &sluice_format::segment::ColumnEntry,
    ids: &[u32],
) -> Result<Column<'s>, FormatError> {
    let dictionary = seg.decoded_dictionary(entry)?;
    let mut parsed = Vec::with_capacity(dictionary.len() + 1);
    parsed.push(Value::Null);
    for k in 0..dictionary.len() {
        let doc = serde_json::from_str(dictionary.get(k)).map_err(|e| {
            FormatError::new(seg.object(), format!("json column {:?}: document {k} does not parse: {e}", entry.name))
        })?;
        parsed.push(Value::json(doc));
    }
    Ok(Column::Values(ids.iter().map(|&id| parsed.get(id as usize).cloned().unwrap_or_default()).collect()))
}

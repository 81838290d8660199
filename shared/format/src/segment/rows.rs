//! Sequential row access for tests, exports and small segments, built on the forward column
//! access merge uses.

use super::access::{Columns, Key};
use super::directory::ColumnType;
use super::reader::Segment;
use super::{FormatError, StoredDictionary};
use crate::aggregate::{Aggregator, MetricCell};
use crate::row::DimValue;

/// A dimension value of the cursor's current row.
#[derive(Debug, Clone, PartialEq)]
pub enum DimBuf {
    /// String ids into the segment's dictionary (`[0]` is null).
    Codes(Vec<u32>),
    /// Long value.
    Long(Option<i64>),
    /// Float or double value.
    Double(Option<f64>),
}

/// The cursor's current row, reused across rows.
#[derive(Debug, Clone, Default)]
pub struct RowBuf {
    /// Timestamp.
    pub time: i64,
    /// Dimension values in the segment's column order.
    pub dims: Vec<DimBuf>,
    /// Metric states in the segment's column order.
    pub metrics: Vec<MetricCell>,
}

/// Reads a segment's rows in order, every column block by block.
pub struct RowCursor<'a> {
    segment: &'a Segment,
    columns: Columns<'a>,
    strings: Vec<bool>,
    row: usize,
}

impl<'a> RowCursor<'a> {
    /// Opens every column of `segment` for sequential reading.
    pub fn new(segment: &'a Segment) -> Result<Self, FormatError> {
        let mut dims = Vec::new();
        let mut remaps = Vec::new();
        for col in segment.directory().columns[1..].iter().filter(|c| c.kind != ColumnType::Metric) {
            if col.kind == ColumnType::Time {
                return Err(FormatError::new(segment.object(), "second __time column"));
            }
            let identity = match col.kind {
                ColumnType::String | ColumnType::Json => {
                    (0..=segment.string_column(col)?.dictionary.len() as u32).collect()
                }
                _ => Vec::new(),
            };
            dims.push((col.name.clone(), col.kind));
            remaps.push(identity);
        }
        let strings = dims.iter().map(|(_, k)| k.is_dictionary()).collect();
        let columns = Columns::open(segment, &dims, &remaps, &segment.aggregators())?;
        Ok(Self { segment, columns, strings, row: 0 })
    }

    /// Reads the next row into `buf`; false at the end.
    pub fn next(&mut self, buf: &mut RowBuf) -> Result<bool, FormatError> {
        let r = self.row;
        if r >= self.columns.rows {
            return Ok(false);
        }
        let named = |e: FormatError| FormatError::new(self.segment.object(), e.reason);
        buf.time = self.columns.times.get(r).map_err(named)?;
        buf.dims.clear();
        for (d, &s) in self.columns.dims.iter_mut().zip(&self.strings) {
            buf.dims.push(match d.key(r, s).map_err(named)? {
                Key::Code(c) => DimBuf::Codes(vec![c]),
                Key::Codes(c) => DimBuf::Codes(c.to_vec()),
                Key::Long(v) => DimBuf::Long(v),
                Key::Double(v) => DimBuf::Double(v),
            });
        }
        buf.metrics.clear();
        for m in &mut self.columns.metrics {
            buf.metrics.push(m.cell(r).map_err(named)?);
        }
        self.row += 1;
        Ok(true)
    }
}

/// A decoded row: time, dimension values (segment column order), metric states.
pub type DecodedRow = (i64, Vec<DimValue>, Vec<MetricCell>);

impl Segment {
    /// The decoded dictionary of string column `name`, checked to be sorted and UTF-8.
    pub fn dictionary(&self, name: &str) -> Result<Vec<String>, FormatError> {
        Ok(self.stored_dictionary(name)?.iter().map(String::from).collect())
    }

    /// The dictionary of string column `name` as stored, checked to be sorted and UTF-8.
    pub fn stored_dictionary(&self, name: &str) -> Result<StoredDictionary, FormatError> {
        let col = self.column(name).ok_or_else(|| FormatError::new(self.object(), format!("no column {name:?}")))?;
        let s = self.string_column(col)?;
        StoredDictionary::read(&s.dictionary, self.object(), name)
    }

    /// The aggregators of the segment's metric columns.
    pub fn aggregators(&self) -> Vec<Aggregator> {
        self.directory().columns.iter().filter_map(|c| c.aggregator.as_ref()).map(Aggregator::new).collect()
    }

    /// Decodes every row with dimension values resolved (for tests and small segments).
    pub fn read_rows(&self) -> Result<Vec<DecodedRow>, FormatError> {
        let dims: Vec<_> = self.directory().columns[1..].iter().filter(|c| c.kind != ColumnType::Metric).collect();
        let dicts: Vec<Option<Vec<String>>> = dims
            .iter()
            .map(|c| if c.kind.is_dictionary() { self.dictionary(&c.name).map(Some) } else { Ok(None) })
            .collect::<Result<_, _>>()?;
        let mut cursor = RowCursor::new(self)?;
        let mut buf = RowBuf::default();
        let mut rows = Vec::with_capacity(self.num_rows().min(1 << 20));
        while cursor.next(&mut buf)? {
            let values = buf
                .dims
                .iter()
                .zip(&dicts)
                .zip(&dims)
                .map(|((d, dict), col)| match (d, dict) {
                    (DimBuf::Codes(codes), Some(dict)) => {
                        let mut vals: Vec<String> =
                            codes.iter().filter(|&&c| c > 0).map(|&c| dict[c as usize - 1].clone()).collect();
                        match vals.len() {
                            0 => DimValue::Null,
                            1 => DimValue::Str(vals.pop().unwrap_or_default()),
                            _ => DimValue::Multi(vals),
                        }
                    }
                    (DimBuf::Long(v), _) => v.map(DimValue::Long).unwrap_or(DimValue::Null),
                    (DimBuf::Double(v), _) if col.kind == ColumnType::Float => {
                        v.map(|x| DimValue::Float(x as f32)).unwrap_or(DimValue::Null)
                    }
                    (DimBuf::Double(v), _) => v.map(DimValue::Double).unwrap_or(DimValue::Null),
                    _ => DimValue::Null,
                })
                .collect();
            rows.push((buf.time, values, buf.metrics.clone()));
        }
        Ok(rows)
    }
}

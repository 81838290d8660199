//! Writes a segment from rows given in sort order: `__time`, then dimensions, then metrics.
//! String dimensions arrive as codes into a sorted dictionary (0 is null, k is value k-1);
//! values no row uses are dropped and the ids renumbered when the segment is finished.

use super::directory::{ColumnEntry, ColumnType, Directory, PartRef, FORMAT_VERSION, HEADER_LEN, MAGIC};
use super::parts::{BytesEncoder, LongsEncoder, NumericEncoder};
use super::{bitmap_bytes, Codec, FormatError, StoredDictionary};
use crate::aggregate::{Aggregator, MetricCell, Scalar};
use crate::granularity::Granularity;
use crate::spec::Compression;
use crate::spec::{DimensionType, MetricKind, MultiValueHandling};
use crate::time::Interval;
use roaring::RoaringBitmap;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A dimension of the segment being written.
#[derive(Debug, Clone)]
pub struct DimLayout {
    /// Dimension name.
    pub name: String,
    /// Dimension type.
    pub kind: DimensionType,
    /// Multi-value ordering (string dimensions).
    pub multi_value_handling: MultiValueHandling,
    /// Sorted dictionary the codes refer to (string dimensions).
    pub dictionary: Arc<StoredDictionary>,
    /// A bitmap per value is written (string dimensions; `createBitmapIndex`).
    pub bitmap_index: bool,
    /// A path column: its `json` column and path.
    pub nested_path: Option<super::NestedPath>,
    /// `json` columns: some paths have no column.
    pub incomplete: bool,
    /// An `auto` dimension: its type is this segment's, and may differ in others.
    pub auto: bool,
}

/// The columns of a segment being written.
#[derive(Debug, Clone)]
pub struct SegmentLayout {
    /// The time chunk.
    pub interval: Interval,
    /// Dimensions in sort order.
    pub dims: Vec<DimLayout>,
    /// Metrics.
    pub metrics: Vec<Aggregator>,
    /// Whether rows are rolled up.
    pub rollup: bool,
    /// Timestamp truncation.
    pub query_granularity: Granularity,
}

/// A dimension value handed to the writer.
#[derive(Debug, Clone, Copy)]
pub enum DimCell<'a> {
    /// String dimension codes (one for a single value; `[0]` for null).
    Codes(&'a [u32]),
    /// Long dimension value.
    Long(Option<i64>),
    /// Float or double dimension value.
    Double(Option<f64>),
}

#[derive(Debug)]
enum DimWriter {
    /// The codes as pushed, encoded once at the end (after renumbering, beside the bitmaps
    /// built from them); `offsets` starts once a row holds several values (earlier rows held
    /// one each).
    Str {
        ids: Vec<u32>,
        offsets: Option<Vec<u32>>,
        cardinality: usize,
    },
    Long {
        values: LongsEncoder,
        nulls: RoaringBitmap,
    },
    Double {
        values: NumericEncoder<f64>,
        nulls: RoaringBitmap,
    },
    Float {
        values: NumericEncoder<f32>,
        nulls: RoaringBitmap,
    },
}

#[derive(Debug)]
enum ValueWriter {
    Long(LongsEncoder),
    Double(NumericEncoder<f64>),
    Float(NumericEncoder<f32>),
    Bytes(BytesEncoder),
}

impl ValueWriter {
    fn new(kind: MetricKind, codec: Codec) -> Self {
        match kind {
            MetricKind::Long | MetricKind::LongFirstLast => {
                ValueWriter::Long(LongsEncoder::longs(codec, false).byte_planes())
            }
            MetricKind::Double | MetricKind::DoubleFirstLast => ValueWriter::Double(NumericEncoder::floats(codec)),
            MetricKind::Float | MetricKind::FloatFirstLast => ValueWriter::Float(NumericEncoder::floats(codec)),
            MetricKind::StringFirstLast
            | MetricKind::HllSketch
            | MetricKind::ThetaSketch
            | MetricKind::QuantilesSketch => ValueWriter::Bytes(BytesEncoder::new(codec)),
        }
    }

    fn push_scalar(&mut self, v: Option<&Scalar>) {
        match (self, v) {
            (ValueWriter::Long(e), Some(Scalar::Long(x))) => e.push(*x),
            (ValueWriter::Long(e), _) => e.push(0),
            (ValueWriter::Double(e), Some(Scalar::Double(x))) => e.push_float(*x),
            (ValueWriter::Double(e), _) => e.push_float(0.0),
            (ValueWriter::Float(e), Some(Scalar::Double(x))) => e.push_float(*x as f32),
            (ValueWriter::Float(e), _) => e.push_float(0.0),
            (ValueWriter::Bytes(e), Some(Scalar::Str(s))) => e.push(s.as_bytes()),
            (ValueWriter::Bytes(e), _) => e.push(&[]),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            ValueWriter::Long(e) => e.finish(),
            ValueWriter::Double(e) => e.finish_float(),
            ValueWriter::Float(e) => e.finish_float(),
            ValueWriter::Bytes(e) => e.finish(),
        }
    }
}

#[derive(Debug)]
struct MetricWriter {
    rows: u32,
    times: Option<LongsEncoder>,
    values: ValueWriter,
    nulls: RoaringBitmap,
}

/// Builds one segment in memory.
#[derive(Debug)]
pub struct SegmentWriter {
    layout: SegmentLayout,
    compression: Compression,
    time: LongsEncoder,
    dims: Vec<DimWriter>,
    metrics: Vec<MetricWriter>,
    num_rows: u32,
}

impl SegmentWriter {
    /// Starts a segment with the given columns and compression.
    pub fn new(layout: SegmentLayout, compression: Compression) -> Self {
        let dc = compression.dimensions;
        let mc = compression.metrics;
        let dims = layout
            .dims
            .iter()
            .map(|d| match d.kind {
                DimensionType::String | DimensionType::Json | DimensionType::Auto => {
                    DimWriter::Str { ids: Vec::new(), offsets: None, cardinality: d.dictionary.len() }
                }
                DimensionType::Long => DimWriter::Long {
                    values: LongsEncoder::longs(dc, false).byte_planes(),
                    nulls: RoaringBitmap::new(),
                },
                DimensionType::Double => {
                    DimWriter::Double { values: NumericEncoder::floats(dc), nulls: RoaringBitmap::new() }
                }
                DimensionType::Float => {
                    DimWriter::Float { values: NumericEncoder::floats(dc), nulls: RoaringBitmap::new() }
                }
            })
            .collect();
        let metrics = layout
            .metrics
            .iter()
            .map(|a| MetricWriter {
                rows: 0,
                times: matches!(
                    a.kind,
                    MetricKind::LongFirstLast
                        | MetricKind::DoubleFirstLast
                        | MetricKind::FloatFirstLast
                        | MetricKind::StringFirstLast
                )
                .then(|| LongsEncoder::longs(mc, false).byte_planes()),
                values: ValueWriter::new(a.kind, mc),
                nulls: RoaringBitmap::new(),
            })
            .collect();
        Self { time: LongsEncoder::longs(mc, true).byte_planes(), layout, compression, dims, metrics, num_rows: 0 }
    }

    /// Number of rows written so far.
    pub fn num_rows(&self) -> u32 {
        self.num_rows
    }

    /// Appends a row's timestamp. A segment is written column by column: every row's time, then
    /// each dimension's values ([`SegmentWriter::push_dim`], [`SegmentWriter::push_codes`]) and
    /// each metric's ([`SegmentWriter::push_metric`]), in the same row order.
    pub fn push_time(&mut self, time: i64) {
        self.time.push(time);
        self.num_rows += 1;
    }

    /// Appends the next value of dimension `i`.
    pub fn push_dim(&mut self, i: usize, cell: DimCell<'_>) {
        match (&mut self.dims[i], cell) {
            (DimWriter::Str { ids, offsets, .. }, DimCell::Codes(codes)) => {
                let codes: &[u32] = if codes.is_empty() { &[0] } else { codes };
                if codes.len() > 1 && offsets.is_none() {
                    *offsets = Some((0..=ids.len() as u32).collect());
                }
                ids.extend_from_slice(codes);
                if let Some(o) = offsets {
                    o.push(ids.len() as u32);
                }
            }
            (DimWriter::Long { values, nulls }, DimCell::Long(v)) => {
                if v.is_none() {
                    nulls.insert(values.len());
                }
                values.push(v.unwrap_or(0));
            }
            (DimWriter::Double { values, nulls }, DimCell::Double(v)) => {
                if v.is_none() {
                    nulls.insert(values.len());
                }
                values.push_float(v.unwrap_or(0.0));
            }
            (DimWriter::Float { values, nulls }, DimCell::Double(v)) => {
                if v.is_none() {
                    nulls.insert(values.len());
                }
                values.push_float(v.unwrap_or(0.0) as f32);
            }
            _ => debug_assert!(false, "dimension cell does not match the layout"),
        }
    }

    /// Appends the codes of single-valued rows to string dimension `i` (one code per row).
    pub fn push_codes(&mut self, i: usize, codes: &[u32]) {
        match &mut self.dims[i] {
            DimWriter::Str { ids, offsets: None, .. } => ids.extend_from_slice(codes),
            DimWriter::Str { ids, offsets: Some(o), .. } => {
                for &c in codes {
                    ids.push(c);
                    o.push(ids.len() as u32);
                }
            }
            _ => debug_assert!(false, "codes pushed to a dimension that is not a string"),
        }
    }

    /// Appends the next value of metric `i`.
    pub fn push_metric(&mut self, i: usize, cell: &MetricCell) {
        let w = &mut self.metrics[i];
        let row = w.rows;
        w.rows += 1;
        match cell {
            MetricCell::Long(v) => {
                if let ValueWriter::Long(e) = &mut w.values {
                    e.push(v.unwrap_or(0));
                }
                if v.is_none() {
                    w.nulls.insert(row);
                }
            }
            MetricCell::Double(v) => {
                match &mut w.values {
                    ValueWriter::Double(e) => e.push_float(v.unwrap_or(0.0)),
                    ValueWriter::Float(e) => e.push_float(v.unwrap_or(0.0) as f32),
                    _ => debug_assert!(false, "double cell for a non-double metric"),
                }
                if v.is_none() {
                    w.nulls.insert(row);
                }
            }
            MetricCell::Timed(v) => {
                if let Some(times) = &mut w.times {
                    times.push(v.as_ref().map(|(t, _)| *t).unwrap_or(0));
                }
                w.values.push_scalar(v.as_ref().map(|(_, s)| s));
                if v.is_none() {
                    w.nulls.insert(row);
                }
            }
            MetricCell::Sketch(s) => {
                if let ValueWriter::Bytes(e) = &mut w.values {
                    e.push(&s.serialize());
                }
            }
            MetricCell::Theta(s) => {
                if let ValueWriter::Bytes(e) = &mut w.values {
                    e.push(&s.to_bytes());
                }
            }
            MetricCell::Quantiles(s) => {
                if let ValueWriter::Bytes(e) = &mut w.values {
                    e.push(&s.to_bytes());
                }
            }
        }
    }

    /// Finishes the segment and returns its bytes.
    pub fn finish(self) -> Result<Vec<u8>, FormatError> {
        let dc = self.compression.dimensions;
        let mut data = Vec::new();
        let mut add = |parts: &mut BTreeMap<String, PartRef>, name: &str, bytes: Vec<u8>| {
            let r = PartRef { offset: data.len() as u64, length: bytes.len() as u64, crc32: crc32fast::hash(&bytes) };
            data.extend_from_slice(&bytes);
            parts.insert(name.to_string(), r);
        };
        let mut columns = Vec::new();
        let mut parts = BTreeMap::new();
        add(&mut parts, "values", self.time.finish());
        columns.push(ColumnEntry {
            name: "__time".into(),
            kind: ColumnType::Time,
            multi_value: false,
            multi_value_handling: None,
            cardinality: None,
            aggregator: None,
            nested_path: None,
            incomplete: false,
            auto: false,
            parts,
        });
        for (layout, w) in self.layout.dims.iter().zip(self.dims) {
            let mut parts = BTreeMap::new();
            let mut entry = ColumnEntry {
                name: layout.name.clone(),
                kind: if layout.kind == DimensionType::Json { ColumnType::Json } else { ColumnType::String },
                multi_value: false,
                multi_value_handling: None,
                cardinality: None,
                aggregator: None,
                nested_path: layout.nested_path.clone(),
                incomplete: layout.incomplete,
                auto: layout.auto,
                parts: BTreeMap::new(),
            };
            match w {
                DimWriter::Str { ids, offsets, cardinality } => {
                    let multi = offsets.is_some();
                    let index = StringIndex::build(ids, offsets.as_deref(), cardinality, layout.bitmap_index, dc);
                    let mut dict = BytesEncoder::front_coded(dc);
                    for &c in &index.used {
                        dict.push(layout.dictionary.get(c as usize - 1).as_bytes());
                    }
                    add(&mut parts, "dictionary", dict.finish());
                    add(&mut parts, "ids", index.ids);
                    if let Some(o) = offsets {
                        let mut encoded = LongsEncoder::longs(dc, true);
                        o.iter().for_each(|&k| encoded.push(k as i64));
                        add(&mut parts, "offsets", encoded.finish());
                    }
                    if let Some(bitmaps) = index.bitmaps {
                        add(&mut parts, "bitmaps", bitmaps);
                    }
                    entry.multi_value = multi;
                    entry.multi_value_handling = Some(layout.multi_value_handling);
                    entry.cardinality = Some(index.used.len() as u32);
                }
                DimWriter::Long { values, nulls } => {
                    entry.kind = ColumnType::Long;
                    add(&mut parts, "values", values.finish());
                    add_nulls(&mut add, &mut parts, &nulls, dc)?;
                }
                DimWriter::Double { values, nulls } => {
                    entry.kind = ColumnType::Double;
                    add(&mut parts, "values", values.finish_float());
                    add_nulls(&mut add, &mut parts, &nulls, dc)?;
                }
                DimWriter::Float { values, nulls } => {
                    entry.kind = ColumnType::Float;
                    add(&mut parts, "values", values.finish_float());
                    add_nulls(&mut add, &mut parts, &nulls, dc)?;
                }
            }
            entry.parts = parts;
            columns.push(entry);
        }
        let mc = self.compression.metrics;
        for (agg, w) in self.layout.metrics.iter().zip(self.metrics) {
            let mut parts = BTreeMap::new();
            if let Some(times) = w.times {
                add(&mut parts, "times", times.finish());
            }
            add(&mut parts, "values", w.values.finish());
            add_nulls(&mut add, &mut parts, &w.nulls, mc)?;
            columns.push(ColumnEntry {
                name: agg.name.clone(),
                kind: ColumnType::Metric,
                multi_value: false,
                multi_value_handling: None,
                cardinality: None,
                aggregator: Some(agg.spec.clone()),
                nested_path: None,
                incomplete: false,
                auto: false,
                parts,
            });
        }
        let directory = Directory {
            format: "sluice-segment".into(),
            version: FORMAT_VERSION,
            interval: self.layout.interval,
            num_rows: self.num_rows,
            rollup: self.layout.rollup,
            query_granularity: self.layout.query_granularity,
            columns,
        };
        let dir = serde_json::to_vec(&directory).map_err(|e| FormatError::new("new segment", e.to_string()))?;
        let mut out = Vec::with_capacity(HEADER_LEN + dir.len() + data.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(dir.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&dir).to_le_bytes());
        out.extend_from_slice(&dir);
        out.extend_from_slice(&data);
        Ok(out)
    }
}

fn add_nulls(
    add: &mut impl FnMut(&mut BTreeMap<String, PartRef>, &str, Vec<u8>),
    parts: &mut BTreeMap<String, PartRef>,
    nulls: &RoaringBitmap,
    codec: Codec,
) -> Result<(), FormatError> {
    if nulls.is_empty() {
        return Ok(());
    }
    let mut buf = Vec::new();
    nulls.serialize_into(&mut buf).map_err(|e| FormatError::new("new segment", e.to_string()))?;
    let mut enc = BytesEncoder::new(codec);
    enc.push(&buf);
    add(parts, "nulls", enc.finish());
    Ok(())
}

/// A string column's index, built from its ids once all rows are written: the codes in use,
/// the ids renumbered when some dictionary values went unused, and one bitmap per id unless
/// the dimension has none (`createBitmapIndex: false`).
struct StringIndex {
    used: Vec<u32>,
    ids: Vec<u8>,
    bitmaps: Option<Vec<u8>>,
}

impl StringIndex {
    /// The ids part (renumbered to the values used), the values used and, with
    /// `with_bitmaps`, a bitmap per value, from the codes as pushed.
    fn build(mut ids: Vec<u32>, offsets: Option<&[u32]>, cardinality: usize, with_bitmaps: bool, codec: Codec) -> Self {
        // Rows per id, then where each id's rows start in id order.
        let mut start = vec![0usize; cardinality + 2];
        for &c in &ids {
            start[c as usize + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let used: Vec<u32> = (1..=cardinality as u32).filter(|&c| start[c as usize + 1] > start[c as usize]).collect();
        if used.len() != cardinality {
            let mut remap = vec![0u32; cardinality + 1];
            for (new, &old) in used.iter().enumerate() {
                remap[old as usize] = new as u32 + 1;
            }
            ids.iter_mut().for_each(|c| *c = remap[*c as usize]);
            // Counts move with their ids: the used ones close up, in order.
            let mut closed = vec![0usize; used.len() + 2];
            for (new, &old) in used.iter().enumerate() {
                closed[new + 2] = start[old as usize + 1] - start[old as usize];
            }
            closed[1] = start[1];
            for i in 1..closed.len() {
                closed[i] += closed[i - 1];
            }
            start = closed;
        }
        let mut encoded = LongsEncoder::longs(codec, false);
        ids.iter().for_each(|&c| encoded.push(c as i64));
        let ids_part = encoded.finish();
        if !with_bitmaps {
            return Self { used, ids: ids_part, bitmaps: None };
        }
        // The row of each id: one id per row, or as the offsets say for multi-value rows.
        let row_of: Option<Vec<u32>> = offsets.map(|offsets| {
            let mut rows = Vec::with_capacity(ids.len());
            for (r, w) in offsets.windows(2).enumerate() {
                rows.extend(std::iter::repeat_n(r as u32, (w[1] - w[0]) as usize));
            }
            rows
        });
        // Counting sort of rows by id: each id's rows come out ascending.
        let mut sorted = vec![0u32; ids.len()];
        let mut fill = start.clone();
        for (i, &c) in ids.iter().enumerate() {
            sorted[fill[c as usize]] = row_of.as_ref().map_or(i as u32, |rows| rows[i]);
            fill[c as usize] += 1;
        }
        let mut bitmaps = BytesEncoder::new(codec);
        let mut distinct = Vec::new();
        for c in 0..=used.len() {
            let mut rows = &sorted[start[c]..start[c + 1]];
            if row_of.is_some() {
                // A multi-value row may repeat a value; the bitmap needs strictly ascending rows.
                distinct.clear();
                distinct.extend_from_slice(rows);
                distinct.dedup();
                rows = &distinct;
            }
            bitmaps.push_with(|out| bitmap_bytes::write_sorted(rows, out));
        }
        Self { used, ids: ids_part, bitmaps: Some(bitmaps.finish()) }
    }
}

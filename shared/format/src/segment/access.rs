//! Forward access to a segment's columns: values are requested by row (or value index) in
//! non-decreasing order, and each column keeps only the block it is in. Merge reads its inputs
//! this way, and so does the row cursor.

use super::parts::{BytesBlock, BytesPart, Element, NumericPart, KIND_DOUBLES, KIND_FLOATS, KIND_LONGS};
use super::{ColumnType, FormatError, Segment};
use crate::aggregate::{Aggregator, MetricCell, Scalar};
use crate::spec::MetricKind;
use roaring::RoaringBitmap;

fn past_end(i: usize, len: usize) -> FormatError {
    FormatError::new("segment", format!("value {i} is past the end of its part ({len} values)"))
}

/// Numbers by index: longs, floats or doubles.
pub struct Numbers<'a, T> {
    part: NumericPart<'a>,
    block: Vec<T>,
    /// The index of the block's first value.
    first: usize,
}

/// Longs by index.
pub type Longs<'a> = Numbers<'a, i64>;

/// Floats or doubles by index.
pub type Floats<'a, T> = Numbers<'a, T>;

/// A number a numeric part's blocks decode to.
pub trait Number: Copy {
    /// Decodes block `b` of `part` into `out`.
    fn decode(part: &NumericPart<'_>, b: usize, out: &mut Vec<Self>) -> Result<(), FormatError>;
}

impl Number for i64 {
    fn decode(part: &NumericPart<'_>, b: usize, out: &mut Vec<Self>) -> Result<(), FormatError> {
        part.long_block(b, out)
    }
}

impl<T: Element> Number for T {
    fn decode(part: &NumericPart<'_>, b: usize, out: &mut Vec<Self>) -> Result<(), FormatError> {
        part.float_block(b, out)
    }
}

impl<'a, T: Number> Numbers<'a, T> {
    /// Reads `part` forward.
    pub fn new(part: NumericPart<'a>) -> Self {
        Self { part, block: Vec::new(), first: 0 }
    }

    /// Value `i`; `i` must not go below a value already read from another block.
    #[inline]
    pub fn get(&mut self, i: usize) -> Result<T, FormatError> {
        // The block read last holds it, mostly: no division by the block size.
        match self.block.get(i.wrapping_sub(self.first)) {
            Some(&v) => Ok(v),
            None => {
                let read = load_block(&self.part, i, |b| T::decode(&self.part, b, &mut self.block));
                // A block that failed to read is not read from again.
                self.first = read.inspect_err(|_| self.block.clear())?;
                Ok(self.block[i - self.first])
            }
        }
    }
}

/// Reads the block of `part` holding value `i` with `read`, returning the index of its first
/// value; `i` past the end is an error.
#[cold]
fn load_block(
    part: &NumericPart<'_>,
    i: usize,
    read: impl FnOnce(usize) -> Result<(), FormatError>,
) -> Result<usize, FormatError> {
    if i >= part.len() {
        return Err(past_end(i, part.len()));
    }
    let per = part.block_values();
    read(i / per)?;
    Ok(i / per * per)
}

/// Byte values by index.
pub struct Bytes<'a> {
    part: BytesPart<'a>,
    block: BytesBlock,
    next_block: usize,
}

impl<'a> Bytes<'a> {
    /// Reads `part` forward.
    pub fn new(part: BytesPart<'a>) -> Self {
        Self { part, block: BytesBlock::default(), next_block: 0 }
    }

    /// Value `i`; indexes must not decrease.
    pub fn get(&mut self, i: usize) -> Result<&[u8], FormatError> {
        while i >= self.block.first() + self.block.len() || self.block.is_empty() {
            if self.next_block >= self.part.num_blocks() {
                return Err(FormatError::new("segment", format!("value {i} is past the end of its part")));
            }
            self.part.block(self.next_block, &mut self.block)?;
            self.next_block += 1;
        }
        Ok(self.block.get(i - self.block.first()))
    }
}

/// Single-valued string ids by row, mapped to codes (and checked) a whole block at a time.
pub struct Codes<'a> {
    part: NumericPart<'a>,
    remap: Vec<u32>,
    max_id: i64,
    block: Vec<u32>,
    /// The row of the block's first code.
    first: usize,
}

thread_local! {
    /// The ids of the block a [`Codes`] loads, before they are checked and mapped: one buffer
    /// per thread, not one per column of every input (a merge of many small segments opens
    /// thousands of them at once).
    static RAW_IDS: std::cell::RefCell<Vec<i64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Codes<'_> {
    /// The code of row `row`.
    #[inline]
    pub fn get(&mut self, row: usize) -> Result<u32, FormatError> {
        match self.block.get(row.wrapping_sub(self.first)) {
            Some(&code) => Ok(code),
            None => {
                self.load(row)?;
                Ok(self.block[row - self.first])
            }
        }
    }

    #[cold]
    fn load(&mut self, row: usize) -> Result<(), FormatError> {
        self.block.clear();
        RAW_IDS.with_borrow_mut(|raw| {
            let first = load_block(&self.part, row, |b| self.part.long_block(b, raw))?;
            for (j, &id) in raw.iter().enumerate() {
                match checked(id, self.max_id, &self.remap, first + j) {
                    Ok(code) => self.block.push(code),
                    Err(e) => {
                        // A block that failed to read is not read from again.
                        self.block.clear();
                        return Err(e);
                    }
                }
            }
            self.first = first;
            Ok(())
        })
    }
}

/// A dimension of one input, by row, with string ids mapped to merged codes.
pub enum Dim<'a> {
    /// The input lacks the dimension: every row is null.
    Absent,
    /// Single-valued strings.
    Single(Codes<'a>),
    /// Multi-valued strings.
    Multi {
        /// Row offsets into `ids`.
        offsets: Longs<'a>,
        /// Ids.
        ids: Longs<'a>,
        /// Id -> code.
        remap: Vec<u32>,
        /// Largest valid id.
        max_id: i64,
        /// The current row's codes.
        buf: Vec<u32>,
    },
    /// Longs.
    Long(Longs<'a>, RoaringBitmap),
    /// Doubles.
    Double(Floats<'a, f64>, RoaringBitmap),
    /// Floats.
    Float(Floats<'a, f32>, RoaringBitmap),
}

/// A dimension value as the merge compares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Key<'b> {
    /// One merged string code (0 is null).
    Code(u32),
    /// Several merged string codes.
    Codes(&'b [u32]),
    /// A long.
    Long(Option<i64>),
    /// A double (floats widened).
    Double(Option<f64>),
}

impl Key<'_> {
    /// The codes of a string key.
    pub fn codes(&self) -> &[u32] {
        match self {
            Key::Code(c) => std::slice::from_ref(c),
            Key::Codes(c) => c,
            _ => &[],
        }
    }

    /// Orders keys of one dimension: strings by codes, numbers with nulls first.
    pub fn compare(&self, other: &Key<'_>) -> std::cmp::Ordering {
        match (self, other) {
            (Key::Code(a), Key::Code(b)) => a.cmp(b),
            (Key::Long(a), Key::Long(b)) => a.cmp(b),
            (Key::Double(a), Key::Double(b)) => crate::value::cmp_opt_f64(*a, *b),
            (a, b) => a.codes().cmp(b.codes()),
        }
    }
}

fn checked(id: i64, max_id: i64, remap: &[u32], row: usize) -> Result<u32, FormatError> {
    if !(0..=max_id).contains(&id) {
        return Err(FormatError::new("segment", format!("row {row} has id {id} outside its dictionary of {max_id}")));
    }
    Ok(remap[id as usize])
}

impl Dim<'_> {
    /// The key of row `row`; `string` tells how an absent dimension reads.
    pub fn key(&mut self, row: usize, string: bool) -> Result<Key<'_>, FormatError> {
        Ok(match self {
            Dim::Absent if string => Key::Code(0),
            Dim::Absent => Key::Long(None),
            Dim::Single(codes) => Key::Code(codes.get(row)?),
            Dim::Multi { offsets, ids, remap, max_id, buf } => {
                let (start, end) = (offsets.get(row)?, offsets.get(row + 1)?);
                if end <= start || end - start > 1 << 20 {
                    return Err(FormatError::new("segment", format!("row {row} has {} values", end - start)));
                }
                buf.clear();
                for i in start..end {
                    buf.push(checked(ids.get(i as usize)?, *max_id, remap, row)?);
                }
                if buf.len() == 1 {
                    Key::Code(buf[0])
                } else {
                    Key::Codes(buf)
                }
            }
            Dim::Long(v, nulls) => Key::Long((!nulls.contains(row as u32)).then(|| v.get(row)).transpose()?),
            Dim::Double(v, nulls) => Key::Double((!nulls.contains(row as u32)).then(|| v.get(row)).transpose()?),
            Dim::Float(v, nulls) => {
                Key::Double((!nulls.contains(row as u32)).then(|| v.get(row).map(f64::from)).transpose()?)
            }
        })
    }
}

/// A metric column of one input, by row.
pub struct Metric<'a> {
    /// How the metric is stored.
    pub kind: MetricKind,
    /// Its aggregation (a theta sketch's size).
    pub op: crate::aggregate::AggOp,
    /// First/last times.
    pub times: Option<Longs<'a>>,
    /// Values.
    pub values: Values<'a>,
    /// Null rows.
    pub nulls: RoaringBitmap,
}

/// The value part of a metric.
pub enum Values<'a> {
    /// Longs.
    Long(Longs<'a>),
    /// Doubles.
    Double(Floats<'a, f64>),
    /// Floats.
    Float(Floats<'a, f32>),
    /// Strings or sketches.
    Bytes(Bytes<'a>),
}

impl Metric<'_> {
    /// The metric state of row `row`.
    pub fn cell(&mut self, row: usize) -> Result<MetricCell, FormatError> {
        let null = self.nulls.contains(row as u32);
        let time = match &mut self.times {
            Some(t) => Some(t.get(row)?),
            None => None,
        };
        Ok(match &mut self.values {
            Values::Long(v) => {
                let x = v.get(row)?;
                match time {
                    Some(t) => MetricCell::Timed((!null).then_some((t, Scalar::Long(x)))),
                    None => MetricCell::Long((!null).then_some(x)),
                }
            }
            Values::Double(v) => {
                let x = v.get(row)?;
                match time {
                    Some(t) => MetricCell::Timed((!null).then_some((t, Scalar::Double(x)))),
                    None => MetricCell::Double((!null).then_some(x)),
                }
            }
            Values::Float(v) => {
                let x = f64::from(v.get(row)?);
                match time {
                    Some(t) => MetricCell::Timed((!null).then_some((t, Scalar::Double(x)))),
                    None => MetricCell::Double((!null).then_some(x)),
                }
            }
            Values::Bytes(v) => {
                let bytes = v.get(row)?;
                let bad =
                    |e: &dyn std::fmt::Display| FormatError::new("segment", format!("row {row}: bad sketch: {e}"));
                if self.kind == MetricKind::HllSketch {
                    let sketch = datasketches::hll::HllSketch::deserialize(bytes).map_err(|e| bad(&e))?;
                    MetricCell::Sketch(Box::new(sketch))
                } else if self.kind == MetricKind::ThetaSketch {
                    let lg_k = match self.op {
                        crate::aggregate::AggOp::Theta { lg_k } => lg_k,
                        _ => 14,
                    };
                    MetricCell::Theta(Box::new(crate::sketches::Theta::from_bytes(bytes, lg_k).map_err(|e| bad(&e))?))
                } else if self.kind == MetricKind::QuantilesSketch {
                    MetricCell::Quantiles(Box::new(crate::sketches::Quantiles::from_bytes(bytes).map_err(|e| bad(&e))?))
                } else {
                    let s = std::str::from_utf8(bytes)
                        .map_err(|_| FormatError::new("segment", format!("row {row}: string value is not UTF-8")))?;
                    MetricCell::Timed((!null).then(|| (time.unwrap_or(0), Scalar::Str(s.to_string()))))
                }
            }
        })
    }
}

/// One input's columns, opened for forward access in merged-schema order.
pub struct Columns<'a> {
    /// `__time`.
    pub times: Longs<'a>,
    /// Dimensions in the requested order (absent ones read as null).
    pub dims: Vec<Dim<'a>>,
    /// Metrics in the requested order.
    pub metrics: Vec<Metric<'a>>,
    /// Number of rows.
    pub rows: usize,
}

impl<'a> Columns<'a> {
    /// Opens `dims` (by name and type; string ids mapped through `remaps`, one table per
    /// dimension, empty for non-string ones) and the `aggregators`' metrics of `seg`.
    pub fn open(
        seg: &'a Segment,
        dims: &[(String, ColumnType)],
        remaps: &[Vec<u32>],
        aggregators: &[Aggregator],
    ) -> Result<Columns<'a>, FormatError> {
        let n = seg.num_rows();
        let mut out_dims = Vec::with_capacity(dims.len());
        for ((name, kind), remap) in dims.iter().zip(remaps) {
            let Some(col) = seg.column(name) else {
                out_dims.push(Dim::Absent);
                continue;
            };
            out_dims.push(match kind {
                ColumnType::String | ColumnType::Json => {
                    let s = seg.string_column(col)?;
                    let max_id = s.dictionary.len() as i64;
                    match s.offsets {
                        None => Dim::Single(Codes {
                            part: s.ids,
                            remap: remap.clone(),
                            max_id,
                            block: Vec::new(),
                            first: 0,
                        }),
                        Some(o) => Dim::Multi {
                            offsets: Longs::new(o),
                            ids: Longs::new(s.ids),
                            remap: remap.clone(),
                            max_id,
                            buf: Vec::new(),
                        },
                    }
                }
                ColumnType::Long => {
                    Dim::Long(Longs::new(seg.numeric(col, "values", KIND_LONGS, Some(n))?), seg.nulls(col)?)
                }
                ColumnType::Double => {
                    Dim::Double(Floats::new(seg.numeric(col, "values", KIND_DOUBLES, Some(n))?), seg.nulls(col)?)
                }
                _ => Dim::Float(Floats::new(seg.numeric(col, "values", KIND_FLOATS, Some(n))?), seg.nulls(col)?),
            });
        }
        let mut metrics = Vec::with_capacity(aggregators.len());
        for agg in aggregators {
            let col = seg
                .column(&agg.name)
                .ok_or_else(|| FormatError::new(seg.object(), format!("no metric {:?}", agg.name)))?;
            let timed = matches!(
                agg.kind,
                MetricKind::LongFirstLast
                    | MetricKind::DoubleFirstLast
                    | MetricKind::FloatFirstLast
                    | MetricKind::StringFirstLast
            );
            let times = if timed { Some(Longs::new(seg.numeric(col, "times", KIND_LONGS, Some(n))?)) } else { None };
            let values = match agg.kind {
                MetricKind::Long | MetricKind::LongFirstLast => {
                    Values::Long(Longs::new(seg.numeric(col, "values", KIND_LONGS, Some(n))?))
                }
                MetricKind::Double | MetricKind::DoubleFirstLast => {
                    Values::Double(Floats::new(seg.numeric(col, "values", KIND_DOUBLES, Some(n))?))
                }
                MetricKind::Float | MetricKind::FloatFirstLast => {
                    Values::Float(Floats::new(seg.numeric(col, "values", KIND_FLOATS, Some(n))?))
                }
                MetricKind::StringFirstLast
                | MetricKind::HllSketch
                | MetricKind::ThetaSketch
                | MetricKind::QuantilesSketch => {
                    let p = BytesPart::open(seg.part(col, "values")?, seg.object(), "values")?;
                    if p.len() != n {
                        return Err(FormatError::new(
                            seg.object(),
                            format!("metric {:?} holds {} values for {n} rows", agg.name, p.len()),
                        ));
                    }
                    Values::Bytes(Bytes::new(p))
                }
            };
            metrics.push(Metric { kind: agg.kind, op: agg.op, times, values, nulls: seg.nulls(col)? });
        }
        Ok(Columns { times: Longs::new(seg.times()?), dims: out_dims, metrics, rows: n })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::parts::LongsEncoder;
    use crate::segment::Codec;

    #[test]
    fn values_are_read_across_blocks_and_past_the_end_is_an_error() {
        let values: Vec<i64> = (0..20_000i64).map(|i| i * 3 - 7).collect();
        let mut enc = LongsEncoder::longs(Codec::Lz4, true);
        values.iter().for_each(|&v| enc.push(v));
        let bytes = enc.finish();
        let part = NumericPart::open(&bytes, KIND_LONGS, "seg", "times").expect("open");
        let mut longs = Longs::new(part);
        // Forward, skipping within and across blocks of 8,192, to the partial last block.
        for i in [0, 1, 8_191, 8_192, 8_193, 16_500, 19_999] {
            assert_eq!(longs.get(i).expect("value"), values[i], "value {i}");
        }
        let e = longs.get(20_000).expect_err("past the end");
        assert!(e.reason.contains("value 20000 is past the end of its part (20000 values)"), "{e}");
        // After an error, no block is read from without being read again.
        assert_eq!(longs.get(19_999).expect("value"), values[19_999]);
        assert_eq!(longs.get(3).expect("an earlier block, read again"), values[3]);
    }
}

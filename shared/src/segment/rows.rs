//! Sequential row access: a cursor that decodes every column block by block, so a merge holds
//! one block per column of each input, never all its rows.

use super::directory::ColumnType;
use super::parts::{BytesBlock, BytesPart, Element, NumericPart, KIND_DOUBLES, KIND_FLOATS, KIND_LONGS};
use super::reader::Segment;
use super::FormatError;
use crate::aggregate::{Aggregator, MetricCell, Scalar};
use crate::row::DimValue;
use crate::spec::MetricKind;
use roaring::RoaringBitmap;

struct LongStream<'a> {
    part: NumericPart<'a>,
    block: Vec<i64>,
    next_block: usize,
    pos: usize,
}

impl<'a> LongStream<'a> {
    fn new(part: NumericPart<'a>) -> Self {
        Self { part, block: Vec::new(), next_block: 0, pos: 0 }
    }

    fn next(&mut self) -> Result<i64, FormatError> {
        if self.pos == self.block.len() {
            if self.next_block >= self.part.num_blocks() {
                return Err(FormatError::new("segment", "column ended before its rows"));
            }
            self.part.long_block(self.next_block, &mut self.block)?;
            self.next_block += 1;
            self.pos = 0;
        }
        self.pos += 1;
        Ok(self.block[self.pos - 1])
    }
}

struct FloatStream<'a, T> {
    part: NumericPart<'a>,
    block: Vec<T>,
    next_block: usize,
    pos: usize,
}

impl<'a, T: Element> FloatStream<'a, T> {
    fn new(part: NumericPart<'a>) -> Self {
        Self { part, block: Vec::new(), next_block: 0, pos: 0 }
    }

    fn next(&mut self) -> Result<T, FormatError> {
        if self.pos == self.block.len() {
            if self.next_block >= self.part.num_blocks() {
                return Err(FormatError::new("segment", "column ended before its rows"));
            }
            self.part.float_block(self.next_block, &mut self.block)?;
            self.next_block += 1;
            self.pos = 0;
        }
        self.pos += 1;
        Ok(self.block[self.pos - 1])
    }
}

struct BytesStream<'a> {
    part: BytesPart<'a>,
    block: BytesBlock,
    next_block: usize,
    pos: usize,
}

impl<'a> BytesStream<'a> {
    fn new(part: BytesPart<'a>) -> Self {
        Self { part, block: BytesBlock::default(), next_block: 0, pos: 0 }
    }

    fn next(&mut self) -> Result<&[u8], FormatError> {
        if self.pos == self.block.len() {
            if self.next_block >= self.part.num_blocks() {
                return Err(FormatError::new("segment", "column ended before its rows"));
            }
            self.part.block(self.next_block, &mut self.block)?;
            self.next_block += 1;
            self.pos = 0;
        }
        self.pos += 1;
        Ok(self.block.get(self.pos - 1))
    }
}

enum DimStream<'a> {
    Str { ids: LongStream<'a>, offsets: Option<LongStream<'a>>, prev: i64, max_id: i64, name: String },
    Long(LongStream<'a>, RoaringBitmap),
    Double(FloatStream<'a, f64>, RoaringBitmap),
    Float(FloatStream<'a, f32>, RoaringBitmap),
}

enum ValueStream<'a> {
    Long(LongStream<'a>),
    Double(FloatStream<'a, f64>),
    Float(FloatStream<'a, f32>),
    Bytes(BytesStream<'a>),
}

struct MetricStream<'a> {
    kind: MetricKind,
    name: String,
    times: Option<LongStream<'a>>,
    values: ValueStream<'a>,
    nulls: RoaringBitmap,
}

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

/// Reads a segment's rows in order.
pub struct RowCursor<'a> {
    segment: &'a Segment,
    row: usize,
    time: LongStream<'a>,
    dims: Vec<DimStream<'a>>,
    metrics: Vec<MetricStream<'a>>,
}

impl<'a> RowCursor<'a> {
    /// Opens every column of `segment` for sequential reading.
    pub fn new(segment: &'a Segment) -> Result<Self, FormatError> {
        let n = segment.num_rows();
        let mut dims = Vec::new();
        let mut metrics = Vec::new();
        for col in &segment.directory().columns[1..] {
            match col.kind {
                ColumnType::Time => return Err(FormatError::new(segment.object(), "second __time column")),
                ColumnType::String => {
                    let s = segment.string_column(col)?;
                    let mut offsets = s.offsets.map(LongStream::new);
                    if let Some(o) = &mut offsets {
                        let first = o.next()?;
                        if first != 0 {
                            return Err(FormatError::new(
                                segment.object(),
                                format!("column {:?}: offsets start at {first}", col.name),
                            ));
                        }
                    }
                    dims.push(DimStream::Str {
                        ids: LongStream::new(s.ids),
                        offsets,
                        prev: 0,
                        max_id: s.dictionary.len() as i64,
                        name: col.name.clone(),
                    });
                }
                ColumnType::Long => dims.push(DimStream::Long(
                    LongStream::new(segment.numeric(col, "values", KIND_LONGS, Some(n))?),
                    segment.nulls(col)?,
                )),
                ColumnType::Double => dims.push(DimStream::Double(
                    FloatStream::new(segment.numeric(col, "values", KIND_DOUBLES, Some(n))?),
                    segment.nulls(col)?,
                )),
                ColumnType::Float => dims.push(DimStream::Float(
                    FloatStream::new(segment.numeric(col, "values", KIND_FLOATS, Some(n))?),
                    segment.nulls(col)?,
                )),
                ColumnType::Metric => {
                    let spec = col.aggregator.as_ref().ok_or_else(|| {
                        FormatError::new(segment.object(), format!("metric {:?} has no aggregator", col.name))
                    })?;
                    let kind = spec.metric_kind();
                    let times = match kind {
                        MetricKind::LongFirstLast
                        | MetricKind::DoubleFirstLast
                        | MetricKind::FloatFirstLast
                        | MetricKind::StringFirstLast => {
                            Some(LongStream::new(segment.numeric(col, "times", KIND_LONGS, Some(n))?))
                        }
                        _ => None,
                    };
                    let values = match kind {
                        MetricKind::Long | MetricKind::LongFirstLast => {
                            ValueStream::Long(LongStream::new(segment.numeric(col, "values", KIND_LONGS, Some(n))?))
                        }
                        MetricKind::Double | MetricKind::DoubleFirstLast => ValueStream::Double(FloatStream::new(
                            segment.numeric(col, "values", KIND_DOUBLES, Some(n))?,
                        )),
                        MetricKind::Float | MetricKind::FloatFirstLast => ValueStream::Float(FloatStream::new(
                            segment.numeric(col, "values", KIND_FLOATS, Some(n))?,
                        )),
                        MetricKind::StringFirstLast | MetricKind::HllSketch => {
                            let p = BytesPart::open(segment.part(col, "values")?, segment.object(), "values")?;
                            if p.len() != n {
                                return Err(FormatError::new(
                                    segment.object(),
                                    format!("metric {:?} holds {} values for {n} rows", col.name, p.len()),
                                ));
                            }
                            ValueStream::Bytes(BytesStream::new(p))
                        }
                    };
                    metrics.push(MetricStream {
                        kind,
                        name: col.name.clone(),
                        times,
                        values,
                        nulls: segment.nulls(col)?,
                    });
                }
            }
        }
        Ok(Self { segment, row: 0, time: LongStream::new(segment.times()?), dims, metrics })
    }

    /// Reads the next row into `buf`; false at the end.
    pub fn next(&mut self, buf: &mut RowBuf) -> Result<bool, FormatError> {
        if self.row >= self.segment.num_rows() {
            return Ok(false);
        }
        let object = self.segment.object();
        let named = |e: FormatError| FormatError::new(object, e.reason);
        let row = self.row as u32;
        buf.time = self.time.next().map_err(named)?;
        buf.dims.resize(self.dims.len(), DimBuf::Long(None));
        for (d, out) in self.dims.iter_mut().zip(buf.dims.iter_mut()) {
            match d {
                DimStream::Str { ids, offsets, prev, max_id, name } => {
                    let count = match offsets {
                        None => 1,
                        Some(o) => {
                            let end = o.next().map_err(named)?;
                            let count = end - *prev;
                            *prev = end;
                            if !(1..=1 << 20).contains(&count) {
                                return Err(FormatError::new(
                                    object,
                                    format!("column {name:?} row {row} has {count} values"),
                                ));
                            }
                            count as usize
                        }
                    };
                    let codes = match out {
                        DimBuf::Codes(c) => c,
                        other => {
                            *other = DimBuf::Codes(Vec::new());
                            let DimBuf::Codes(c) = other else { unreachable!() };
                            c
                        }
                    };
                    codes.clear();
                    for _ in 0..count {
                        let id = ids.next().map_err(named)?;
                        if !(0..=*max_id).contains(&id) {
                            return Err(FormatError::new(
                                object,
                                format!("column {name:?} row {row} has id {id} outside its dictionary of {max_id}"),
                            ));
                        }
                        codes.push(id as u32);
                    }
                }
                DimStream::Long(s, nulls) => {
                    let v = s.next().map_err(named)?;
                    *out = DimBuf::Long((!nulls.contains(row)).then_some(v));
                }
                DimStream::Double(s, nulls) => {
                    let v = s.next().map_err(named)?;
                    *out = DimBuf::Double((!nulls.contains(row)).then_some(v));
                }
                DimStream::Float(s, nulls) => {
                    let v = s.next().map_err(named)?;
                    *out = DimBuf::Double((!nulls.contains(row)).then_some(v as f64));
                }
            }
        }
        buf.metrics.clear();
        for m in &mut self.metrics {
            let null = m.nulls.contains(row);
            let time = match &mut m.times {
                Some(t) => Some(t.next().map_err(named)?),
                None => None,
            };
            let cell = match &mut m.values {
                ValueStream::Long(s) => {
                    let v = s.next().map_err(named)?;
                    match time {
                        Some(t) => MetricCell::Timed((!null).then_some((t, Scalar::Long(v)))),
                        None => MetricCell::Long((!null).then_some(v)),
                    }
                }
                ValueStream::Double(s) => {
                    let v = s.next().map_err(named)?;
                    match time {
                        Some(t) => MetricCell::Timed((!null).then_some((t, Scalar::Double(v)))),
                        None => MetricCell::Double((!null).then_some(v)),
                    }
                }
                ValueStream::Float(s) => {
                    let v = s.next().map_err(named)? as f64;
                    match time {
                        Some(t) => MetricCell::Timed((!null).then_some((t, Scalar::Double(v)))),
                        None => MetricCell::Double((!null).then_some(v)),
                    }
                }
                ValueStream::Bytes(s) => {
                    let bytes = s.next().map_err(named)?;
                    if m.kind == MetricKind::HllSketch {
                        let sketch = datasketches::hll::HllSketch::deserialize(bytes).map_err(|e| {
                            FormatError::new(object, format!("metric {:?} row {row}: bad sketch: {e}", m.name))
                        })?;
                        MetricCell::Sketch(Box::new(sketch))
                    } else {
                        let s = std::str::from_utf8(bytes).map_err(|_| {
                            FormatError::new(object, format!("metric {:?} row {row}: value is not UTF-8", m.name))
                        })?;
                        MetricCell::Timed((!null).then(|| (time.unwrap_or(0), Scalar::Str(s.to_string()))))
                    }
                }
            };
            buf.metrics.push(cell);
        }
        self.row += 1;
        Ok(true)
    }
}

impl Segment {
    /// The decoded dictionary of string column `name`, checked to be sorted and UTF-8.
    pub fn dictionary(&self, name: &str) -> Result<Vec<String>, FormatError> {
        let col = self.column(name).ok_or_else(|| FormatError::new(self.object(), format!("no column {name:?}")))?;
        let s = self.string_column(col)?;
        let mut out: Vec<String> = Vec::with_capacity(s.dictionary.len().min(1 << 20));
        for v in s.dictionary.all()? {
            let v = String::from_utf8(v).map_err(|_| {
                FormatError::new(self.object(), format!("column {name:?}: dictionary value is not UTF-8"))
            })?;
            if out.last().is_some_and(|prev| *prev >= v) {
                return Err(FormatError::new(self.object(), format!("column {name:?}: dictionary is not sorted")));
            }
            out.push(v);
        }
        Ok(out)
    }

    /// The aggregators of the segment's metric columns.
    pub fn aggregators(&self) -> Vec<Aggregator> {
        self.directory().columns.iter().filter_map(|c| c.aggregator.as_ref()).map(Aggregator::new).collect()
    }

    /// Decodes every row with dimension values resolved (for tests and small segments).
    pub fn read_rows(&self) -> Result<Vec<(i64, Vec<DimValue>, Vec<MetricCell>)>, FormatError> {
        let dims: Vec<_> = self.directory().columns[1..].iter().filter(|c| c.kind != ColumnType::Metric).collect();
        let dicts: Vec<Option<Vec<String>>> = dims
            .iter()
            .map(|c| if c.kind == ColumnType::String { self.dictionary(&c.name).map(Some) } else { Ok(None) })
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

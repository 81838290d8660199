//! One segment's columns as a query reads them: each column decoded at most once per query,
//! only when the query names it. String dimensions keep their sorted dictionary and their
//! per-value Roaring bitmaps, so filters on them never look at rows.

mod nested;
use super::model::{JoinRight, JoinedColumn, Missing, VirtualColumn};
use super::QueryError;
use roaring::RoaringBitmap;
use sluice_format::aggregate::MetricCell;
use sluice_format::expr::{self, Expr};
use sluice_format::segment::access::Metric;
use sluice_format::segment::parts::{BytesBlock, BytesPart, NumericPart, KIND_DOUBLES, KIND_FLOATS, KIND_LONGS};
use sluice_format::segment::{ColumnEntry, ColumnType, FormatError, Segment, StoredDictionary};
use sluice_format::spec::MetricKind;
use sluice_format::value::Value;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// A string dimension's sorted dictionary, decoded into one buffer (checked UTF-8 and strictly
/// ascending as it is read).
#[derive(Debug, Default)]
pub struct Dictionary(Arc<StoredDictionary>);

impl Dictionary {
    /// Number of values (ids `1..=len`; id 0 is null).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Returns true when the dimension holds only nulls.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value of id `id` (1-based); `None` for id 0.
    pub fn get(&self, id: u32) -> Option<&str> {
        let i = (id as usize).checked_sub(1)?;
        Some(self.0.get(i))
    }

    /// The id of `value`, if present (binary search: the dictionary is sorted).
    pub fn find(&self, value: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.0.get(mid).cmp(value) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32 + 1),
            }
        }
        None
    }
}

/// A string dimension.
pub struct StringDim<'s> {
    /// Sorted values.
    pub dictionary: Dictionary,
    /// One id per row (single-valued) or per value (multi-valued).
    pub ids: Vec<u32>,
    /// Multi-valued rows: row `r`'s ids are `ids[offsets[r]..offsets[r + 1]]`.
    pub offsets: Option<Vec<u32>>,
    bitmaps: Option<BytesPart<'s>>,
    object: &'s str,
    name: String,
}

/// The block of `bitmaps` holding value `i`.
fn block_of(bitmaps: &BytesPart<'_>, i: usize) -> usize {
    let (mut lo, mut hi) = (0, bitmaps.num_blocks());
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if bitmaps.block_first(mid) <= i {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

impl StringDim<'_> {
    /// The rows holding any of `ids` (sorted ascending), as the union of their bitmaps, or
    /// found in the ids column when the dimension has no bitmaps (`createBitmapIndex: false`).
    pub fn rows_with(&self, ids: &[u32]) -> Result<RoaringBitmap, FormatError> {
        let Some(bitmaps) = &self.bitmaps else {
            return Ok(self.scan_for(ids));
        };
        let mut out = RoaringBitmap::new();
        let mut block = BytesBlock::default();
        let mut loaded = usize::MAX;
        for &id in ids {
            let i = id as usize;
            if i >= bitmaps.len() {
                return Err(FormatError::new(self.object, format!("column {:?}: no bitmap for id {id}", self.name)));
            }
            if loaded == usize::MAX || i < block.first() || i >= block.first() + block.len() {
                let b = block_of(bitmaps, i);
                bitmaps.block(b, &mut block)?;
                loaded = b;
            }
            let bitmap = RoaringBitmap::deserialize_from(block.get(i - block.first())).map_err(|e| {
                FormatError::new(self.object, format!("column {:?}: bad bitmap for id {id}: {e}", self.name))
            })?;
            out |= bitmap;
        }
        Ok(out)
    }

    /// The rows holding any of `ids`, read from the ids column.
    fn scan_for(&self, ids: &[u32]) -> RoaringBitmap {
        let mut wanted = vec![false; self.dictionary.len() + 1];
        for &id in ids {
            if let Some(w) = wanted.get_mut(id as usize) {
                *w = true;
            }
        }
        let hit = |id: &u32| wanted.get(*id as usize).copied().unwrap_or(false);
        match &self.offsets {
            None => {
                // Most chunks hold no wanted id; one id (an `=` filter) is checked with a
                // comparison the compiler vectorizes, and only chunks with a hit are walked.
                const CHUNK: usize = 64;
                let any = |chunk: &[u32]| match ids {
                    [one] => chunk.iter().fold(false, |a, &x| a | (x == *one)),
                    _ => chunk.iter().fold(false, |a, x| a | hit(x)),
                };
                let mut rows = RoaringBitmap::new();
                for (c, chunk) in self.ids.chunks(CHUNK).enumerate() {
                    if any(chunk) {
                        let hits = chunk.iter().enumerate().filter(|(_, id)| hit(id));
                        rows.extend(hits.map(|(i, _)| (c * CHUNK + i) as u32));
                    }
                }
                rows
            }
            Some(offsets) => (0..offsets.len().saturating_sub(1))
                .filter(|&r| {
                    let range = &self.ids[offsets[r] as usize..offsets[r + 1] as usize];
                    // A row without values is null: id 0.
                    if range.is_empty() {
                        hit(&0)
                    } else {
                        range.iter().any(hit)
                    }
                })
                .map(|r| r as u32)
                .collect(),
        }
    }

    /// The ids of row `row`.
    pub fn row_ids(&self, row: usize) -> &[u32] {
        match &self.offsets {
            None => std::slice::from_ref(&self.ids[row]),
            Some(o) => &self.ids[o[row] as usize..o[row + 1] as usize],
        }
    }

    /// Row `row` as a value: a string, null, or a list for several values.
    pub fn value(&self, row: usize) -> Value {
        let ids = self.row_ids(row);
        match ids {
            [id] => self.dictionary.get(*id).map(|s| Value::String(s.to_string())).unwrap_or(Value::Null),
            _ => Value::Array(
                ids.iter().filter_map(|&id| self.dictionary.get(id)).map(|s| Value::String(s.to_string())).collect(),
            ),
        }
    }
}

/// A column of one segment, decoded.
pub enum Column<'s> {
    /// The segment lacks the column: every row is null.
    Absent,
    /// `__time`.
    Time,
    /// A string dimension.
    String(StringDim<'s>),
    /// Longs (long dimensions and long metrics), with their null rows.
    Long(Vec<i64>, RoaringBitmap),
    /// Doubles (double and float dimensions and metrics), with their null rows.
    Double(Vec<f64>, RoaringBitmap),
    /// First/last and sketch metrics, as states.
    Cells(Vec<MetricCell>, MetricKind),
    /// A virtual column's values.
    Values(Vec<Value>),
}

impl Column<'_> {
    /// Row `row` as a value (`times` is the segment's `__time`).
    pub fn value(&self, row: usize, times: &[i64]) -> Value {
        match self {
            Column::Absent => Value::Null,
            Column::Time => Value::Long(times[row]),
            Column::String(s) => s.value(row),
            Column::Long(v, nulls) => {
                if nulls.contains(row as u32) {
                    Value::Null
                } else {
                    Value::Long(v[row])
                }
            }
            Column::Double(v, nulls) => {
                if nulls.contains(row as u32) {
                    Value::Null
                } else {
                    Value::Double(v[row])
                }
            }
            Column::Cells(cells, _) => super::json::cell_value(&cells[row]),
            Column::Values(v) => v[row].clone(),
        }
    }
}

/// The columns of one segment, loaded on first use.
pub struct SegmentColumns<'s> {
    /// The segment.
    pub segment: &'s Segment,
    times: std::cell::OnceCell<Rc<Vec<i64>>>,
    num_rows: usize,
    virtuals: &'s [VirtualColumn],
    loaded: HashMap<String, Rc<Column<'s>>>,
    /// Virtual columns being computed, outermost first: one read again is a cycle.
    computing: Vec<&'s str>,
}

fn renamed(segment: &Segment) -> impl Fn(FormatError) -> QueryError + '_ {
    move |e: FormatError| {
        let object = if e.object == "segment" { segment.object().to_string() } else { e.object };
        QueryError::Segment(FormatError { object, reason: e.reason })
    }
}

impl<'s> SegmentColumns<'s> {
    /// Opens `segment`; nothing is decoded yet.
    pub fn open(segment: &'s Segment, virtuals: &'s [VirtualColumn]) -> Result<Self, QueryError> {
        // Every engine loop opens its segments here: the query's deadline is checked once each.
        crate::scope::check_deadline()?;
        Ok(Self {
            segment,
            times: std::cell::OnceCell::new(),
            num_rows: segment.num_rows(),
            virtuals,
            loaded: HashMap::new(),
            computing: Vec::new(),
        })
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.num_rows
    }

    /// `__time` of every row, ascending (decoded on first use).
    pub fn times(&self) -> Result<Rc<Vec<i64>>, QueryError> {
        if let Some(t) = self.times.get() {
            return Ok(t.clone());
        }
        let times = Rc::new(self.segment.times().and_then(|p| p.all_longs()).map_err(renamed(self.segment))?);
        Ok(self.times.get_or_init(|| times).clone())
    }

    /// The first and last `__time` ([`Segment::time_range`]).
    pub fn time_range(&self) -> Result<Option<(i64, i64)>, QueryError> {
        if let Some(t) = self.times.get() {
            return Ok(t.first().copied().zip(t.last().copied()));
        }
        self.segment.time_range().map_err(renamed(self.segment))
    }

    /// The column named `name` (a virtual column first, then a stored one).
    pub fn column(&mut self, name: &str) -> Result<Rc<Column<'s>>, QueryError> {
        if let Some(c) = self.loaded.get(name) {
            return Ok(c.clone());
        }
        let column = match self.virtuals.iter().find(|v| v.name() == name) {
            Some(v) => {
                if self.computing.contains(&v.name()) {
                    let path = self.computing.join(" -> ");
                    return Err(QueryError::invalid(
                        "virtualColumns",
                        format!("{} reads itself ({path} -> {})", v.name(), v.name()),
                    ));
                }
                self.computing.push(v.name());
                let column = self.evaluate(v);
                self.computing.pop();
                column?
            }
            None if name == "__time" => Column::Time,
            None => match self.segment.column(name) {
                None => Column::Absent,
                Some(entry) => load(self.segment, entry).map_err(renamed(self.segment))?,
            },
        };
        let column = Rc::new(column);
        self.loaded.insert(name.to_string(), column.clone());
        Ok(column)
    }

    fn evaluate(&mut self, v: &'s VirtualColumn) -> Result<Column<'s>, QueryError> {
        let (name, expression, output_type) = match v {
            VirtualColumn::Expression { name, expression, output_type } => (name, expression, output_type),
            VirtualColumn::Joined(j) => return self.joined(j),
            VirtualColumn::NestedField(n) => {
                let (path, cast) = n
                    .resolved()
                    .map_err(|e| QueryError::invalid(format!("virtualColumns.{}", n.output_name), e.to_string()))?;
                return self.nested(&n.column_name, &path, cast);
            }
        };
        let mut names: Vec<String> = Vec::new();
        let parsed: Expr = crate::scope::parse_expression(expression, &mut |field| {
            names.iter().position(|n| n == field).unwrap_or_else(|| {
                names.push(field.to_string());
                names.len() - 1
            })
        })
        .map_err(|e| QueryError::invalid(format!("virtualColumns.{name}"), e.to_string()))?;
        let inputs: Vec<Rc<Column<'s>>> =
            names.iter().filter(|n| *n != name).map(|n| self.column(n)).collect::<Result<_, _>>()?;
        let cast = output_type.as_deref().map(str::to_ascii_uppercase);
        // `json_value(x, path)` of a `json` column reads the path's own column.
        if let (Expr::Call(expr::Function::Json(expr::JsonFunction::Value(path, to)), args), [column]) =
            (&parsed, names.as_slice())
        {
            if matches!(args.as_slice(), [Expr::Field(0)]) && cast.as_deref().is_none_or(|c| c == "STRING") {
                return self.nested(column, path, *to);
            }
        }
        let convert = |v: Value| cast_to(cast.as_deref(), v);
        // An expression of one dictionary-encoded column (`upper(x)`, `lookup(x, 'name')`) is
        // evaluated once per id; string results make a dictionary-encoded column.
        if let ([only], false) = (inputs.as_slice(), reads_time(&parsed)) {
            if let Column::String(dim) = &**only {
                if dim.offsets.is_none() {
                    let per_id: Vec<Value> = (0..=dim.dictionary.len() as u32)
                        .map(|id| {
                            let v = dim.dictionary.get(id).map_or(Value::Null, |s| Value::String(s.into()));
                            convert(expr::eval(&parsed, &[v], 0))
                        })
                        .collect();
                    if per_id.iter().all(|v| matches!(v, Value::Null | Value::String(_))) {
                        return Ok(Column::String(self.encoded(name, &per_id, &dim.ids)?));
                    }
                    let values = dim.ids.iter().map(|&id| per_id.get(id as usize).cloned().unwrap_or(Value::Null));
                    return Ok(Column::Values(values.collect()));
                }
            }
        }
        let times = self.times()?;
        let mut row = vec![Value::Null; inputs.len()];
        let mut values = Vec::with_capacity(self.num_rows());
        for r in 0..self.num_rows() {
            for (slot, c) in row.iter_mut().zip(&inputs) {
                *slot = c.value(r, &times);
            }
            values.push(convert(expr::eval(&parsed, &row, times[r])));
        }
        Ok(Column::Values(values))
    }
}

/// `v` as a virtual column's `outputType` makes it (as it comes when none is given).
fn cast_to(cast: Option<&str>, v: Value) -> Value {
    match cast {
        Some("LONG") => v.as_long().or_else(|| v.as_double().map(|d| d as i64)).map(Value::Long).unwrap_or(Value::Null),
        Some("DOUBLE") | Some("FLOAT") => v.as_double().map(Value::Double).unwrap_or(Value::Null),
        // A multi-value result stays a list of strings.
        Some("STRING") => match v {
            Value::Array(items) => Value::Array(
                items.iter().map(|i| i.as_str().map_or(Value::Null, |s| Value::String(s.into_owned()))).collect(),
            ),
            v => v.as_str().map(|s| Value::String(s.into_owned())).unwrap_or(Value::Null),
        },
        _ => v,
    }
}

/// Whether `e` reads the row's time.
fn reads_time(e: &Expr) -> bool {
    match e {
        Expr::Time => true,
        Expr::Literal(_) | Expr::Field(_) => false,
        Expr::Unary(_, a) => reads_time(a),
        Expr::Binary(_, a, b) => reads_time(a) || reads_time(b),
        Expr::Call(_, args) => args.iter().any(reads_time),
    }
}

impl<'s> SegmentColumns<'s> {
    /// A join's right column: the right row whose key equals the key computed from each row.
    fn joined(&mut self, j: &'s JoinedColumn) -> Result<Column<'s>, QueryError> {
        let table = match &j.right {
            JoinRight::Inline(t) => t.clone(),
            JoinRight::Lookup(name) => crate::scope::lookup(name).ok_or_else(|| {
                QueryError::invalid(
                    "dataSource",
                    format!("lookup {:?} not found", sluice_format::text::excerpt(name, 80)),
                )
            })?,
        };
        let Some(at) = table.columns().iter().position(|c| *c == j.column) else {
            return Err(QueryError::invalid(
                "dataSource",
                format!("the join's right side has no column {:?}", j.column),
            ));
        };
        let inputs: Vec<Rc<Column<'s>>> = (j.key.inputs.iter())
            .map(|n| n.as_ref().map_or(Ok(Rc::new(Column::Absent)), |n| self.column(n)))
            .collect::<Result<_, _>>()?;
        let times = self.times()?;
        let value = |key: &Value| match (table.value(key, at), &j.missing) {
            (Some(v), _) => v.clone(),
            (None, Missing::Null) => Value::Null,
            (None, Missing::Retain) => key.clone(),
            (None, Missing::Replace(r)) => Value::String(r.clone()),
        };
        // A key that is one dictionary-encoded column is looked up once per id; when every
        // value it maps to is a string (or null), the column is dictionary-encoded too, so that
        // grouping and filtering read it as any string dimension.
        if let Some(key) = if let Expr::Field(slot) = j.key.expr { inputs.get(slot) } else { None } {
            if let Column::String(dim) = &**key {
                if dim.offsets.is_none() {
                    let per_id: Vec<Value> = (0..=dim.dictionary.len() as u32)
                        .map(|id| value(&dim.dictionary.get(id).map_or(Value::Null, |s| Value::String(s.into()))))
                        .collect();
                    if per_id.iter().all(|v| matches!(v, Value::Null | Value::String(_))) {
                        return Ok(Column::String(self.encoded(&j.name, &per_id, &dim.ids)?));
                    }
                    let values = dim.ids.iter().map(|&id| per_id.get(id as usize).cloned().unwrap_or(Value::Null));
                    return Ok(Column::Values(values.collect()));
                }
            }
        }
        let mut row = vec![Value::Null; inputs.len()];
        let mut values = Vec::with_capacity(self.num_rows());
        for r in 0..self.num_rows() {
            for (slot, c) in row.iter_mut().zip(&inputs) {
                *slot = c.value(r, &times);
            }
            values.push(value(&expr::eval(&j.key.expr, &row, times[r])));
        }
        Ok(Column::Values(values))
    }
}

impl<'s> SegmentColumns<'s> {
    /// A string column of `name` whose rows hold `per_id[ids[row]]`: its distinct strings as a
    /// sorted dictionary, null as id 0.
    fn encoded(&self, name: &str, per_id: &[Value], ids: &[u32]) -> Result<StringDim<'s>, QueryError> {
        let mut distinct: Vec<&str> =
            per_id.iter().filter_map(|v| if let Value::String(s) = v { Some(s.as_str()) } else { None }).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut stored = StoredDictionary::with_capacity(distinct.len(), distinct.iter().map(|s| s.len()).sum());
        for v in &distinct {
            stored.push(v).map_err(|e| QueryError::invalid("dataSource", e.to_string()))?;
        }
        let remap: Vec<u32> = (per_id.iter())
            .map(|v| match v {
                Value::String(s) => distinct.binary_search(&s.as_str()).map_or(0, |i| i as u32 + 1),
                _ => 0,
            })
            .collect();
        Ok(StringDim {
            dictionary: Dictionary(Arc::new(stored)),
            ids: ids.iter().map(|&id| remap.get(id as usize).copied().unwrap_or(0)).collect(),
            offsets: None,
            bitmaps: None,
            object: self.segment.object(),
            name: name.to_string(),
        })
    }
}

impl VirtualColumn {
    /// The column's name.
    pub fn name(&self) -> &str {
        match self {
            VirtualColumn::Expression { name, .. } => name,
            VirtualColumn::Joined(j) => &j.name,
            VirtualColumn::NestedField(n) => &n.output_name,
        }
    }
}

fn load<'s>(seg: &'s Segment, entry: &'s ColumnEntry) -> Result<Column<'s>, FormatError> {
    let n = seg.num_rows();
    Ok(match entry.kind {
        ColumnType::Time => Column::Time,
        ColumnType::String => {
            let s = seg.string_column(entry)?;
            let dictionary = Dictionary(seg.decoded_dictionary(entry)?);
            let max = dictionary.len() as i64;
            let ids = checked_ids(&s.ids, max, seg.object(), &entry.name)?;
            let offsets = match s.offsets {
                None => None,
                Some(o) => {
                    let o = checked_ids(&o, ids.len() as i64, seg.object(), &entry.name)?;
                    if o.first() != Some(&0)
                        || o.last() != Some(&(ids.len() as u32))
                        || o.windows(2).any(|w| w[0] > w[1])
                    {
                        return Err(FormatError::new(
                            seg.object(),
                            format!("column {:?}: bad row offsets", entry.name),
                        ));
                    }
                    Some(o)
                }
            };
            Column::String(StringDim {
                dictionary,
                ids,
                offsets,
                bitmaps: s.bitmaps,
                object: seg.object(),
                name: entry.name.clone(),
            })
        }
        ColumnType::Json => {
            let s = seg.string_column(entry)?;
            let ids = checked_ids(&s.ids, s.dictionary.len() as i64, seg.object(), &entry.name)?;
            nested::documents(seg, entry, &ids)?
        }
        ColumnType::Long => {
            Column::Long(seg.numeric(entry, "values", KIND_LONGS, Some(n))?.all_longs()?, seg.nulls(entry)?)
        }
        ColumnType::Double => {
            Column::Double(seg.numeric(entry, "values", KIND_DOUBLES, Some(n))?.all_floats::<f64>()?, seg.nulls(entry)?)
        }
        ColumnType::Float => {
            let v = seg.numeric(entry, "values", KIND_FLOATS, Some(n))?.all_floats::<f32>()?;
            Column::Double(v.into_iter().map(f64::from).collect(), seg.nulls(entry)?)
        }
        ColumnType::Metric => {
            let spec = entry.aggregator.as_ref().ok_or_else(|| {
                FormatError::new(seg.object(), format!("metric {:?} names no aggregator", entry.name))
            })?;
            match spec.metric_kind() {
                MetricKind::Long => {
                    Column::Long(seg.numeric(entry, "values", KIND_LONGS, Some(n))?.all_longs()?, seg.nulls(entry)?)
                }
                MetricKind::Double => Column::Double(
                    seg.numeric(entry, "values", KIND_DOUBLES, Some(n))?.all_floats::<f64>()?,
                    seg.nulls(entry)?,
                ),
                MetricKind::Float => {
                    let v = seg.numeric(entry, "values", KIND_FLOATS, Some(n))?.all_floats::<f32>()?;
                    Column::Double(v.into_iter().map(f64::from).collect(), seg.nulls(entry)?)
                }
                kind => {
                    let agg = sluice_format::aggregate::Aggregator::new(spec);
                    let mut cols =
                        sluice_format::segment::access::Columns::open(seg, &[], &[], std::slice::from_ref(&agg))?;
                    let metric: &mut Metric<'_> = &mut cols.metrics[0];
                    let cells = (0..n).map(|r| metric.cell(r)).collect::<Result<Vec<_>, _>>()?;
                    Column::Cells(cells, kind)
                }
            }
        }
    })
}

/// Decodes a part of ids (or offsets) block by block, each checked to lie in `0..=max`.
fn checked_ids(part: &NumericPart<'_>, max: i64, object: &str, column: &str) -> Result<Vec<u32>, FormatError> {
    let mut out = Vec::with_capacity(part.len());
    let mut block = Vec::new();
    for b in 0..part.num_blocks() {
        part.long_block(b, &mut block)?;
        if let Some(bad) = block.iter().find(|&&v| !(0..=max).contains(&v)) {
            return Err(FormatError::new(object, format!("column {column:?}: value {bad} outside 0..={max}")));
        }
        out.extend(block.iter().map(|&v| v as u32));
    }
    if out.len() != part.len() {
        return Err(FormatError::new(
            object,
            format!("column {column:?}: {} values decoded of {}", out.len(), part.len()),
        ));
    }
    Ok(out)
}

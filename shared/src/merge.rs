//! Merge: N hydrants or segments of one time chunk -> final segments. Dictionaries are merged
//! (sorted union), rows k-way merged in (time, dimensions) order with rollup where the inputs
//! were rolled up, bitmaps rebuilt by the writer, and the output split into shards of at most
//! `maxRowsPerSegment` rows. Each input is read block by block, so memory holds one block per
//! column per input plus the shard being written, never all input rows.

use crate::aggregate::{Aggregator, MetricCell};
use crate::index::persist_order::cmp_opt_f64;
use crate::segment::{
    ColumnType, DimBuf, DimCell, DimLayout, FormatError, RowBuf, RowCursor, Segment, SegmentLayout, SegmentWriter,
};
use crate::spec::{Compression, DimensionType, MultiValueHandling};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

/// Why inputs could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// An input is corrupt.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Inputs that cannot be merged together.
    #[error("cannot merge {object}: {reason}")]
    Incompatible {
        /// The input at fault.
        object: String,
        /// Why.
        reason: String,
    },
    /// No inputs.
    #[error("nothing to merge")]
    Empty,
}

/// Merge settings.
#[derive(Debug, Clone, Copy)]
pub struct MergeOptions {
    /// Most rows per output segment.
    pub max_rows_per_segment: u64,
    /// Compression of the output.
    pub compression: Compression,
}

struct MergedDim {
    name: String,
    kind: ColumnType,
    multi_value_handling: MultiValueHandling,
    dictionary: Vec<String>,
}

struct Input<'a> {
    cursor: RowCursor<'a>,
    buf: RowBuf,
    /// Per merged dimension: the input's column position, if it has the dimension.
    dim_pos: Vec<Option<usize>>,
    /// Per merged string dimension: input id -> merged code.
    remap: Vec<Vec<u32>>,
    /// Per merged metric: the input's metric position.
    metric_pos: Vec<usize>,
    /// The current row in merged order.
    row: MergedRow,
    live: bool,
}

#[derive(Clone, Default)]
struct MergedRow {
    time: i64,
    dims: Vec<DimBuf>,
    metrics: Vec<MetricCell>,
}

impl Input<'_> {
    fn advance(&mut self) -> Result<(), FormatError> {
        self.live = self.cursor.next(&mut self.buf)?;
        if !self.live {
            return Ok(());
        }
        self.row.time = self.buf.time;
        for (m, pos) in self.dim_pos.iter().enumerate() {
            let out = &mut self.row.dims[m];
            match pos {
                None => set_null(out),
                Some(p) => match (&self.buf.dims[*p], out) {
                    (DimBuf::Codes(src), DimBuf::Codes(dst)) => {
                        dst.clear();
                        dst.extend(src.iter().map(|&c| self.remap[m][c as usize]));
                    }
                    (src, dst) => dst.clone_from(src),
                },
            }
        }
        self.row.metrics.clear();
        for &p in &self.metric_pos {
            self.row.metrics.push(std::mem::replace(&mut self.buf.metrics[p], MetricCell::Long(None)));
        }
        Ok(())
    }
}

fn set_null(out: &mut DimBuf) {
    match out {
        DimBuf::Codes(c) => {
            c.clear();
            c.push(0);
        }
        DimBuf::Long(v) => *v = None,
        DimBuf::Double(v) => *v = None,
    }
}

fn cmp_dims(a: &[DimBuf], b: &[DimBuf]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (DimBuf::Codes(x), DimBuf::Codes(y)) => match (x.as_slice(), y.as_slice()) {
                ([a], [b]) => a.cmp(b),
                (x, y) => x.cmp(y),
            },
            (DimBuf::Long(x), DimBuf::Long(y)) => x.cmp(y),
            (DimBuf::Double(x), DimBuf::Double(y)) => cmp_opt_f64(*x, *y),
            _ => Ordering::Equal,
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Orders the union of the inputs' dimensions so that each input's order is kept (a
/// topological merge); inputs that disagree are an error.
fn merged_dimension_order(inputs: &[Segment]) -> Result<Vec<(String, ColumnType, MultiValueHandling)>, MergeError> {
    let mut names: Vec<(String, ColumnType, MultiValueHandling)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut edges: Vec<Vec<usize>> = Vec::new();
    for seg in inputs {
        let mut prev: Option<usize> = None;
        for col in seg.directory().columns.iter().filter(|c| !matches!(c.kind, ColumnType::Time | ColumnType::Metric)) {
            let id = match index.get(&col.name) {
                Some(&id) => {
                    if names[id].1 != col.kind {
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
    Ok(order)
}

/// K-way merges sorted dictionaries into their sorted union, returning it with each input's
/// table from local id (0 null, k value k-1) to merged code.
fn merge_dictionaries(locals: Vec<Vec<String>>) -> (Vec<String>, Vec<Vec<u32>>) {
    use std::collections::BinaryHeap;
    let mut tables: Vec<Vec<u32>> = locals
        .iter()
        .map(|l| {
            let mut t = Vec::with_capacity(l.len() + 1);
            t.push(0);
            t
        })
        .collect();
    let mut iters: Vec<std::vec::IntoIter<String>> = locals.into_iter().map(Vec::into_iter).collect();
    let mut heap = BinaryHeap::new();
    for (i, it) in iters.iter_mut().enumerate() {
        if let Some(v) = it.next() {
            heap.push(std::cmp::Reverse((v, i)));
        }
    }
    let mut merged: Vec<String> = Vec::new();
    while let Some(std::cmp::Reverse((v, i))) = heap.pop() {
        if merged.last() != Some(&v) {
            merged.push(v);
        }
        tables[i].push(merged.len() as u32);
        if let Some(next) = iters[i].next() {
            heap.push(std::cmp::Reverse((next, i)));
        }
    }
    (merged, tables)
}

/// Merges segments of one time chunk into one or more segments of at most
/// `max_rows_per_segment` rows each. Rows are rolled up when every input was.
pub fn merge(inputs: &[Segment], options: &MergeOptions) -> Result<Vec<Vec<u8>>, MergeError> {
    let first = inputs.first().ok_or(MergeError::Empty)?;
    let interval = first.directory().interval;
    let aggregators: Vec<Aggregator> = first.aggregators();
    let rollup = inputs.iter().all(|s| s.directory().rollup);
    let query_granularity = first.directory().query_granularity;
    for seg in inputs {
        let d = seg.directory();
        let incompatible = |reason: String| MergeError::Incompatible { object: seg.object().into(), reason };
        if d.interval != interval {
            return Err(incompatible(format!("interval {} differs from {}", d.interval, interval)));
        }
        let aggs = seg.aggregators();
        if aggs.iter().map(|a| &a.spec).ne(aggregators.iter().map(|a| &a.spec)) {
            return Err(incompatible("metrics differ from the other inputs'".into()));
        }
        if d.query_granularity != query_granularity {
            return Err(incompatible("query granularity differs from the other inputs'".into()));
        }
    }
    let order = merged_dimension_order(inputs)?;
    let mut dims: Vec<MergedDim> = order
        .into_iter()
        .map(|(name, kind, mvh)| MergedDim { name, kind, multi_value_handling: mvh, dictionary: Vec::new() })
        .collect();

    // Dictionaries: sorted union, and each input's id -> merged code table.
    let mut remaps: Vec<Vec<Vec<u32>>> = vec![Vec::with_capacity(dims.len()); inputs.len()];
    for d in &mut dims {
        if d.kind != ColumnType::String {
            remaps.iter_mut().for_each(|r| r.push(Vec::new()));
            continue;
        }
        let locals: Vec<Vec<String>> = inputs
            .iter()
            .map(|s| if s.column(&d.name).is_some() { s.dictionary(&d.name) } else { Ok(Vec::new()) })
            .collect::<Result<_, _>>()?;
        let (dictionary, tables) = merge_dictionaries(locals);
        d.dictionary = dictionary;
        for (i, table) in tables.into_iter().enumerate() {
            remaps[i].push(table);
        }
    }

    let mut states: Vec<Input<'_>> = Vec::with_capacity(inputs.len());
    for (seg, remap) in inputs.iter().zip(remaps) {
        let cols: Vec<&str> = seg.directory().columns[1..]
            .iter()
            .filter(|c| c.kind != ColumnType::Metric)
            .map(|c| c.name.as_str())
            .collect();
        let metric_names: Vec<&str> =
            seg.directory().columns.iter().filter(|c| c.kind == ColumnType::Metric).map(|c| c.name.as_str()).collect();
        let row = MergedRow {
            time: 0,
            dims: dims
                .iter()
                .map(|d| {
                    if d.kind == ColumnType::String {
                        DimBuf::Codes(vec![0])
                    } else if d.kind == ColumnType::Long {
                        DimBuf::Long(None)
                    } else {
                        DimBuf::Double(None)
                    }
                })
                .collect(),
            metrics: Vec::new(),
        };
        let mut input = Input {
            cursor: RowCursor::new(seg)?,
            buf: RowBuf::default(),
            dim_pos: dims.iter().map(|d| cols.iter().position(|c| *c == d.name)).collect(),
            remap,
            metric_pos: aggregators
                .iter()
                .map(|a| metric_names.iter().position(|m| *m == a.name).unwrap_or(0))
                .collect(),
            row,
            live: false,
        };
        input.advance()?;
        states.push(input);
    }

    let layout = SegmentLayout {
        interval,
        dims: dims
            .iter_mut()
            .map(|d| DimLayout {
                name: d.name.clone(),
                kind: match d.kind {
                    ColumnType::Long => DimensionType::Long,
                    ColumnType::Float => DimensionType::Float,
                    ColumnType::Double => DimensionType::Double,
                    _ => DimensionType::String,
                },
                multi_value_handling: d.multi_value_handling,
                dictionary: Arc::new(std::mem::take(&mut d.dictionary)),
            })
            .collect(),
        metrics: aggregators.clone(),
        rollup,
        query_granularity,
    };
    let mut out = Vec::new();
    let mut writer = SegmentWriter::new(layout.clone(), options.compression);
    // The row being rolled up; its buffers are swapped with the inputs' to avoid copies.
    let mut pending = MergedRow::default();
    let mut has_pending = false;
    loop {
        // The input whose current row sorts first (k is small: a linear scan beats a heap).
        let mut best: Option<usize> = None;
        for (i, s) in states.iter().enumerate() {
            if !s.live {
                continue;
            }
            best = match best {
                Some(b)
                    if s.row.time.cmp(&states[b].row.time).then_with(|| cmp_dims(&s.row.dims, &states[b].row.dims))
                        != Ordering::Less =>
                {
                    Some(b)
                }
                _ => Some(i),
            };
        }
        let Some(b) = best else { break };
        let next = &mut states[b].row;
        if has_pending && rollup && pending.time == next.time && cmp_dims(&pending.dims, &next.dims) == Ordering::Equal
        {
            for (agg, (cell, other)) in aggregators.iter().zip(pending.metrics.iter_mut().zip(&next.metrics)) {
                agg.combine(cell, other);
            }
        } else {
            if has_pending {
                write_row(&mut writer, &pending);
                if writer.num_rows() as u64 >= options.max_rows_per_segment {
                    let full = std::mem::replace(&mut writer, SegmentWriter::new(layout.clone(), options.compression));
                    out.push(full.finish()?);
                }
            }
            std::mem::swap(&mut pending, next);
            has_pending = true;
            if states[b].row.dims.is_empty() {
                states[b].row.dims = pending.dims.clone();
            }
        }
        states[b].advance()?;
    }
    if has_pending {
        write_row(&mut writer, &pending);
    }
    if writer.num_rows() > 0 || out.is_empty() {
        out.push(writer.finish()?);
    }
    Ok(out)
}

fn write_row(writer: &mut SegmentWriter, row: &MergedRow) {
    writer.push_row_with(
        row.time,
        |i| match &row.dims[i] {
            DimBuf::Codes(c) => DimCell::Codes(c),
            DimBuf::Long(v) => DimCell::Long(*v),
            DimBuf::Double(v) => DimCell::Double(*v),
        },
        |i| &row.metrics[i],
    );
}

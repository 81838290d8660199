//! The incremental index: rows of one time chunk held in memory, rolled up on
//! (truncated time, all dimensions) when the spec says so, with its memory use tracked so that
//! `maxRowsInMemory` / `maxBytesInMemory` can decide when to persist it as a hydrant.

mod auto;
pub mod dims;
mod nested;
mod persist;

use crate::aggregate::{cell_heap_bytes, Aggregator, MetricCell};
use crate::granularity::Granularity;
use crate::input::DimPlan;
use crate::row::{DimValue, Row, Spare};
use crate::spec::{DatasourceSpec, DimensionType, MultiValueHandling};
use crate::time::Interval;
use crate::value::Value;
use dims::DimColumn;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Settings shared by the indexes of one task.
#[derive(Debug, Clone)]
pub struct IndexConfig {
    /// Aggregators, in spec order.
    pub aggregators: Vec<Aggregator>,
    /// Whether to roll up.
    pub rollup: bool,
    /// Timestamp truncation.
    pub query_granularity: Granularity,
    /// Time chunk size.
    pub segment_granularity: Granularity,
}

impl IndexConfig {
    /// The index settings of a datasource spec.
    pub fn from_spec(spec: &DatasourceSpec) -> Self {
        Self {
            aggregators: spec.metrics.iter().map(Aggregator::new).collect(),
            rollup: spec.granularity.rollup,
            query_granularity: spec.granularity.query_granularity,
            segment_granularity: spec.granularity.segment_granularity,
        }
    }
}

/// Metadata of one index dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct DimMeta {
    /// Name.
    pub name: String,
    /// Type.
    pub kind: DimensionType,
    /// Multi-value ordering.
    pub multi_value_handling: MultiValueHandling,
    /// Discovered rather than declared (sorted by name at persist).
    pub discovered: bool,
    /// Segments keep a bitmap per value.
    pub bitmap_index: bool,
}

/// Where a row goes in the index.
enum Slot {
    /// An equal row (rolling up), by index.
    Existing(usize),
    /// A new row at this (truncated) time.
    New(i64),
}

/// An incremental index of one time chunk.
#[derive(Debug)]
pub struct IncrementalIndex {
    config: IndexConfig,
    interval: Interval,
    meta: Vec<DimMeta>,
    times: Vec<i64>,
    dims: Vec<DimColumn>,
    metrics: Vec<Vec<MetricCell>>,
    rollup: HashTable<u32>,
    keys: Vec<u64>,
    key_buf: Vec<u64>,
    hasher: foldhash::fast::FixedState,
    metric_heap: usize,
    num_ingested: u64,
    /// Strings of rows added without a caller to hand them to, dropped after each row.
    spare: Vec<String>,
}

impl IncrementalIndex {
    /// An empty index for the time chunk `interval`.
    pub fn new(config: IndexConfig, interval: Interval) -> Self {
        let metrics = config.aggregators.iter().map(|_| Vec::new()).collect();
        Self {
            config,
            interval,
            meta: Vec::new(),
            times: Vec::new(),
            dims: Vec::new(),
            metrics,
            rollup: HashTable::new(),
            keys: Vec::new(),
            key_buf: Vec::new(),
            hasher: foldhash::fast::FixedState::default(),
            metric_heap: 0,
            num_ingested: 0,
            spare: Vec::new(),
        }
    }

    /// The time chunk.
    pub fn interval(&self) -> Interval {
        self.interval
    }

    /// Rows held (after rollup).
    pub fn num_rows(&self) -> usize {
        self.times.len()
    }

    /// Input rows added.
    pub fn num_ingested(&self) -> u64 {
        self.num_ingested
    }

    /// Returns true when no row was added.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The dimensions seen so far, in index order.
    pub fn dimensions(&self) -> &[DimMeta] {
        &self.meta
    }

    /// Adds a row whose dimensions follow `plan` (the parser's dimension list). The row's
    /// time must lie in the index's interval.
    pub fn add(&mut self, row: Row, plan: &[DimPlan]) {
        let Row { mut dims, metrics: inputs, time: raw_time } = row;
        let mut spare = std::mem::take(&mut self.spare);
        let slot = self.locate(raw_time, &mut dims, plan, &mut spare);
        spare.clear();
        self.spare = spare;
        self.add_metrics(slot, raw_time, &inputs);
    }

    /// [`add`](Self::add), handing the row's strings (once interned) and its emptied vectors
    /// to `spare`, for the parser to read the next rows into without allocating.
    pub fn add_recycling(&mut self, row: Row, plan: &[DimPlan], spare: &mut Spare) {
        let Row { mut dims, metrics: mut inputs, time: raw_time } = row;
        let slot = self.locate(raw_time, &mut dims, plan, &mut spare.strings);
        self.add_metrics(slot, raw_time, &inputs);
        inputs.clear();
        spare.rows.push((dims, inputs));
    }

    /// Folds a row's metric inputs into its slot.
    fn add_metrics(&mut self, slot: Slot, raw_time: i64, inputs: &[Value]) {
        match slot {
            Slot::Existing(r) => {
                for (agg, (cells, input)) in self.config.aggregators.iter().zip(self.metrics.iter_mut().zip(inputs)) {
                    let cell = &mut cells[r];
                    let before = cell_heap_bytes(cell);
                    agg.fold(cell, input, raw_time);
                    self.metric_heap = self.metric_heap + cell_heap_bytes(cell) - before;
                }
            }
            Slot::New(time) => {
                self.times.push(time);
                for (i, (agg, cells)) in self.config.aggregators.iter().zip(self.metrics.iter_mut()).enumerate() {
                    let cell = agg.init(inputs.get(i).unwrap_or(&Value::Null), raw_time);
                    self.metric_heap += cell_heap_bytes(&cell);
                    cells.push(cell);
                }
            }
        }
    }

    /// Adds a row of aggregated metric states, one per aggregator (a segment's row being
    /// re-indexed): combined into an equal row when rolling up. The row's time must lie in
    /// the index's interval.
    pub fn add_states(&mut self, time: i64, mut dims: Vec<DimValue>, states: Vec<MetricCell>, plan: &[DimPlan]) {
        debug_assert_eq!(states.len(), self.config.aggregators.len(), "one state per aggregator");
        let mut spare = std::mem::take(&mut self.spare);
        let slot = self.locate(time, &mut dims, plan, &mut spare);
        spare.clear();
        self.spare = spare;
        match slot {
            Slot::Existing(r) => {
                for (agg, (cells, state)) in self.config.aggregators.iter().zip(self.metrics.iter_mut().zip(&states)) {
                    let cell = &mut cells[r];
                    let before = cell_heap_bytes(cell);
                    agg.combine(cell, state);
                    self.metric_heap = self.metric_heap + cell_heap_bytes(cell) - before;
                }
            }
            Slot::New(time) => {
                self.times.push(time);
                for (cells, state) in self.metrics.iter_mut().zip(states) {
                    self.metric_heap += cell_heap_bytes(&state);
                    cells.push(state);
                }
            }
        }
    }

    /// Pushes a row's dimension values (taking them out of `values`) and finds its row: an
    /// equal row's when rolling up (the values pushed are taken back), else a new one whose
    /// time and metrics the caller pushes.
    fn locate(&mut self, raw_time: i64, values: &mut Vec<DimValue>, plan: &[DimPlan], spare: &mut Vec<String>) -> Slot {
        debug_assert!(self.interval.contains(raw_time), "row outside the index interval");
        if self.meta.len() < plan.len() {
            self.add_dimensions(&plan[self.meta.len()..]);
        }
        self.num_ingested += 1;
        let time = self.config.query_granularity.floor(raw_time);
        debug_assert!(values.len() <= self.dims.len(), "row has more dimensions than its plan");
        let mut values = values.drain(..);
        if !self.config.rollup {
            for col in &mut self.dims {
                col.push(values.next().unwrap_or_default(), spare);
            }
            return Slot::New(time);
        }
        self.key_buf.clear();
        self.key_buf.push(time as u64);
        for col in &mut self.dims {
            let (a, b) = col.push(values.next().unwrap_or_default(), spare);
            self.key_buf.push(a);
            if !matches!(col, DimColumn::Str(_)) {
                self.key_buf.push(b);
            }
        }
        let width = self.key_buf.len();
        let hash = self.hasher.hash_one(&self.key_buf);
        let (keys, key_buf) = (&self.keys, &self.key_buf);
        let existing = self.rollup.find(hash, |&r| {
            let stored = key_of(keys, r as usize, width);
            stored == key_buf.as_slice()
        });
        if let Some(&r) = existing {
            for col in &mut self.dims {
                col.pop();
            }
            return Slot::Existing(r as usize);
        }
        let r = self.times.len() as u32;
        self.keys.extend_from_slice(&self.key_buf);
        let (keys, hasher) = (&self.keys, &self.hasher);
        self.rollup.insert_unique(hash, r, |&r| hasher.hash_one(key_of(keys, r as usize, width)));
        Slot::New(time)
    }

    /// Appends dimensions first seen now: earlier rows hold null for them, and their rollup
    /// keys are widened with null words so that keys keep one width.
    fn add_dimensions(&mut self, new: &[DimPlan]) {
        let old_width = self.key_width();
        let mut null_words = Vec::new();
        for p in new {
            self.meta.push(DimMeta {
                name: p.name.clone(),
                kind: p.kind,
                multi_value_handling: p.multi_value_handling,
                discovered: p.discovered,
                bitmap_index: p.bitmap_index,
            });
            self.dims.push(DimColumn::new(p.kind, self.times.len()));
            match p.kind {
                DimensionType::String | DimensionType::Json | DimensionType::Auto => null_words.push(0),
                _ => null_words.extend([1, 0]),
            }
        }
        if !self.config.rollup || self.times.is_empty() {
            return;
        }
        let rows = self.times.len();
        let mut keys = Vec::with_capacity(rows * (old_width + null_words.len()));
        for r in 0..rows {
            keys.extend_from_slice(&self.keys[r * old_width..(r + 1) * old_width]);
            keys.extend_from_slice(&null_words);
        }
        self.keys = keys;
        let width = self.key_width();
        self.rollup.clear();
        for r in 0..rows {
            let hash = self.hasher.hash_one(key_of(&self.keys, r, width));
            let (keys, hasher) = (&self.keys, &self.hasher);
            self.rollup.insert_unique(hash, r as u32, |&r| hasher.hash_one(key_of(keys, r as usize, width)));
        }
    }

    fn key_width(&self) -> usize {
        1 + self.dims.iter().map(|d| if matches!(d, DimColumn::Str(_)) { 1 } else { 2 }).sum::<usize>()
    }

    /// Estimated bytes held by the index, from the capacities of its buffers.
    pub fn estimated_bytes(&self) -> usize {
        let metric_cells: usize = self.metrics.iter().map(|m| m.capacity() * std::mem::size_of::<MetricCell>()).sum();
        std::mem::size_of::<Self>()
            + self.times.capacity() * 8
            + self.dims.iter().map(DimColumn::heap_bytes).sum::<usize>()
            + metric_cells
            + self.metric_heap
            + self.keys.capacity() * 8
            + self.rollup.capacity() * 8 / 7 * 5
    }
}

/// Key words of row `r` (all stored keys share the current width).
fn key_of(keys: &[u64], r: usize, width: usize) -> &[u64] {
    keys.get(r * width..(r + 1) * width).unwrap_or(&[])
}

#[cfg(test)]
mod tests;

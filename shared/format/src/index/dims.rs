//! Dimension columns of the incremental index: insertion-ordered dictionaries for strings
//! (sorted only at persist), interned multi-value combinations, nullable numeric values.

use crate::row::DimValue;
use crate::spec::DimensionType;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Code flag marking a multi-value combination (the rest indexes `combos`).
pub const MULTI: u32 = 1 << 31;

/// Interns strings to dense ids in insertion order, storing each string once.
#[derive(Debug, Default)]
pub struct Dictionary {
    table: HashTable<u32>,
    values: Vec<Box<str>>,
    hasher: foldhash::fast::FixedState,
    value_bytes: usize,
    last: u32,
}

impl Dictionary {
    /// The id of `s`, inserting it when new.
    pub fn intern(&mut self, s: &str) -> u32 {
        // Low-cardinality columns often repeat the previous value: skip the hash for it.
        if let Some(v) = self.values.get(self.last as usize) {
            if **v == *s {
                return self.last;
            }
        }
        let id = self.lookup_or_insert(s);
        self.last = id;
        id
    }

    fn lookup_or_insert(&mut self, s: &str) -> u32 {
        let hash = self.hasher.hash_one(s);
        let values = &self.values;
        if let Some(&id) = self.table.find(hash, |&id| *values[id as usize] == *s) {
            return id;
        }
        let id = self.values.len() as u32;
        self.value_bytes += s.len();
        self.values.push(s.into());
        let values = &self.values;
        let hasher = &self.hasher;
        self.table.insert_unique(hash, id, |&id| hasher.hash_one(&*values[id as usize]));
        id
    }

    /// The values in id order.
    pub fn values(&self) -> &[Box<str>] {
        &self.values
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.value_bytes
            + self.values.capacity() * std::mem::size_of::<Box<str>>()
            + self.table.capacity() * 8 / 7 * (std::mem::size_of::<u32>() + 1)
    }
}

/// A string dimension column.
#[derive(Debug, Default)]
pub struct StrColumn {
    /// Interned values.
    pub dict: Dictionary,
    /// Per row: 0 null, `id + 1` for a single value, `MULTI | k` for combination `k`.
    pub codes: Vec<u32>,
    /// Multi-value combinations, as ids in the row's value order.
    pub combos: Vec<Box<[u32]>>,
    combo_table: HashTable<u32>,
    combo_hasher: foldhash::fast::FixedState,
    combo_bytes: usize,
}

impl StrColumn {
    /// Encodes a row's value (interning it) and returns its code; the value's strings go to
    /// `spare` for reuse.
    pub fn encode(&mut self, v: DimValue, spare: &mut Vec<String>) -> u32 {
        match v {
            DimValue::Str(s) => {
                let id = self.dict.intern(&s);
                spare.push(s);
                id + 1
            }
            DimValue::Multi(values) => {
                let ids: Vec<u32> = values.iter().map(|s| self.dict.intern(s)).collect();
                spare.extend(values);
                let hash = self.combo_hasher.hash_one(&ids);
                let combos = &self.combos;
                if let Some(&k) = self.combo_table.find(hash, |&k| *combos[k as usize] == *ids) {
                    return MULTI | k;
                }
                let k = self.combos.len() as u32;
                self.combo_bytes += ids.len() * 4;
                self.combos.push(ids.into_boxed_slice());
                let combos = &self.combos;
                let hasher = &self.combo_hasher;
                self.combo_table.insert_unique(hash, k, |&k| hasher.hash_one(&combos[k as usize]));
                MULTI | k
            }
            DimValue::Null => 0,
            DimValue::Long(x) => self.dict.intern(&x.to_string()) + 1,
            DimValue::Double(x) => self.dict.intern(&crate::value::format_double(x)) + 1,
            DimValue::Float(x) => self.dict.intern(&crate::value::format_double(x as f64)) + 1,
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.dict.heap_bytes()
            + self.codes.capacity() * 4
            + self.combo_bytes
            + self.combos.capacity() * std::mem::size_of::<Box<[u32]>>()
            + self.combo_table.capacity() * 8 / 7 * 5
    }
}

/// One dimension column of the index.
#[derive(Debug)]
pub enum DimColumn {
    /// Dictionary-encoded strings.
    Str(StrColumn),
    /// Longs.
    Long(Vec<Option<i64>>),
    /// Doubles.
    Double(Vec<Option<f64>>),
    /// Floats.
    Float(Vec<Option<f32>>),
}

impl DimColumn {
    /// An empty column of `kind` backfilled with `rows` nulls.
    pub fn new(kind: DimensionType, rows: usize) -> Self {
        match kind {
            DimensionType::String | DimensionType::Json | DimensionType::Auto => {
                DimColumn::Str(StrColumn { codes: vec![0; rows], ..Default::default() })
            }
            DimensionType::Long => DimColumn::Long(vec![None; rows]),
            DimensionType::Double => DimColumn::Double(vec![None; rows]),
            DimensionType::Float => DimColumn::Float(vec![None; rows]),
        }
    }

    /// Appends a row's value and returns its rollup key words; strings it no longer needs go
    /// to `spare`.
    pub fn push(&mut self, v: DimValue, spare: &mut Vec<String>) -> (u64, u64) {
        match self {
            DimColumn::Str(c) => {
                let code = c.encode(v, spare);
                c.codes.push(code);
                (code as u64, 0)
            }
            DimColumn::Long(c) => {
                let x = match v {
                    DimValue::Long(x) => Some(x),
                    _ => None,
                };
                c.push(x);
                (x.is_none() as u64, x.unwrap_or(0) as u64)
            }
            DimColumn::Double(c) => {
                let x = match v {
                    DimValue::Double(x) => Some(x),
                    DimValue::Float(x) => Some(x as f64),
                    DimValue::Long(x) => Some(x as f64),
                    _ => None,
                };
                c.push(x);
                (x.is_none() as u64, x.map(f64::to_bits).unwrap_or(0))
            }
            DimColumn::Float(c) => {
                let x = match v {
                    DimValue::Float(x) => Some(x),
                    DimValue::Double(x) => Some(x as f32),
                    DimValue::Long(x) => Some(x as f32),
                    _ => None,
                };
                c.push(x);
                (x.is_none() as u64, x.map(|f| f.to_bits() as u64).unwrap_or(0))
            }
        }
    }

    /// Removes the last row (used when a rolled-up row turned out to exist already).
    pub fn pop(&mut self) {
        match self {
            DimColumn::Str(c) => {
                c.codes.pop();
            }
            DimColumn::Long(c) => {
                c.pop();
            }
            DimColumn::Double(c) => {
                c.pop();
            }
            DimColumn::Float(c) => {
                c.pop();
            }
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        match self {
            DimColumn::Str(c) => c.heap_bytes(),
            DimColumn::Long(c) => c.capacity() * std::mem::size_of::<Option<i64>>(),
            DimColumn::Double(c) => c.capacity() * std::mem::size_of::<Option<f64>>(),
            DimColumn::Float(c) => c.capacity() * std::mem::size_of::<Option<f32>>(),
        }
    }
}

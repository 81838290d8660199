//! Result groups: (time bucket, dimension values) keys shared by every segment of a query,
//! and the per-segment mapping from a row to its group.
//!
//! Within a segment a row's key is made of local codes (a string dimension's dictionary ids,
//! or codes assigned to the distinct values of other columns) and its bucket's index; the key
//! is packed into one integer and mapped to a global group once per distinct key, so the
//! per-row work is a lookup in a dense table (small key spaces) or a hash map.

use super::columns::{Column, SegmentColumns};
use super::model::DimensionSpec;
use super::QueryError;
use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use sluice_format::granularity::Granularity;
use sluice_format::value::Value;
use std::hash::BuildHasher;
use std::rc::Rc;
use std::sync::Arc;

/// A dimension value in a group key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyValue {
    /// Null.
    Null,
    /// A long.
    Long(i64),
    /// A double, by its bits (`-0.0` normalized).
    Double(u64),
    /// A string, shared by the interners that hold it.
    Str(Arc<str>),
}

/// A [`KeyValue`] borrowed: the same variants in the same order, so that it hashes as the
/// value it borrows (a string is looked up without being copied first).
#[derive(Hash)]
#[allow(dead_code)] // Only `Str` is built: the others place it.
enum KeyRef<'a> {
    Null,
    Long(i64),
    Double(u64),
    Str(&'a str),
}

impl KeyValue {
    fn of(v: &Value) -> KeyValue {
        match v {
            Value::Null => KeyValue::Null,
            Value::Long(x) => KeyValue::Long(*x),
            Value::Double(x) => KeyValue::Double(if *x == 0.0 { 0f64.to_bits() } else { x.to_bits() }),
            Value::String(s) => KeyValue::Str(s.as_str().into()),
            // A document groups as its JSON text.
            json @ Value::Json(_) => KeyValue::Str(json.as_str().unwrap_or_default().into()),
            Value::Array(items) => match items.first() {
                Some(first) if items.len() == 1 => KeyValue::of(first),
                _ => KeyValue::Null,
            },
        }
    }

    /// The value as a plain value.
    pub fn value(&self) -> Value {
        match self {
            KeyValue::Null => Value::Null,
            KeyValue::Long(x) => Value::Long(*x),
            KeyValue::Double(b) => Value::Double(f64::from_bits(*b)),
            KeyValue::Str(s) => Value::String(s.to_string()),
        }
    }
}

/// Distinct values of one dimension across the query. Each value is stored once, with its
/// hash: absorbing another interner's values (a segment's partial into the query's) looks
/// them up without hashing them again, and a string value is shared, not copied.
#[derive(Default)]
pub struct Interner {
    /// Ids by the hash of their value.
    table: HashTable<u32>,
    /// Values by id.
    pub values: Vec<KeyValue>,
    /// Hash of each value, by id.
    hashes: Vec<u64>,
}

/// The hasher of every interner in this process: one random seed, so that a hash kept by one
/// interner is valid in another (values come from the data: a fixed seed would let crafted
/// values collide).
fn value_hasher() -> &'static DefaultHashBuilder {
    static HASHER: std::sync::LazyLock<DefaultHashBuilder> = std::sync::LazyLock::new(DefaultHashBuilder::default);
    &HASHER
}

impl Interner {
    /// The id of `v`, given the next one if new.
    pub(crate) fn intern(&mut self, v: &KeyValue) -> u32 {
        self.intern_hashed(v, value_hasher().hash_one(v))
    }

    /// [`Interner::intern`] of the string `v`, copied only if new.
    pub(crate) fn intern_str(&mut self, v: &str) -> u32 {
        let hash = value_hasher().hash_one(KeyRef::Str(v));
        let values = &self.values;
        if let Some(&id) = self.table.find(hash, |&id| matches!(&values[id as usize], KeyValue::Str(s) if **s == *v)) {
            return id;
        }
        self.intern_hashed(&KeyValue::Str(v.into()), hash)
    }

    /// [`Interner::intern`] of `v` whose hash is `hash`.
    fn intern_hashed(&mut self, v: &KeyValue, hash: u64) -> u32 {
        let values = &self.values;
        if let Some(&id) = self.table.find(hash, |&id| values[id as usize] == *v) {
            return id;
        }
        let id = self.values.len() as u32;
        self.values.push(v.clone());
        self.hashes.push(hash);
        let hashes = &self.hashes;
        self.table.insert_unique(hash, id, |&id| hashes[id as usize]);
        id
    }

    /// The ids here of every value of `other`, in `other`'s id order, new ones added.
    fn absorb(&mut self, other: &Interner) -> Vec<u32> {
        other.values.iter().zip(&other.hashes).map(|(v, &hash)| self.intern_hashed(v, hash)).collect()
    }
}

/// The groups of a query (or of one segment's part of it): keys by slot.
pub struct Groups {
    /// Bucket start of each group (`ETERNITY_START` for granularity `all`).
    pub buckets: Vec<i64>,
    /// Value ids of each group, `dims` per group, flattened.
    pub keys: Vec<u32>,
    /// Number of dimensions.
    pub dims: usize,
    /// Values of each dimension.
    pub interners: Vec<Interner>,
    /// Slots by the hash of their key (bucket and ids), compared against `buckets` and `keys`.
    index: HashTable<u32>,
    hasher: DefaultHashBuilder,
    /// With one dimension, the slot of each value id in the first bucket seen (`u32::MAX`
    /// where none yet): a topN or a one-dimension groupBy over `all` finds its groups without
    /// hashing.
    direct: Vec<u32>,
    direct_bucket: Option<i64>,
}

impl Groups {
    /// Groups over `dims` dimensions.
    pub fn new(dims: usize) -> Self {
        Groups {
            buckets: Vec::new(),
            keys: Vec::new(),
            dims,
            interners: (0..dims).map(|_| Interner::default()).collect(),
            index: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            direct: Vec::new(),
            direct_bucket: None,
        }
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Returns true when there are no groups.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The slot of the group (bucket, value ids), created if new.
    pub fn slot(&mut self, bucket: i64, ids: &[u32]) -> u32 {
        debug_assert_eq!(ids.len(), self.dims);
        let &[id] = ids else {
            return self.hashed_slot(bucket, ids);
        };
        if *self.direct_bucket.get_or_insert(bucket) != bucket {
            return self.hashed_slot(bucket, ids);
        }
        let id = id as usize;
        if let Some(&s) = self.direct.get(id).filter(|&&s| s != u32::MAX) {
            return s;
        }
        let s = self.hashed_slot(bucket, ids);
        if self.direct.len() <= id {
            self.direct.resize(id + 1, u32::MAX);
        }
        self.direct[id] = s;
        s
    }

    /// [`Groups::slot`] through the hash table.
    fn hashed_slot(&mut self, bucket: i64, ids: &[u32]) -> u32 {
        let hash = self.hasher.hash_one((bucket, ids));
        let (buckets, keys, dims) = (&self.buckets, &self.keys, self.dims);
        let same = |&s: &u32| buckets[s as usize] == bucket && &keys[s as usize * dims..(s as usize + 1) * dims] == ids;
        if let Some(&s) = self.index.find(hash, same) {
            return s;
        }
        let s = self.buckets.len() as u32;
        self.buckets.push(bucket);
        self.keys.extend_from_slice(ids);
        let (buckets, keys, hasher) = (&self.buckets, &self.keys, &self.hasher);
        self.index.insert_unique(hash, s, |&s| {
            hasher.hash_one((buckets[s as usize], &keys[s as usize * dims..(s as usize + 1) * dims]))
        });
        s
    }

    /// Dimension `d`'s value in group `slot`.
    pub fn value(&self, slot: usize, d: usize) -> &KeyValue {
        &self.interners[d].values[self.keys[slot * self.dims + d] as usize]
    }

    /// Adds `other`'s groups (of another segment or batch of the same query) and returns,
    /// for each of `other`'s slots, its slot here.
    pub fn absorb(&mut self, other: &Groups) -> Vec<u32> {
        debug_assert_eq!(self.dims, other.dims);
        let ids: Vec<Vec<u32>> =
            self.interners.iter_mut().zip(&other.interners).map(|(mine, theirs)| mine.absorb(theirs)).collect();
        let mut key = vec![0u32; self.dims];
        (0..other.len())
            .map(|slot| {
                for (d, k) in key.iter_mut().enumerate() {
                    *k = ids[d][other.keys[slot * other.dims + d] as usize];
                }
                self.slot(other.buckets[slot], &key)
            })
            .collect()
    }
}

/// One grouping dimension of one segment: a local code per row (or per value).
struct LocalDim<'s> {
    column: Rc<Column<'s>>,
    /// Codes of non-string columns, one per row.
    codes: Vec<u32>,
    /// Values of those codes.
    values: Vec<KeyValue>,
    /// Number of codes.
    card: u32,
    /// Local code -> global id (`u32::MAX` until first seen).
    global: Vec<u32>,
}

impl LocalDim<'_> {
    fn row_codes(&self, row: usize) -> &[u32] {
        match self.column.as_ref() {
            Column::String(s) => {
                let ids = s.row_ids(row);
                if ids.is_empty() {
                    &[0]
                } else {
                    ids
                }
            }
            _ => std::slice::from_ref(&self.codes[row]),
        }
    }

    /// One code per row, for single-valued dimensions.
    fn codes_per_row(&self) -> &[u32] {
        match self.column.as_ref() {
            Column::String(s) if s.offsets.is_none() => &s.ids,
            _ => &self.codes,
        }
    }

    fn is_multi(&self) -> bool {
        matches!(self.column.as_ref(), Column::String(s) if s.offsets.is_some())
    }
}

enum LocalIndex {
    Dense(Vec<u32>),
    Packed(HashMap<u128, u32>),
}

/// Maps one segment's rows to global groups.
pub struct SegmentGrouper<'s> {
    granularity: Granularity,
    bucket_starts: Vec<i64>,
    dims: Vec<LocalDim<'s>>,
    shifts: Vec<u32>,
    index: LocalIndex,
    scratch: Vec<u32>,
    gathered: Vec<u32>,
    multi: bool,
}

/// Dictionaries of at least this many values are read in order by [`SegmentGrouper::prime`].
const PRIME_MIN_VALUES: usize = 4096;

impl<'s> SegmentGrouper<'s> {
    /// Finds the ids in `groups` of every value that `rows` hold in a string dimension with a
    /// large dictionary, in dictionary order. The dictionary is then read front to back once,
    /// rather than at random as rows meet new values: on dictionaries too large for the
    /// processor's caches, those random reads took most of a topN's time.
    pub fn prime(&mut self, rows: impl Iterator<Item = u32> + Clone, groups: &mut Groups) {
        for (at, d) in self.dims.iter_mut().enumerate() {
            let column = d.column.clone();
            let Column::String(s) = column.as_ref() else { continue };
            if s.dictionary.len() < PRIME_MIN_VALUES {
                continue;
            }
            let mut used = vec![false; d.global.len()];
            for r in rows.clone() {
                for &c in d.row_codes(r as usize) {
                    used[c as usize] = true;
                }
            }
            let interner = &mut groups.interners[at];
            for (c, (global, used)) in d.global.iter_mut().zip(used).enumerate() {
                if used && *global == u32::MAX {
                    *global = match s.dictionary.get(c as u32) {
                        Some(v) => interner.intern_str(v),
                        None => interner.intern(&KeyValue::Null),
                    };
                }
            }
        }
    }

    /// Prepares the dimensions `specs` of `cols` (decoded once) for grouping by `granularity`.
    pub fn new(
        cols: &mut SegmentColumns<'s>,
        granularity: Granularity,
        specs: &[DimensionSpec],
    ) -> Result<Self, QueryError> {
        let mut bucket_starts: Vec<i64> = Vec::new();
        if granularity != Granularity::All {
            for &t in cols.times()?.iter() {
                if bucket_starts.last().is_none_or(|&b| granularity.next(b) <= t) {
                    bucket_starts.push(granularity.floor(t));
                }
            }
            bucket_starts.dedup();
        }
        let mut dims = Vec::with_capacity(specs.len());
        for spec in specs {
            let column = cols.column(&spec.dimension)?;
            let (codes, values, card) = match column.as_ref() {
                Column::String(s) => (Vec::new(), Vec::new(), s.dictionary.len() as u32 + 1),
                other => {
                    let times = cols.times()?;
                    let mut ids: HashMap<KeyValue, u32> = HashMap::new();
                    let mut values = Vec::new();
                    let codes = (0..cols.num_rows())
                        .map(|r| {
                            let k = KeyValue::of(&other.value(r, &times));
                            *ids.entry(k.clone()).or_insert_with(|| {
                                values.push(k);
                                values.len() as u32 - 1
                            })
                        })
                        .collect();
                    let card = values.len().max(1) as u32;
                    (codes, values, card)
                }
            };
            dims.push(LocalDim { column, codes, values, card, global: vec![u32::MAX; card as usize] });
        }
        let bucket_bits = bits_for(bucket_starts.len().max(1) as u64);
        let mut shifts = Vec::with_capacity(dims.len());
        let mut total = bucket_bits;
        for d in &dims {
            shifts.push(total);
            total += bits_for(d.card as u64);
        }
        if total > 128 {
            return Err(QueryError::Unsupported(format!(
                "grouping on {} dimensions whose codes need {total} bits in one segment (at most 128 are supported)",
                dims.len()
            )));
        }
        let index = if total <= 20 {
            LocalIndex::Dense(vec![u32::MAX; 1 << total])
        } else {
            LocalIndex::Packed(HashMap::new())
        };
        let multi = dims.iter().any(|d| d.is_multi());
        Ok(SegmentGrouper {
            granularity,
            bucket_starts,
            dims,
            shifts,
            index,
            scratch: Vec::new(),
            gathered: Vec::new(),
            multi,
        })
    }

    fn bucket_of(&self, t: i64, hint: &mut usize) -> usize {
        if self.bucket_starts.is_empty() {
            return 0;
        }
        let b = *hint;
        if b < self.bucket_starts.len()
            && self.bucket_starts[b] <= t
            && (b + 1 == self.bucket_starts.len() || t < self.bucket_starts[b + 1])
        {
            return b;
        }
        *hint = self.bucket_starts.partition_point(|&s| s <= t).saturating_sub(1);
        *hint
    }

    /// Maps `rows` to group slots, appending (row, slot) pairs; a multi-value row appears once
    /// per value (per combination of values across multi-value dimensions).
    pub fn assign(
        &mut self,
        rows: &[u32],
        times: &[i64],
        groups: &mut Groups,
        out_rows: &mut Vec<u32>,
        out_slots: &mut Vec<u32>,
    ) {
        if !self.multi && matches!(self.index, LocalIndex::Dense(_)) {
            self.assign_dense(rows, times, groups, out_rows, out_slots);
            return;
        }
        let mut hint = 0usize;
        let k = self.dims.len();
        let mut codes = vec![0u32; k];
        if !self.multi {
            // Column at a time: each dimension's codes for the batch, then one key per row.
            let mut gathered = std::mem::take(&mut self.gathered);
            gathered.clear();
            gathered.resize(rows.len() * k, 0);
            for (j, d) in self.dims.iter().enumerate() {
                let src = d.codes_per_row();
                for (i, &r) in rows.iter().enumerate() {
                    gathered[i * k + j] = src[r as usize];
                }
            }
            for (i, &r) in rows.iter().enumerate() {
                let b = if self.bucket_starts.is_empty() { 0 } else { self.bucket_of(times[r as usize], &mut hint) };
                let slot = self.slot(b, &gathered[i * k..(i + 1) * k], groups);
                out_rows.push(r);
                out_slots.push(slot);
            }
            self.gathered = gathered;
            return;
        }
        for &r in rows {
            let b = if self.bucket_starts.is_empty() { 0 } else { self.bucket_of(times[r as usize], &mut hint) };
            // Every combination of the row's values, odometer-style.
            let lists: Vec<Vec<u32>> = self.dims.iter().map(|d| d.row_codes(r as usize).to_vec()).collect();
            let mut pos = vec![0usize; lists.len()];
            loop {
                for ((c, l), &p) in codes.iter_mut().zip(&lists).zip(&pos) {
                    *c = l[p];
                }
                let slot = self.slot(b, &codes, groups);
                out_rows.push(r);
                out_slots.push(slot);
                let mut k = 0;
                while k < pos.len() {
                    pos[k] += 1;
                    if pos[k] < lists[k].len() {
                        break;
                    }
                    pos[k] = 0;
                    k += 1;
                }
                if k == pos.len() {
                    break;
                }
            }
        }
    }

    /// [`SegmentGrouper::assign`] for single-valued dimensions whose keys fit the dense index:
    /// each row's key built column by column (its bucket, then each dimension's codes shifted
    /// in place), then one table lookup per row; a key seen for the first time finds its
    /// group as [`SegmentGrouper::slot`] does.
    fn assign_dense(
        &mut self,
        rows: &[u32],
        times: &[i64],
        groups: &mut Groups,
        out_rows: &mut Vec<u32>,
        out_slots: &mut Vec<u32>,
    ) {
        let mut keys = std::mem::take(&mut self.gathered);
        keys.clear();
        if self.bucket_starts.is_empty() {
            keys.resize(rows.len(), 0);
        } else {
            let mut hint = 0usize;
            for &r in rows {
                keys.push(self.bucket_of(times[r as usize], &mut hint) as u32);
            }
        }
        for (d, &shift) in self.dims.iter().zip(&self.shifts) {
            let src = d.codes_per_row();
            for (key, &r) in keys.iter_mut().zip(rows) {
                *key |= src[r as usize] << shift;
            }
        }
        let bucket_mask = self.shifts.first().map_or(u32::MAX, |&bits| (1u32 << bits) - 1);
        let LocalIndex::Dense(mut dense) = std::mem::replace(&mut self.index, LocalIndex::Dense(Vec::new())) else {
            unreachable!("assign_dense is called with a dense index")
        };
        out_rows.extend_from_slice(rows);
        out_slots.reserve(rows.len());
        let mut codes = Vec::with_capacity(self.dims.len());
        for (&key, &r) in keys.iter().zip(rows) {
            let mut slot = dense[key as usize];
            if slot == u32::MAX {
                codes.clear();
                codes.extend(self.dims.iter().map(|d| d.codes_per_row()[r as usize]));
                slot = self.new_group((key & bucket_mask) as usize, &codes, groups);
                dense[key as usize] = slot;
            }
            out_slots.push(slot);
        }
        self.index = LocalIndex::Dense(dense);
        self.gathered = keys;
    }

    #[inline]
    fn slot(&mut self, bucket: usize, codes: &[u32], groups: &mut Groups) -> u32 {
        let (key, cached) = match &self.index {
            LocalIndex::Dense(v) => {
                // Dense keys fit in 20 bits.
                let mut key = bucket;
                for (c, s) in codes.iter().zip(&self.shifts) {
                    key |= (*c as usize) << s;
                }
                (key as u128, v[key])
            }
            LocalIndex::Packed(m) => {
                let mut key = bucket as u128;
                for (c, s) in codes.iter().zip(&self.shifts) {
                    key |= (*c as u128) << s;
                }
                (key, m.get(&key).copied().unwrap_or(u32::MAX))
            }
        };
        if cached != u32::MAX {
            return cached;
        }
        self.new_slot(key, bucket, codes, groups)
    }

    #[cold]
    fn new_slot(&mut self, key: u128, bucket: usize, codes: &[u32], groups: &mut Groups) -> u32 {
        let slot = self.new_group(bucket, codes, groups);
        match &mut self.index {
            LocalIndex::Dense(v) => v[key as usize] = slot,
            LocalIndex::Packed(m) => {
                m.insert(key, slot);
            }
        }
        slot
    }

    /// The global group of a key first seen in this segment: `bucket` and `codes`, each code's
    /// value interned on first sight.
    #[cold]
    fn new_group(&mut self, bucket: usize, codes: &[u32], groups: &mut Groups) -> u32 {
        self.scratch.clear();
        for (d, &c) in self.dims.iter_mut().zip(codes) {
            if d.global[c as usize] == u32::MAX {
                let interner = &mut groups.interners[self.scratch.len()];
                d.global[c as usize] = match (d.column.as_ref(), c) {
                    (Column::String(s), 1..) => match s.dictionary.get(c) {
                        Some(v) => interner.intern_str(v),
                        None => interner.intern(&KeyValue::Null),
                    },
                    _ => interner.intern(d.values.get(c as usize).unwrap_or(&KeyValue::Null)),
                };
            }
            self.scratch.push(d.global[c as usize]);
        }
        let start = if self.granularity == Granularity::All {
            sluice_format::time::ETERNITY_START
        } else {
            self.bucket_starts[bucket]
        };
        groups.slot(start, &self.scratch)
    }
}

fn bits_for(n: u64) -> u32 {
    64 - n.saturating_sub(1).leading_zeros()
}

impl KeyValue {
    /// The value as a result dimension of type `output`.
    pub fn json(&self, output: super::model::OutputType) -> serde_json::Value {
        use super::model::OutputType;
        use serde_json::json;
        match (self, output) {
            (KeyValue::Null, _) => serde_json::Value::Null,
            (KeyValue::Str(s), OutputType::String) => json!(&**s),
            (KeyValue::Long(x), OutputType::String) => json!(x.to_string()),
            (KeyValue::Double(b), OutputType::String) => json!(sluice_format::value::format_double(f64::from_bits(*b))),
            (KeyValue::Long(x), OutputType::Long) => json!(x),
            (KeyValue::Double(b), OutputType::Long) => json!(f64::from_bits(*b) as i64),
            (KeyValue::Long(x), OutputType::Double) => super::json::json_double(*x as f64),
            (KeyValue::Double(b), OutputType::Double) => super::json::json_double(f64::from_bits(*b)),
            (KeyValue::Str(s), OutputType::Long) => {
                sluice_format::value::parse_long(s).map(|x| json!(x)).unwrap_or(serde_json::Value::Null)
            }
            (KeyValue::Str(s), OutputType::Double) => {
                s.trim().parse::<f64>().map(super::json::json_double).unwrap_or(serde_json::Value::Null)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_is_found_borrowed_or_owned_under_one_id() {
        let v = "Jeremy Corbyn";
        assert_eq!(value_hasher().hash_one(KeyRef::Str(v)), value_hasher().hash_one(KeyValue::Str(v.into())));
        let mut interner = Interner::default();
        let null = interner.intern(&KeyValue::Null);
        let id = interner.intern_str(v);
        assert_ne!(id, null);
        assert_eq!(interner.intern(&KeyValue::Str(v.into())), id);
        assert_eq!(interner.intern_str(v), id);
        assert_eq!(interner.values.len(), 2);
        let mut other = Interner::default();
        other.intern_str("another");
        other.intern_str(v);
        assert_eq!(interner.absorb(&other), vec![2, id], "absorbed by their kept hashes");
    }

    #[test]
    fn one_dimension_finds_its_groups_directly_in_the_first_bucket_and_hashed_in_others() {
        let mut groups = Groups::new(1);
        let a = groups.slot(0, &[3]);
        let b = groups.slot(3_600_000, &[3]);
        assert_ne!(a, b, "another bucket is another group");
        assert_eq!(groups.slot(0, &[3]), a);
        assert_eq!(groups.slot(3_600_000, &[3]), b);
        assert_eq!(groups.hashed_slot(0, &[3]), a, "the table knows the direct group too");
        assert_eq!(groups.len(), 2);
    }
}

//! Persisting the incremental index as a hydrant: dictionaries sorted, codes renumbered,
//! rows sorted by (time, dimensions) and written through the segment writer.

use super::dims::{DimColumn, MULTI};
use super::IncrementalIndex;
use crate::segment::{sort_prefix, DimCell, DimLayout, FormatError, SegmentLayout, SegmentWriter, StoredDictionary};
use crate::spec::{Compression, DimensionType};
use crate::value::cmp_opt_f64;
use std::cmp::Ordering;
use std::sync::Arc;

/// A dimension's values in persist order.
enum Sorted<'a> {
    /// Sorted codes per row (0 null, rank + 1); multi-value rows point into `combos`.
    Str {
        codes: Vec<u32>,
        combos: Vec<Vec<u32>>,
    },
    Long(&'a [Option<i64>]),
    Double(&'a [Option<f64>]),
    Float(&'a [Option<f32>]),
}

impl Sorted<'_> {
    fn codes(&self, r: usize) -> &[u32] {
        match self {
            Sorted::Str { codes, combos } => {
                let c = &codes[r];
                if c & MULTI != 0 {
                    &combos[(c & !MULTI) as usize]
                } else {
                    std::slice::from_ref(c)
                }
            }
            _ => &[],
        }
    }

    fn cmp(&self, a: usize, b: usize) -> Ordering {
        match self {
            Sorted::Str { .. } => self.codes(a).cmp(self.codes(b)),
            Sorted::Long(v) => v[a].cmp(&v[b]),
            Sorted::Double(v) => cmp_opt_f64(v[a], v[b]),
            Sorted::Float(v) => cmp_opt_f64(v[a].map(f64::from), v[b].map(f64::from)),
        }
    }
}

impl IncrementalIndex {
    /// The order dimensions are persisted in: declared ones as declared, then discovered ones
    /// by name (so every hydrant of a datasource agrees on the order).
    pub fn dimension_order(&self) -> Vec<usize> {
        let mut declared: Vec<usize> = (0..self.meta.len()).filter(|&i| !self.meta[i].discovered).collect();
        let mut discovered: Vec<usize> = (0..self.meta.len()).filter(|&i| self.meta[i].discovered).collect();
        discovered.sort_by(|&a, &b| self.meta[a].name.cmp(&self.meta[b].name));
        declared.extend(discovered);
        declared
    }

    /// Writes the index as a segment (a hydrant): sorted dictionaries, rows in
    /// (time, dimensions) order, bitmaps per value.
    pub fn persist(&self, compression: Compression) -> Result<Vec<u8>, FormatError> {
        // An `auto` dimension without a value here has no type here: the hydrant leaves it out.
        let null_only = |d: usize| match &self.dims[d] {
            DimColumn::Str(c) => self.meta[d].kind == DimensionType::Auto && c.dict.values().is_empty(),
            _ => false,
        };
        let order: Vec<usize> = self.dimension_order().into_iter().filter(|&d| !null_only(d)).collect();
        let mut layouts = Vec::with_capacity(order.len());
        let mut sorted = Vec::with_capacity(order.len());
        // `auto` dimensions take their type from this hydrant's values.
        let typed: Vec<Option<(DimensionType, DimColumn)>> = (order.iter())
            .map(|&d| match (self.meta[d].kind, &self.dims[d]) {
                (DimensionType::Auto, DimColumn::Str(c)) => {
                    Some(super::auto::typed(c.dict.values(), &c.codes, self.meta[d].multi_value_handling))
                }
                _ => None,
            })
            .collect();
        let kinds: Vec<DimensionType> =
            order.iter().zip(&typed).map(|(&d, t)| t.as_ref().map_or(self.meta[d].kind, |t| t.0)).collect();
        for (i, &d) in order.iter().enumerate() {
            let meta = &self.meta[d];
            let (dictionary, s) = match typed[i].as_ref().map_or(&self.dims[d], |t| &t.1) {
                DimColumn::Str(c) => {
                    let values = c.dict.values();
                    let by_value = ids_by_value(values);
                    let mut rank = vec![0u32; values.len()];
                    for (pos, &id) in by_value.iter().enumerate() {
                        rank[id as usize] = pos as u32 + 1;
                    }
                    let codes = c
                        .codes
                        .iter()
                        .map(|&code| if code & MULTI != 0 || code == 0 { code } else { rank[code as usize - 1] })
                        .collect();
                    let combos = c.combos.iter().map(|ids| ids.iter().map(|&id| rank[id as usize]).collect()).collect();
                    let bytes = by_value.iter().map(|&id| values[id as usize].len()).sum();
                    let mut dictionary = StoredDictionary::with_capacity(by_value.len(), bytes);
                    for &id in &by_value {
                        dictionary
                            .push(&values[id as usize])
                            .map_err(|e| FormatError::new("incremental index", e.to_string()))?;
                    }
                    (dictionary, Sorted::Str { codes, combos })
                }
                DimColumn::Long(v) => (StoredDictionary::default(), Sorted::Long(v)),
                DimColumn::Double(v) => (StoredDictionary::default(), Sorted::Double(v)),
                DimColumn::Float(v) => (StoredDictionary::default(), Sorted::Float(v)),
            };
            layouts.push(DimLayout {
                name: meta.name.clone(),
                kind: kinds[i],
                multi_value_handling: meta.multi_value_handling,
                dictionary: Arc::new(dictionary),
                // A `json` dimension's bitmaps are its path columns'.
                bitmap_index: meta.bitmap_index && kinds[i] != DimensionType::Json,
                nested_path: None,
                incomplete: false,
                auto: meta.kind == DimensionType::Auto,
            });
            sorted.push(s);
        }
        let mut paths = Vec::new();
        for (i, &d) in order.iter().enumerate() {
            let meta = &self.meta[d];
            if kinds[i] == DimensionType::Json {
                let (columns, incomplete) =
                    super::nested::path_columns(&meta.name, i, &layouts[i].dictionary, meta.bitmap_index)?;
                layouts[i].incomplete = incomplete;
                paths.extend(columns);
            }
        }
        let mut perm: Vec<u32> = (0..self.times.len() as u32).collect();
        perm.sort_unstable_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            self.times[a].cmp(&self.times[b]).then_with(|| {
                for s in &sorted {
                    let o = s.cmp(a, b);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            })
        });
        let documents: Vec<usize> = paths.iter().map(|p| layouts[p.parent].dictionary.len()).collect();
        layouts.extend(paths.iter().map(|p| p.layout.clone()));
        let layout = SegmentLayout {
            interval: self.interval,
            dims: layouts,
            metrics: self.config.aggregators.clone(),
            rollup: self.config.rollup,
            query_granularity: self.config.query_granularity,
        };
        // Written a column at a time in the rows' order: a string column without
        // multi-value rows is gathered and appended at once.
        let mut writer = SegmentWriter::new(layout, compression);
        perm.iter().for_each(|&r| writer.push_time(self.times[r as usize]));
        let mut gathered = Vec::with_capacity(perm.len());
        for (i, s) in sorted.iter().enumerate() {
            match s {
                Sorted::Str { codes, combos } if combos.is_empty() => {
                    gathered.clear();
                    gathered.extend(perm.iter().map(|&r| codes[r as usize]));
                    writer.push_codes(i, &gathered);
                }
                s @ Sorted::Str { .. } => {
                    perm.iter().for_each(|&r| writer.push_dim(i, DimCell::Codes(s.codes(r as usize))))
                }
                Sorted::Long(v) => perm.iter().for_each(|&r| writer.push_dim(i, DimCell::Long(v[r as usize]))),
                Sorted::Double(v) => perm.iter().for_each(|&r| writer.push_dim(i, DimCell::Double(v[r as usize]))),
                Sorted::Float(v) => {
                    perm.iter().for_each(|&r| writer.push_dim(i, DimCell::Double(v[r as usize].map(f64::from))))
                }
            }
        }
        for (j, path) in paths.iter().enumerate() {
            let Sorted::Str { codes, .. } = &sorted[path.parent] else { continue };
            let path_codes = path.codes(perm.iter().map(|&r| codes[r as usize]), documents[j]);
            writer.push_codes(sorted.len() + j, &path_codes);
        }
        for (i, cells) in self.metrics.iter().enumerate() {
            perm.iter().for_each(|&r| writer.push_metric(i, &cells[r as usize]));
        }
        writer.finish()
    }
}

/// The ids of distinct `values` in the values' byte order. Sorted by each value's first eight
/// bytes held beside its id, the strings themselves compared only where those tie: most
/// comparisons stay in one array rather than following two pointers to compare two strings.
fn ids_by_value(values: &[Box<str>]) -> Vec<u32> {
    let mut keyed: Vec<(u64, u32)> = values.iter().enumerate().map(|(id, v)| (sort_prefix(v), id as u32)).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| values[a.1 as usize].cmp(&values[b.1 as usize])));
    keyed.into_iter().map(|(_, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::ids_by_value;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ids_come_in_the_values_byte_order(set in proptest::collection::btree_set(
            prop_oneof![".{0,12}", "[ab\u{0}]{0,10}", "prefix-[a-c\u{0}]{0,4}"], 0..200)
        ) {
            let values: Vec<Box<str>> = set.iter().rev().map(|s| s.as_str().into()).collect();
            let sorted: Vec<&str> = ids_by_value(&values).iter().map(|&id| &*values[id as usize]).collect();
            let expected: Vec<&str> = set.iter().map(String::as_str).collect();
            prop_assert_eq!(sorted, expected);
        }
    }
}

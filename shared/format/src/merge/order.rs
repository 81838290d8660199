//! The first merge pass: the merged row order, from `__time` with the dimensions read only
//! where times tie (and, with rollup, to find rows that combine).

use crate::segment::access::{Columns, Key};
use crate::segment::FormatError;
use std::cmp::Ordering;

const ROW_BITS: u32 = 40;

/// Input rows in merged order, grouped into output rows.
pub struct MergedOrder {
    /// `input << 40 | row` per input row, in merged order.
    entries: Vec<u64>,
    /// With rollup: the index in `entries` where each output row starts.
    starts: Option<Vec<u32>>,
}

impl MergedOrder {
    /// Number of output rows.
    pub fn num_rows(&self) -> usize {
        self.starts.as_ref().map_or(self.entries.len(), Vec::len)
    }

    /// The input rows combined into output row `o`, as (input, row) pairs.
    pub fn rows_of(&self, o: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let range = match &self.starts {
            None => o..o + 1,
            Some(s) => s[o] as usize..s.get(o + 1).map_or(self.entries.len(), |&e| e as usize),
        };
        self.entries[range].iter().map(|&e| ((e >> ROW_BITS) as usize, (e & ((1 << ROW_BITS) - 1)) as usize))
    }

    /// The first input row of output row `o`.
    pub fn first_of(&self, o: usize) -> (usize, usize) {
        let e = match &self.starts {
            None => self.entries[o],
            Some(s) => self.entries[s[o] as usize],
        };
        ((e >> ROW_BITS) as usize, (e & ((1 << ROW_BITS) - 1)) as usize)
    }
}

/// An owned copy of one dimension key (the previous output row's, for rollup).
#[derive(Default)]
struct OwnedKey {
    codes: Vec<u32>,
    number: Option<u64>,
    is_string: bool,
}

impl OwnedKey {
    fn set(&mut self, k: &Key<'_>) {
        self.codes.clear();
        self.is_string = matches!(k, Key::Code(_) | Key::Codes(_));
        self.codes.extend_from_slice(k.codes());
        self.number = match k {
            Key::Long(v) => v.map(|x| x as u64),
            Key::Double(v) => v.map(f64::to_bits),
            _ => None,
        };
    }

    fn equals(&self, k: &Key<'_>) -> bool {
        match k {
            Key::Code(_) | Key::Codes(_) => self.is_string && self.codes == k.codes(),
            Key::Long(v) => self.number == v.map(|x| x as u64),
            Key::Double(v) => self.number == v.map(f64::to_bits),
        }
    }
}

fn two<T>(v: &mut [T], i: usize, j: usize) -> (&mut T, &mut T) {
    debug_assert_ne!(i, j);
    if i < j {
        let (a, b) = v.split_at_mut(j);
        (&mut a[i], &mut b[0])
    } else {
        let (a, b) = v.split_at_mut(i);
        (&mut b[0], &mut a[j])
    }
}

type Failed = (usize, FormatError);

fn cmp_dims(
    cols: &mut [Columns<'_>],
    (i, ri): (usize, usize),
    (j, rj): (usize, usize),
    strings: &[bool],
) -> Result<Ordering, Failed> {
    let (ci, cj) = two(cols, i, j);
    for (d, &s) in strings.iter().enumerate() {
        let ki = ci.dims[d].key(ri, s).map_err(|e| (i, e))?;
        let kj = cj.dims[d].key(rj, s).map_err(|e| (j, e))?;
        match ki.compare(&kj) {
            Ordering::Equal => continue,
            o => return Ok(o),
        }
    }
    Ok(Ordering::Equal)
}

/// Whether input `a`'s next row comes before input `b`'s: by time, then dimensions, then input
/// number (a total order, so the merged order does not depend on how the inputs are visited).
fn before(
    cols: &mut [Columns<'_>],
    (time, row): (&[i64], &[usize]),
    strings: &[bool],
    a: usize,
    b: usize,
) -> Result<bool, Failed> {
    Ok(match time[a].cmp(&time[b]) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => match cmp_dims(cols, (a, row[a]), (b, row[b]), strings)? {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => a < b,
        },
    })
}

/// Restores the heap of inputs (each before its children) below `at`.
fn sift_down(
    heap: &mut [usize],
    mut at: usize,
    cols: &mut [Columns<'_>],
    next: (&[i64], &[usize]),
    strings: &[bool],
) -> Result<(), Failed> {
    loop {
        let left = 2 * at + 1;
        if left >= heap.len() {
            return Ok(());
        }
        let right = left + 1;
        let child =
            if right < heap.len() && before(cols, next, strings, heap[right], heap[left])? { right } else { left };
        if !before(cols, next, strings, heap[child], heap[at])? {
            return Ok(());
        }
        heap.swap(child, at);
        at = child;
    }
}

/// Computes the merged order of the inputs' rows (each input is sorted already): a k-way merge
/// through a heap of the inputs by their next row, so a row costs O(log k) comparisons however
/// many inputs there are (and one or two while the same input keeps coming first, as inputs
/// of consecutive time ranges do).
pub fn merged_order(cols: &mut [Columns<'_>], strings: &[bool], rollup: bool) -> Result<MergedOrder, Failed> {
    let k = cols.len();
    let total: usize = cols.iter().map(|c| c.rows).sum();
    let mut row = vec![0usize; k];
    let mut time = vec![0i64; k];
    let mut heap: Vec<usize> = (0..k).filter(|&i| cols[i].rows > 0).collect();
    for &i in &heap {
        time[i] = cols[i].times.get(0).map_err(|e| (i, e))?;
    }
    for at in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, at, cols, (&time, &row), strings)?;
    }
    let mut entries = Vec::with_capacity(total);
    let mut starts = rollup.then(Vec::new);
    let mut prev: Vec<OwnedKey> = strings.iter().map(|_| OwnedKey::default()).collect();
    let mut prev_time = None;
    while let Some(&best) = heap.first() {
        let r = row[best];
        entries.push(((best as u64) << ROW_BITS) | r as u64);
        if let Some(starts) = &mut starts {
            let mut same = prev_time == Some(time[best]);
            let c = &mut cols[best];
            for (d, &s) in strings.iter().enumerate() {
                let key = c.dims[d].key(r, s).map_err(|e| (best, e))?;
                if same && !prev[d].equals(&key) {
                    same = false;
                }
                if !same {
                    prev[d].set(&key);
                }
            }
            if !same {
                starts.push((entries.len() - 1) as u32);
                prev_time = Some(time[best]);
            }
        }
        row[best] += 1;
        if row[best] < cols[best].rows {
            time[best] = cols[best].times.get(row[best]).map_err(|e| (best, e))?;
        } else {
            heap.swap_remove(0);
        }
        sift_down(&mut heap, 0, cols, (&time, &row), strings)?;
    }
    Ok(MergedOrder { entries, starts })
}

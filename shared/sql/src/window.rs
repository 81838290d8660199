//! Window functions over a query's rows, as Druid computes them after its GROUP BY (its
//! window operator): rows split by the PARTITION BY values, ordered by the ORDER BY keys, and
//! each function computed per row over its partition or its frame.
//!
//! Frames are ROWS with `UNBOUNDED`, `n PRECEDING`, `CURRENT ROW`, `n FOLLOWING` bounds, or
//! RANGE with unbounded and current-row bounds (a current row's peers, the rows with equal
//! ORDER BY keys, are in its frame). Without ORDER BY the frame is the partition; with it, the
//! default is RANGE from the partition's start to the current row and its peers.

use crate::types::{Column, SqlType};
use crate::SqlError;
use serde_json::{json, Value};
use sluice_format::time::parse_iso_instant;
use std::cmp::Ordering;
use std::time::Instant;

/// Most row visits the window functions of one query may make together: each function's sort
/// of its rows (rows times their log), and its frames (rows times frame width, for MIN and MAX
/// over a frame that slides, and SUM or AVG over one that neither starts nor ends a partition).
pub const MAX_WINDOW_WORK: u64 = 200_000_000;
/// Most bytes the values the window functions of one query compute may take together in
/// memory, each counted as [`VALUE_BYTES`] and its text's length: four times a subquery's
/// bytes (64 functions over 39,244 rows take 280 MB or so).
pub const MAX_WINDOW_BYTES: usize = 4 * crate::inline::MAX_INLINE_BYTES;
/// Bytes a computed value takes in the rows it is added to besides its text: the value and its
/// field's name in the row's map.
pub const VALUE_BYTES: usize = 112;

/// A window function.
#[derive(Debug, Clone, PartialEq)]
pub enum Function {
    /// `ROW_NUMBER()`
    RowNumber,
    /// `RANK()`
    Rank,
    /// `DENSE_RANK()`
    DenseRank,
    /// `PERCENT_RANK()`: (rank - 1) / (rows - 1), 0 for one row.
    PercentRank,
    /// `CUME_DIST()`: rows up to the current row's last peer over the rows.
    CumeDist,
    /// `NTILE(n)`
    Ntile(u64),
    /// `LAG(x[, offset[, default]])`
    Lag(u64, Value),
    /// `LEAD(x[, offset[, default]])`
    Lead(u64, Value),
    /// `FIRST_VALUE(x)` over the frame.
    FirstValue,
    /// `LAST_VALUE(x)` over the frame.
    LastValue,
    /// `SUM(x)` over the frame.
    Sum,
    /// `COUNT(x)` (`COUNT(*)`: the argument is absent) over the frame.
    Count,
    /// `MIN(x)` over the frame.
    Min,
    /// `MAX(x)` over the frame.
    Max,
    /// `AVG(x)` over the frame.
    Avg,
}

/// One end of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The partition's first row.
    UnboundedPreceding,
    /// `n` rows before.
    Preceding(u64),
    /// The current row (in RANGE, its first or last peer).
    CurrentRow,
    /// `n` rows after.
    Following(u64),
    /// The partition's last row.
    UnboundedFollowing,
}

/// A frame: which rows of its partition a row's function reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// ROWS (true) or RANGE.
    pub rows: bool,
    /// The first row.
    pub start: Bound,
    /// The last row.
    pub end: Bound,
}

impl Frame {
    /// The whole partition.
    pub const PARTITION: Frame =
        Frame { rows: false, start: Bound::UnboundedPreceding, end: Bound::UnboundedFollowing };
    /// The partition's start to the current row and its peers.
    pub const RUNNING: Frame = Frame { rows: false, start: Bound::UnboundedPreceding, end: Bound::CurrentRow };
}

/// One window function call over the rows: its argument column, its partition and order keys
/// (columns, descending or not) and its frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The function.
    pub function: Function,
    /// The column it reads, if any.
    pub arg: Option<usize>,
    /// PARTITION BY columns.
    pub partition: Vec<usize>,
    /// ORDER BY columns, descending when true.
    pub order: Vec<(usize, bool)>,
    /// The frame.
    pub frame: Frame,
}

/// Orders two values as Druid's groupBy orders them: nulls first, numbers by value, then text.
pub fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Less,
        (_, Value::Null) => Ordering::Greater,
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => x.as_f64().unwrap_or(0.0).partial_cmp(&y.as_f64().unwrap_or(0.0)).unwrap_or(Ordering::Equal),
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        _ => a.to_string().cmp(&b.to_string()),
    }
}

/// Window functions whose sorts and frames would visit more rows than [`MAX_WINDOW_WORK`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a window {function} visits more than {MAX_WINDOW_WORK} rows")]
pub struct TooMuchWork {
    /// The functions: `SUM or AVG`, `MIN or MAX`.
    pub function: &'static str,
}

/// The value of `call` for each of `rows`, in row order.
#[cfg(test)]
pub fn compute(rows: &[Vec<Value>], call: &Call) -> Result<Vec<Value>, TooMuchWork> {
    compute_within(rows, call, &mut 0)
}

/// [`compute`], adding its row visits to `work`, which may not pass [`MAX_WINDOW_WORK`].
fn compute_within(rows: &[Vec<Value>], call: &Call, work: &mut u64) -> Result<Vec<Value>, TooMuchWork> {
    let n = rows.len() as u64;
    *work += n * u64::from(u64::BITS - n.leading_zeros());
    if *work > MAX_WINDOW_WORK {
        return Err(TooMuchWork { function: "sort (PARTITION BY and ORDER BY)" });
    }
    let cell = |r: usize, c: usize| rows[r].get(c).unwrap_or(&Value::Null);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let key_order = |a: &usize, b: &usize| {
        for &p in &call.partition {
            match compare(cell(*a, p), cell(*b, p)) {
                Ordering::Equal => {}
                other => return other,
            }
        }
        for &(o, desc) in &call.order {
            let c = compare(cell(*a, o), cell(*b, o));
            match if desc { c.reverse() } else { c } {
                Ordering::Equal => {}
                other => return other,
            }
        }
        Ordering::Equal
    };
    order.sort_by(key_order);
    let same_partition = |a: usize, b: usize| call.partition.iter().all(|&p| cell(a, p) == cell(b, p));
    let peers =
        |a: usize, b: usize| call.order.iter().all(|&(o, _)| compare(cell(a, o), cell(b, o)) == Ordering::Equal);
    let mut out = vec![Value::Null; rows.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && same_partition(order[start], order[end]) {
            end += 1;
        }
        partition(&order[start..end], call, rows, &peers, &mut out, work)?;
        start = end;
    }
    Ok(out)
}

/// Fills `out` for one partition, its rows (`part`) in window order.
fn partition(
    part: &[usize],
    call: &Call,
    rows: &[Vec<Value>],
    peers: &dyn Fn(usize, usize) -> bool,
    out: &mut [Value],
    work: &mut u64,
) -> Result<(), TooMuchWork> {
    let n = part.len();
    // Each row's peer group: the first and one past the last index of its equal keys.
    let mut group = vec![(0, 0); n];
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && peers(part[i], part[j]) {
            j += 1;
        }
        for g in group.iter_mut().take(j).skip(i) {
            *g = (i, j);
        }
        i = j;
    }
    let arg = |i: usize| call.arg.and_then(|c| rows[part[i]].get(c)).cloned().unwrap_or(Value::Null);
    let set = |out: &mut [Value], i: usize, v: Value| out[part[i]] = v;
    match &call.function {
        Function::RowNumber => (0..n).for_each(|i| set(out, i, json!(i + 1))),
        Function::Rank => (0..n).for_each(|i| set(out, i, json!(group[i].0 + 1))),
        Function::DenseRank => {
            let mut dense = 0;
            for (i, &(first, _)) in group.iter().enumerate() {
                // A new peer group starts at its first row.
                if first == i {
                    dense += 1;
                }
                set(out, i, json!(dense));
            }
        }
        Function::PercentRank => {
            (0..n).for_each(|i| set(out, i, json!(if n > 1 { group[i].0 as f64 / (n - 1) as f64 } else { 0.0 })))
        }
        Function::CumeDist => (0..n).for_each(|i| set(out, i, json!(group[i].1 as f64 / n as f64))),
        Function::Ntile(tiles) => {
            let tiles = (*tiles).max(1) as usize;
            let (size, extra) = (n / tiles, n % tiles);
            let mut i = 0;
            for tile in 0..tiles.min(n) {
                let rows_in = size + usize::from(tile < extra);
                for _ in 0..rows_in {
                    set(out, i, json!(tile + 1));
                    i += 1;
                }
            }
        }
        Function::Lag(offset, default) | Function::Lead(offset, default) => {
            let back = matches!(call.function, Function::Lag(..));
            let offset = usize::try_from(*offset).unwrap_or(usize::MAX);
            for i in 0..n {
                let at = if back { i.checked_sub(offset) } else { i.checked_add(offset).filter(|j| *j < n) };
                set(out, i, at.map(arg).unwrap_or_else(|| default.clone()));
            }
        }
        _ => framed(n, call, &group, &arg, &mut |i, v| set(out, i, v), work)?,
    }
    Ok(())
}

/// The first and one past the last index of row `i`'s frame.
fn frame_of(i: usize, n: usize, frame: &Frame, group: &[(usize, usize)]) -> (usize, usize) {
    let start = match frame.start {
        Bound::UnboundedPreceding => 0,
        Bound::Preceding(k) => i.saturating_sub(usize::try_from(k).unwrap_or(usize::MAX)),
        Bound::CurrentRow if frame.rows => i,
        Bound::CurrentRow => group[i].0,
        Bound::Following(k) => i.saturating_add(usize::try_from(k).unwrap_or(usize::MAX)).min(n),
        Bound::UnboundedFollowing => n,
    };
    let end = match frame.end {
        Bound::UnboundedPreceding => 0,
        Bound::Preceding(k) => (i + 1).saturating_sub(usize::try_from(k).unwrap_or(usize::MAX)),
        Bound::CurrentRow if frame.rows => i + 1,
        Bound::CurrentRow => group[i].1,
        Bound::Following(k) => i.saturating_add(usize::try_from(k).unwrap_or(usize::MAX)).saturating_add(1).min(n),
        Bound::UnboundedFollowing => n,
    };
    (start, end.max(start))
}

/// Aggregates and first/last values over each row's frame: sums, counts and averages from
/// prefix sums, minimums and maximums by visiting the frame (bounded by [`MAX_WINDOW_WORK`]).
fn framed(
    n: usize,
    call: &Call,
    group: &[(usize, usize)],
    arg: &dyn Fn(usize) -> Value,
    set: &mut dyn FnMut(usize, Value),
    work: &mut u64,
) -> Result<(), TooMuchWork> {
    let values: Vec<Value> = (0..n).map(arg).collect();
    let integral = values.iter().all(|v| v.is_null() || v.as_i64().is_some());
    // Prefix sums of the values and of the non-null count.
    let (mut sums, mut counts) = (vec![0f64; n + 1], vec![0u64; n + 1]);
    let mut isums = vec![0i64; n + 1];
    for (i, v) in values.iter().enumerate() {
        let counted = call.arg.is_none() || !v.is_null();
        counts[i + 1] = counts[i] + u64::from(counted);
        sums[i + 1] = sums[i] + v.as_f64().unwrap_or(0.0);
        isums[i + 1] = isums[i].wrapping_add(v.as_i64().unwrap_or(0));
    }
    let mut suffix = vec![0f64; n + 1];
    for i in (0..n).rev() {
        suffix[i] = suffix[i + 1] + values[i].as_f64().unwrap_or(0.0);
    }
    for i in 0..n {
        let (a, b) = frame_of(i, n, &call.frame, group);
        let count = counts[b] - counts[a];
        let v = match call.function {
            Function::Count => json!(count),
            Function::Sum if count == 0 => Value::Null,
            Function::Sum if integral => json!(isums[b].wrapping_sub(isums[a])),
            Function::Avg if count == 0 => Value::Null,
            // A frame from the partition's start (or to its end) is a prefix (suffix) sum, as
            // exact as adding in order; another is added row by row, so that no large value
            // outside it cancels its sum.
            Function::Sum | Function::Avg => {
                let sum = if a == 0 {
                    sums[b]
                } else if b == n {
                    suffix[a]
                } else {
                    *work += (b - a) as u64;
                    if *work > MAX_WINDOW_WORK {
                        return Err(TooMuchWork { function: "SUM or AVG" });
                    }
                    values[a..b].iter().filter_map(Value::as_f64).sum()
                };
                if call.function == Function::Sum {
                    json!(sum)
                } else {
                    json!(sum / count as f64)
                }
            }
            Function::FirstValue if a < b => values[a].clone(),
            Function::LastValue if a < b => values[b - 1].clone(),
            Function::FirstValue | Function::LastValue => Value::Null,
            Function::Min | Function::Max => {
                *work += (b - a) as u64;
                if *work > MAX_WINDOW_WORK {
                    return Err(TooMuchWork { function: "MIN or MAX" });
                }
                let want = if call.function == Function::Min { Ordering::Less } else { Ordering::Greater };
                values[a..b].iter().filter(|v| !v.is_null()).fold(Value::Null, |best, v| {
                    if best.is_null() || compare(v, &best) == want {
                        v.clone()
                    } else {
                        best
                    }
                })
            }
            _ => unreachable!("ranking and offset functions are computed per partition"),
        };
        set(i, v);
    }
    Ok(())
}

/// The rows of a window stage as a scan answer (`[{"events": [...]}]`) for the select list
/// to read: each row's inner columns (`columns`, TIMESTAMPs as milliseconds) and the value of
/// each of `calls` (`__w<n>`). CPU-bound: the calls together are bounded by [`MAX_WINDOW_WORK`]
/// and [`MAX_WINDOW_BYTES`], and stop at `deadline` (the query's `timeout_ms`); an async caller
/// runs it off its runtime.
pub fn answer(
    columns: &[Column],
    calls: &[Call],
    mut rows: Vec<Vec<Value>>,
    deadline: Instant,
    timeout_ms: u64,
) -> Result<Value, SqlError> {
    for (c, column) in columns.iter().enumerate() {
        if column.ty == SqlType::Timestamp {
            for row in &mut rows {
                if let Some(t) = row.get(c).and_then(Value::as_str).and_then(|s| parse_iso_instant(s).ok()) {
                    row[c] = json!(t);
                }
            }
        }
    }
    let mut values = Vec::with_capacity(calls.len());
    let (mut work, mut num_bytes) = (0u64, 0usize);
    for call in calls {
        if Instant::now() >= deadline {
            return Err(SqlError::Query(sluice_query::QueryError::Timeout(timeout_ms)));
        }
        let computed = compute_within(&rows, call, &mut work).map_err(SqlError::unsupported)?;
        num_bytes += computed.iter().map(|v| VALUE_BYTES + v.as_str().map_or(0, str::len)).sum::<usize>();
        if num_bytes > MAX_WINDOW_BYTES {
            return Err(SqlError::unsupported(format!(
                "window functions whose values pass {MAX_WINDOW_BYTES} bytes over {} rows (give the query a \
                 narrower WHERE or fewer window functions)",
                rows.len()
            )));
        }
        values.push(computed);
    }
    let events: Vec<Value> = (rows.into_iter().enumerate())
        .map(|(r, row)| {
            let mut fields: serde_json::Map<String, Value> =
                columns.iter().zip(row).map(|(c, v)| (c.name.clone(), v)).collect();
            for (n, v) in values.iter_mut().enumerate() {
                fields.insert(format!("__w{n}"), std::mem::take(&mut v[r]));
            }
            Value::Object(fields)
        })
        .collect();
    Ok(json!([{"events": events}]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of (channel, value).
    fn rows() -> Vec<Vec<Value>> {
        [("a", 3), ("a", 1), ("a", 3), ("b", 5), ("a", 7), ("b", 2)]
            .iter()
            .map(|(c, v)| vec![json!(c), json!(v)])
            .collect()
    }

    fn run(function: Function, frame: Frame, order: bool) -> Vec<Value> {
        let call = Call {
            function,
            arg: Some(1),
            partition: vec![0],
            order: if order { vec![(1, false)] } else { Vec::new() },
            frame,
        };
        compute(&rows(), &call).expect("computes")
    }

    #[test]
    fn ranks_count_peers_as_sql_does() {
        // Partition a ordered by value: 1, 3, 3, 7; partition b: 2, 5.
        assert_eq!(run(Function::Rank, Frame::RUNNING, true), [2, 1, 2, 2, 4, 1].map(|v| json!(v)));
        assert_eq!(run(Function::DenseRank, Frame::RUNNING, true), [2, 1, 2, 2, 3, 1].map(|v| json!(v)));
        assert_eq!(run(Function::CumeDist, Frame::RUNNING, true)[0], json!(0.75));
        assert_eq!(run(Function::PercentRank, Frame::RUNNING, true)[4], json!(1.0));
        // Tiles of 2, 1 and 1 rows over a's four; peers keep their row order.
        assert_eq!(run(Function::Ntile(3), Frame::RUNNING, true), [1, 1, 2, 2, 3, 1].map(|v| json!(v)));
    }

    #[test]
    fn running_sums_include_peers_and_rows_frames_do_not() {
        assert_eq!(run(Function::Sum, Frame::RUNNING, true), [7, 1, 7, 7, 14, 2].map(|v| json!(v)));
        let rows_frame = Frame { rows: true, start: Bound::UnboundedPreceding, end: Bound::CurrentRow };
        let sums = run(Function::Sum, rows_frame, true);
        assert!(sums[0] != sums[2] && (sums[0] == json!(4) || sums[0] == json!(7)), "{sums:?}");
        assert_eq!(run(Function::Sum, Frame::PARTITION, false), [14, 14, 14, 7, 14, 7].map(|v| json!(v)));
        let sliding = Frame { rows: true, start: Bound::Preceding(1), end: Bound::Following(1) };
        assert_eq!(run(Function::Max, sliding, true)[4], json!(7));
        assert_eq!(run(Function::Min, sliding, true)[1], json!(1));
    }

    #[test]
    fn lag_and_lead_read_neighbours_or_the_default() {
        assert_eq!(run(Function::Lag(1, Value::Null), Frame::RUNNING, true)[1], Value::Null);
        assert_eq!(run(Function::Lead(1, json!(0)), Frame::RUNNING, true)[4], json!(0));
        assert_eq!(run(Function::Lead(1, json!(0)), Frame::RUNNING, true)[5], json!(5));
    }

    #[test]
    fn large_integers_order_exactly_and_a_sliding_sum_is_not_cancelled() {
        let big = 1i64 << 60;
        let rows: Vec<Vec<Value>> = [big + 1, big, big + 2].iter().map(|v| vec![json!("p"), json!(v)]).collect();
        let rank = Call {
            function: Function::Rank,
            arg: None,
            partition: vec![0],
            order: vec![(1, false)],
            frame: Frame::RUNNING,
        };
        assert_eq!(compute(&rows, &rank).expect("computes"), [2, 1, 3].map(|v| json!(v)));
        let rows: Vec<Vec<Value>> =
            [1e17, 1.5, 1.5].iter().enumerate().map(|(i, v)| vec![json!(i), json!(v)]).collect();
        let sliding = Frame { rows: true, start: Bound::Preceding(1), end: Bound::CurrentRow };
        let sum =
            Call { function: Function::Sum, arg: Some(1), partition: vec![], order: vec![(0, false)], frame: sliding };
        assert_eq!(compute(&rows, &sum).expect("computes")[2], json!(3.0));
    }
}

//! The second merge pass: each output column gathered from the inputs in merged order and
//! written shard by shard.

use super::order::MergedOrder;
use super::MergeOptions;
use crate::segment::access::{Columns, Dim, Key};
use crate::segment::{DimCell, FormatError, SegmentLayout, SegmentWriter};

type Failed = (Option<usize>, FormatError);

/// Writes the merged rows as segments of at most `max_rows_per_segment` rows.
pub fn write_shards(
    order: &MergedOrder,
    cols: &mut [Columns<'_>],
    layout: &SegmentLayout,
    strings: &[bool],
    options: &MergeOptions,
) -> Result<Vec<Vec<u8>>, Failed> {
    let total = order.num_rows();
    let max = usize::try_from(options.max_rows_per_segment).unwrap_or(usize::MAX).max(1);
    let mut out = Vec::new();
    let mut start = 0usize;
    let mut codes: Vec<u32> = Vec::new();
    loop {
        let end = start.saturating_add(max).min(total);
        let mut w = SegmentWriter::new(layout.clone(), options.compression);
        for o in start..end {
            let (i, r) = order.first_of(o);
            w.push_time(cols[i].times.get(r).map_err(|e| (Some(i), e))?);
        }
        for (d, &s) in strings.iter().enumerate() {
            // Single-valued strings in every input (the usual case): codes copied, no key.
            if s && cols.iter().all(|c| matches!(c.dims[d], Dim::Single(_) | Dim::Absent)) {
                codes.clear();
                for o in start..end {
                    let (i, r) = order.first_of(o);
                    codes.push(match &mut cols[i].dims[d] {
                        Dim::Single(c) => c.get(r).map_err(|e| (Some(i), e))?,
                        _ => 0,
                    });
                }
                w.push_codes(d, &codes);
                continue;
            }
            for o in start..end {
                let (i, r) = order.first_of(o);
                let key = cols[i].dims[d].key(r, s).map_err(|e| (Some(i), e))?;
                let one;
                let cell = match key {
                    Key::Code(c) => {
                        one = [c];
                        DimCell::Codes(&one)
                    }
                    Key::Codes(c) => DimCell::Codes(c),
                    Key::Long(v) => DimCell::Long(v),
                    Key::Double(v) => DimCell::Double(v),
                };
                w.push_dim(d, cell);
            }
        }
        for (m, agg) in layout.metrics.iter().enumerate() {
            for o in start..end {
                let mut rows = order.rows_of(o);
                let (i, r) = rows.next().unwrap_or((0, 0));
                let mut cell = cols[i].metrics[m].cell(r).map_err(|e| (Some(i), e))?;
                for (i, r) in rows {
                    let other = cols[i].metrics[m].cell(r).map_err(|e| (Some(i), e))?;
                    agg.combine(&mut cell, &other);
                }
                w.push_metric(m, &cell);
            }
        }
        out.push(w.finish().map_err(|e| (None, e))?);
        start = end;
        if start >= total {
            break;
        }
    }
    Ok(out)
}

//! Bytes a query reads per row: its header and directory, then the parts of the columns it
//! names, as a query worker reads a large segment (`sluice_query::source::read_parts`), summed
//! over the benchmark's segments. `sluice-sim`'s query model takes its bytes per row from here.

use sluice_query::{Query, QuerySegment};

/// Bytes of the columns `query` names (with each segment's header and directory) per row of
/// `segments`; every byte of the segments when the query names no columns.
pub(super) fn per_row(query: &Query, segments: &[QuerySegment]) -> f64 {
    let columns = query.columns();
    let (mut bytes, mut rows) = (0u64, 0u64);
    for s in segments {
        let segment = &s.segment;
        rows += segment.num_rows() as u64;
        let Some(columns) = &columns else {
            bytes += segment.size() as u64;
            continue;
        };
        let header = segment.as_bytes();
        let dir_len = u64::from(u32::from_le_bytes([header[12], header[13], header[14], header[15]]));
        bytes += sluice_format::segment::directory::HEADER_LEN as u64 + dir_len;
        bytes += segment
            .directory()
            .columns
            .iter()
            .filter(|c| columns.contains(&c.name))
            .flat_map(|c| c.parts.values())
            .map(|p| p.length)
            .sum::<u64>();
    }
    bytes as f64 / rows.max(1) as f64
}

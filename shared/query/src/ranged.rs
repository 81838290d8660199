//! Reading a segment by the parts a query uses, with ranged reads, as a query worker reads a
//! segment too large to download whole:
//!
//! ```text
//!  GET 0..64 KiB        header, directory (most fit) and whatever data follows them
//!  [GET ..data start]   the rest of a directory that did not fit
//!  GET range, range...  the parts the query reads, past the first GET, gaps under 1 MiB read
//!                       through, pieces of at most 16 MiB, four at once
//! ```
//!
//! On S3 a GET costs a first byte's latency and $0.0004 per 1,000, as much as about a megabyte
//! of transfer, and 8–16 MB byte ranges reach a connection's throughput ("Performance
//! guidelines for Amazon S3"), hence the gap and the piece. A string column's bitmap indexes
//! are read only when one of the query's filters names the column and they take fewer bytes
//! than its ids ([`ReadPlan::for_segment`]): otherwise it is read by its ids and dictionary
//! (a filter on it scans its ids), and the segment is handed to the engine as if written
//! without those indexes ([`Segment::without_bitmaps`]). Parts not read stay zeros, which the
//! query never touches (a part read by mistake fails its checksum, naming it).

use crate::{Query, QueryError};
use futures::StreamExt;
use sluice_format::segment::directory::{HEADER_LEN, MAX_DIRECTORY_BYTES};
use sluice_format::segment::{Directory, FormatError, Segment};
use sluice_store::storage::ObjectStore;
use std::collections::BTreeSet;
use std::ops::Range;

/// Bytes of the first GET: the header, the directory and what follows.
pub const PREFIX_BYTES: u64 = 64 << 10;
/// Gaps between needed byte ranges smaller than this are read rather than skipped.
pub const COALESCE_BYTES: u64 = 1 << 20;
/// Largest byte range of one GET.
pub const RANGE_BYTES: u64 = 16 << 20;
/// GETs of one segment in flight at once.
const PARALLEL_RANGES: usize = 4;

/// What of a segment a query reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadPlan {
    /// The stored columns it reads.
    pub columns: BTreeSet<String>,
    /// Of those, the columns whose bitmap indexes a filter may use.
    pub indexed: BTreeSet<String>,
}

impl ReadPlan {
    /// What `query` reads: `None` for every byte (a query naming no columns).
    pub fn of(query: &Query) -> Option<Self> {
        Some(Self { columns: query.columns()?, indexed: query.filtered_columns() })
    }

    /// The header and the directory only.
    pub fn directory_only() -> Self {
        Self::default()
    }

    /// `columns`, each with its bitmap indexes.
    pub fn indexed(columns: BTreeSet<String>) -> Self {
        Self { indexed: columns.clone(), columns }
    }

    fn reads(&self, column: &str, part: &str) -> bool {
        self.columns.contains(column) && (part != "bitmaps" || self.indexed.contains(column))
    }

    /// This plan for one segment with `directory`: a filtered column whose bitmaps take more
    /// bytes than its ids (and offsets) is filtered by its ids, which the plan reads anyway,
    /// instead of by its bitmaps. Over S3 the bytes are what a read costs; on a local disk a
    /// bitmap's head start over a scan of ids matters more, so only ranged reads do this.
    pub fn for_segment(&self, directory: &Directory) -> ReadPlan {
        let bytes =
            |c: &sluice_format::segment::directory::ColumnEntry, part: &str| c.parts.get(part).map_or(0, |p| p.length);
        let mut indexed = self.indexed.clone();
        let mut columns = self.columns.clone();
        // A `json` column read is read with its path columns, which filters on its paths use.
        for c in &directory.columns {
            if c.nested_path.as_ref().is_some_and(|p| self.columns.contains(&p.column)) {
                columns.insert(c.name.clone());
                indexed.insert(c.name.clone());
            }
        }
        let larger = |c: &&sluice_format::segment::ColumnEntry| {
            indexed.contains(&c.name) && bytes(c, "bitmaps") > bytes(c, "ids") + bytes(c, "offsets")
        };
        let by_ids: Vec<String> = directory.columns.iter().filter(larger).map(|c| c.name.clone()).collect();
        by_ids.iter().for_each(|name| {
            indexed.remove(name);
        });
        ReadPlan { columns, indexed }
    }
}

/// The GETs `plan` makes of a segment of `size` bytes with `directory`, its data starting at
/// `data_start`, after the first `have` bytes: sorted, gaps under [`COALESCE_BYTES`] merged,
/// each at most [`RANGE_BYTES`].
pub fn ranges(directory: &Directory, data_start: u64, size: u64, have: u64, plan: &ReadPlan) -> Vec<Range<u64>> {
    merged(directory, data_start, size, have, plan, COALESCE_BYTES).into_iter().flat_map(pieces).collect()
}

/// The byte ranges `plan` needs after `have`, sorted, those less than `gap` apart merged.
fn merged(directory: &Directory, data_start: u64, size: u64, have: u64, plan: &ReadPlan, gap: u64) -> Vec<Range<u64>> {
    let mut wanted: Vec<Range<u64>> = directory
        .columns
        .iter()
        .flat_map(|c| c.parts.iter().filter(|(part, _)| plan.reads(&c.name, part)).map(|(_, p)| p))
        .map(|p| {
            let start = data_start.saturating_add(p.offset).min(size);
            start.max(have)..start.saturating_add(p.length).min(size)
        })
        .filter(|r| r.start < r.end)
        .collect();
    wanted.sort_unstable_by_key(|r| r.start);
    let mut merged: Vec<Range<u64>> = Vec::new();
    for r in wanted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// `r` cut into pieces of equal length, each at most [`RANGE_BYTES`].
fn pieces(r: Range<u64>) -> impl Iterator<Item = Range<u64>> {
    let n = (r.end - r.start).div_ceil(RANGE_BYTES).max(1);
    let len = (r.end - r.start).div_ceil(n);
    (0..n).map(move |i| r.start + i * len..(r.start + (i + 1) * len).min(r.end))
}

/// The bytes and GETs `plan` reads of `segment` (as [`read_parts`] reads it), for benchmarks
/// and the query model.
pub fn read_cost(segment: &Segment, plan: &ReadPlan) -> (u64, u64) {
    let size = segment.size() as u64;
    let header = segment.as_bytes();
    let dir_len = u64::from(u32::from_le_bytes([header[12], header[13], header[14], header[15]]));
    let data_start = HEADER_LEN as u64 + dir_len;
    let prefix = PREFIX_BYTES.min(size);
    let (mut bytes, mut gets) = (prefix, 1);
    if data_start > prefix {
        (bytes, gets) = (data_start, 2);
    }
    let plan = plan.for_segment(segment.directory());
    for r in ranges(segment.directory(), data_start, size, bytes, &plan) {
        bytes += r.end - r.start;
        gets += 1;
    }
    (bytes, gets)
}

/// The runs of adjacent parts `plan` reads of `segment`'s data, no gap read through: how many
/// ranges a segment much larger than this one, whose gaps all pass [`COALESCE_BYTES`], needs
/// at least (before they are cut into pieces).
pub fn part_runs(segment: &Segment, plan: &ReadPlan) -> u64 {
    let header = segment.as_bytes();
    let dir_len = u64::from(u32::from_le_bytes([header[12], header[13], header[14], header[15]]));
    let data_start = HEADER_LEN as u64 + dir_len;
    let plan = plan.for_segment(segment.directory());
    merged(segment.directory(), data_start, segment.size() as u64, data_start, &plan, 0).len() as u64
}

/// Reads the segment `key` of `size` bytes: every byte in one GET when `plan` is `None`, else
/// its header and directory, then the parts `plan` reads, as the module says.
pub async fn read_parts(
    store: &dyn ObjectStore,
    key: &str,
    size: u64,
    plan: Option<&ReadPlan>,
) -> Result<Segment, QueryError> {
    let source = |e: sluice_store::storage::StorageError| QueryError::Source(format!("segment {key}: {e}"));
    let Some(plan) = plan else {
        return Ok(Segment::from_bytes(key, store.get(key).await.map_err(source)?.to_vec())?);
    };
    let damaged = |reason: String| QueryError::Segment(FormatError::new(key, reason));
    let size_usize = usize::try_from(size).map_err(|_| damaged(format!("{size} bytes do not fit in memory")))?;
    let prefix = PREFIX_BYTES.min(size);
    let head = store.get_range(key, 0..prefix).await.map_err(source)?;
    if (head.len() as u64) < prefix.min(HEADER_LEN as u64) || head.len() as u64 > prefix {
        return Err(damaged(format!("the read of its first {prefix} bytes returned {} (truncated?)", head.len())));
    }
    let dir_len = u64::from(u32::from_le_bytes([head[12], head[13], head[14], head[15]]));
    let data_start = HEADER_LEN as u64 + dir_len;
    if dir_len > MAX_DIRECTORY_BYTES as u64 || data_start > size {
        return Err(damaged(format!("directory of {dir_len} bytes does not fit in {size} bytes")));
    }
    let mut bytes = vec![0u8; size_usize];
    bytes[..head.len()].copy_from_slice(&head);
    let mut have = head.len() as u64;
    if data_start > have {
        let rest = store.get_range(key, have..data_start).await.map_err(source)?;
        if rest.len() as u64 != data_start - have {
            return Err(damaged(format!("directory read returned {} of {} bytes", rest.len(), data_start - have)));
        }
        bytes[have as usize..data_start as usize].copy_from_slice(&rest);
        have = data_start;
    }
    let dir = &bytes[HEADER_LEN..data_start as usize];
    if crc32fast::hash(dir) != u32::from_le_bytes([head[16], head[17], head[18], head[19]]) {
        return Err(damaged("directory checksum mismatch".into()));
    }
    let directory: Directory = serde_json::from_slice(dir).map_err(|e| damaged(format!("directory: {e}")))?;
    let plan = &plan.for_segment(&directory);
    let mut reads = futures::stream::iter(ranges(&directory, data_start, size, have, plan))
        .map(|r| async move { store.get_range(key, r.clone()).await.map(|part| (r, part)) })
        .buffer_unordered(PARALLEL_RANGES);
    while let Some(read) = reads.next().await {
        let (r, part) = read.map_err(source)?;
        if part.len() as u64 != r.end - r.start {
            return Err(damaged(format!("ranged read {}..{} returned {} bytes", r.start, r.end, part.len())));
        }
        bytes[r.start as usize..r.end as usize].copy_from_slice(&part);
    }
    drop(reads);
    let unindexed = plan.columns.iter().filter(|c| !plan.indexed.contains(*c)).map(String::as_str);
    Ok(Segment::from_bytes(key, bytes)?.without_bitmaps(unindexed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::segment::directory::{ColumnEntry, PartRef};
    use sluice_format::time::Interval;
    use std::collections::BTreeMap;

    fn column(name: &str, parts: &[(&str, u64, u64)]) -> ColumnEntry {
        let parts: BTreeMap<String, PartRef> =
            parts.iter().map(|&(p, offset, length)| (p.to_string(), PartRef { offset, length, crc32: 0 })).collect();
        serde_json::from_value(serde_json::json!({"name": name, "type": "string", "parts": parts})).expect("column")
    }

    fn directory(columns: Vec<ColumnEntry>) -> Directory {
        Directory {
            format: "sluice-segment".into(),
            version: 3,
            interval: Interval::new(0, 1),
            num_rows: 1,
            rollup: false,
            query_granularity: sluice_format::granularity::Granularity::None,
            columns,
        }
    }

    fn plan(columns: &[&str], indexed: &[&str]) -> ReadPlan {
        ReadPlan {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            indexed: indexed.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn bitmaps_are_read_only_for_filtered_columns_and_small_gaps_are_read_through() {
        const M: u64 = 1 << 20;
        let dir = directory(vec![
            column("a", &[("dictionary", 0, 10), ("ids", 10, 100), ("bitmaps", 110, 5 * M)]),
            column("b", &[("dictionary", 110 + 5 * M, 10), ("ids", 120 + 5 * M, 100)]),
            column("c", &[("dictionary", 220 + 5 * M + M / 2, 10), ("ids", 230 + 5 * M + M / 2, 50)]),
        ]);
        let size = 1000 + 7 * M;
        // `a` grouped, not filtered: its bitmaps are skipped, b is more than 1 MiB away.
        let got = ranges(&dir, 100, size, 100, &plan(&["a", "b"], &[]));
        assert_eq!(got, vec![100..210, 210 + 5 * M..320 + 5 * M]);
        // Filtered: its bitmaps are read, and b and c, under 1 MiB apart, in one range.
        let got = ranges(&dir, 100, size, 100, &plan(&["a", "b", "c"], &["a"]));
        assert_eq!(got, vec![100..380 + 5 * M + M / 2]);
        // What the first GET brought is not read again.
        let got = ranges(&dir, 100, size, 150, &plan(&["a"], &["a"]));
        assert_eq!(got, vec![150..210 + 5 * M]);
        assert_eq!(ranges(&dir, 100, size, 100, &ReadPlan::directory_only()), vec![]);
    }

    #[test]
    fn a_filtered_column_is_read_by_its_bitmaps_only_where_they_are_smaller_than_its_ids() {
        let dir = directory(vec![
            column("few", &[("dictionary", 0, 10), ("ids", 10, 1_000), ("bitmaps", 1_010, 400)]),
            column("many", &[("dictionary", 1_410, 10), ("ids", 1_420, 1_000), ("bitmaps", 2_420, 3_000)]),
            column(
                "multi",
                &[("dictionary", 5_420, 10), ("offsets", 5_430, 600), ("ids", 6_030, 1_000), ("bitmaps", 7_030, 1_500)],
            ),
        ]);
        let p = plan(&["few", "many", "multi"], &["few", "many", "multi"]).for_segment(&dir);
        assert_eq!(p.indexed.into_iter().collect::<Vec<_>>(), vec!["few", "multi"], "offsets count with the ids");
        assert_eq!(p.columns.len(), 3, "every column still read");
        let unfiltered = plan(&["many"], &[]).for_segment(&dir);
        assert!(unfiltered.indexed.is_empty());
    }

    #[test]
    fn long_ranges_are_cut_into_equal_pieces_of_at_most_16_mib() {
        let got: Vec<_> = pieces(0..(RANGE_BYTES * 2 + 2)).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got.first().map(|r| r.start), Some(0));
        assert_eq!(got.last().map(|r| r.end), Some(RANGE_BYTES * 2 + 2));
        assert!(got.windows(2).all(|w| w[0].end == w[1].start), "contiguous: {got:?}");
        assert!(got.iter().all(|r| r.end - r.start <= RANGE_BYTES), "{got:?}");
        assert_eq!(pieces(5..6).collect::<Vec<_>>(), vec![5..6]);
    }
}

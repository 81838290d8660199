//! The segment timeline of a datasource: its reads and its writers' side are
//! `sluice-metastore`'s (`sluice_metastore::timeline`), re-exported here under the names the
//! pipeline's modules use.

pub use crate::layout::timeline::{ChunkItem, SegmentRecord};
pub use sluice_metastore::timeline::records::{
    allocate_partitions, delete_record, describe, discard, mark_visible, put_record,
};
pub use sluice_metastore::timeline::{
    read_records, realtime_segments, segment_records, visible_segments, REALTIME_VERSION,
};

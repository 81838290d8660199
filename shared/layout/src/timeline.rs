//! The bodies of the segment timeline's items: `chunk#` (a time chunk's version and
//! partition numbering), `seg#` (one segment record, written by a task's merge or by a
//! compaction) and `sum#` (a record's summary, kept apart from it).

use crate::keys::{segment_sk, summary_sk};
use crate::task::TaskId;
use serde::{Deserialize, Serialize};
use sluice_format::summary::SegmentSummary;
use sluice_format::time::Interval;

/// The body of a `chunk#` item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkItem {
    /// The time chunk.
    pub interval: Interval,
    /// Version shared by the chunk's appended segments.
    pub version: String,
    /// The next free partition number.
    pub next_partition: u32,
}

/// The body of a `seg#` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentRecord {
    /// Its time chunk.
    pub interval: Interval,
    /// Version.
    pub version: String,
    /// Partition number within the chunk and version.
    pub partition: u32,
    /// Object key in deep storage.
    pub key: String,
    /// Rows.
    pub num_rows: u64,
    /// Bytes.
    pub num_bytes: u64,
    /// Dimension names, in the segment's order.
    pub dimensions: Vec<String>,
    /// Metric names.
    pub metrics: Vec<String>,
    /// The task that produced it (`None`: a compaction's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    /// The compaction (replace number) that produced it (`None`: a task's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace: Option<u64>,
    /// The merge that wrote it: a task's segments are those of the merge its publish names.
    pub merge: String,
    /// The row changes of the compaction configuration that wrote it (Druid's
    /// `lastCompactionState`; `None`: none asked, or written by a task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_state: Option<String>,
    /// Set once its task or compaction is published (before that, visibility follows the
    /// publish).
    pub visible: bool,
    /// What the segment's columns hold, from which a query tells that its filter cannot match
    /// the segment before reading it (`None`: a record written before summaries were, or a
    /// segment whose summary would not fit its limits; a summary that does not read reads as
    /// `None`, so it never keeps its record from reading).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "sluice_format::summary::lenient")]
    pub summary: Option<SegmentSummary>,
}

impl SegmentRecord {
    /// The record's sort key.
    pub fn sk(&self) -> String {
        segment_sk(self.interval.start, &self.version, self.partition)
    }

    /// The sort key of the record's summary item.
    pub fn summary_sk(&self) -> String {
        summary_sk(&self.sk())
    }

    /// The record as it is written, without its summary, and the summary as an item of its own.
    pub fn split_summary(&self) -> (SegmentRecord, Option<SummaryItem>) {
        let bare = SegmentRecord { summary: None, ..self.clone() };
        let item = self.summary.clone().map(|summary| SummaryItem {
            record: self.sk(),
            key: self.key.clone(),
            merge: self.merge.clone(),
            summary: Some(summary),
        });
        (bare, item)
    }
}

/// The body of a `sum#` item: a segment record's summary, kept apart from the record so that a
/// timeline's read reads records of a few hundred bytes (DynamoDB bills a read by each item's
/// whole size) and a query reads the summaries of the records its interval selected only. It
/// names its record's sort key, object key and merge: a summary naming others is not the
/// summary of the record under that key now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryItem {
    /// The record's sort key.
    pub record: String,
    /// The record's object key.
    pub key: String,
    /// The record's merge.
    pub merge: String,
    /// The summary (`None`: one that does not read, which never keeps its record from reading).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "sluice_format::summary::lenient")]
    pub summary: Option<SegmentSummary>,
}

impl SummaryItem {
    /// Whether this is the summary of `record`.
    pub fn belongs_to(&self, record: &SegmentRecord) -> bool {
        self.record == record.sk() && self.key == record.key && self.merge == record.merge
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sluice_format::summary::{ColumnSummary, SummaryLimits};

    fn record() -> serde_json::Value {
        json!({
            "interval": {"start": 0, "end": 3_600_000},
            "version": "v1", "partition": 0, "key": "k", "numRows": 2, "numBytes": 10,
            "dimensions": ["page"], "metrics": ["count"], "merge": "m", "visible": true
        })
    }

    #[test]
    fn a_record_without_a_summary_reads_and_writes_none() {
        let r: SegmentRecord = serde_json::from_value(record()).expect("an older record reads");
        assert_eq!(r.summary, None);
        assert!(serde_json::to_value(&r).expect("json").get("summary").is_none());
    }

    #[test]
    fn a_record_is_written_without_its_summary_which_names_the_record() {
        let mut r: SegmentRecord = serde_json::from_value(record()).expect("record");
        let columns = [("page".to_string(), ColumnSummary::of_strings(["a"], false, &SummaryLimits::default()))];
        r.summary = SegmentSummary::from_columns(2, columns.into_iter().collect(), &SummaryLimits::default());
        let (bare, item) = r.split_summary();
        assert_eq!(bare, SegmentRecord { summary: None, ..r.clone() });
        let item = item.expect("a summary item");
        assert_eq!((item.summary.as_ref(), r.summary_sk()), (r.summary.as_ref(), format!("sum#{}", &r.sk()[4..])));
        assert!(item.belongs_to(&r));
        // Another merge under the same key, or another record, is not its record.
        assert!(!item.belongs_to(&SegmentRecord { merge: "other".into(), ..r.clone() }));
        assert!(!item.belongs_to(&SegmentRecord { partition: 1, ..r.clone() }));
        assert_eq!(SegmentRecord { summary: None, ..r }.split_summary().1, None);
    }

    #[test]
    fn a_summary_reads_back_and_a_bad_one_reads_as_none() {
        let mut r: SegmentRecord = serde_json::from_value(record()).expect("record");
        let columns = [
            ("page".to_string(), ColumnSummary::of_strings(["a", "b"], false, &SummaryLimits::default())),
            ("count".to_string(), ColumnSummary::Other),
        ];
        r.summary = SegmentSummary::from_columns(2, columns.into_iter().collect(), &SummaryLimits::default());
        assert!(r.summary.is_some());
        let body = serde_json::to_value(&r).expect("json");
        assert_eq!(serde_json::from_value::<SegmentRecord>(body).expect("reads back"), r);
        let mut bad = record();
        bad["summary"] = json!({"version": 1, "columns": "not a map"});
        let read: SegmentRecord = serde_json::from_value(bad).expect("the record still reads");
        assert_eq!(read.summary, None);
    }
}

//! Indexes for unit tests: rows of `{"ts", "page", "added"}` indexed by the indexer's own
//! ingester under a small hourly spec.

use super::{Ingester, MessageWindow, RowMeters};
use sluice_format::index::IncrementalIndex;
use sluice_format::spec::{load_spec_value, DatasourceSpec};
use sluice_kafka::Record;

/// An hourly spec, not rolled up, with `tuning` as its `tuningConfig`.
pub(crate) fn spec(tuning: serde_json::Value) -> DatasourceSpec {
    let spec = serde_json::json!({"type": "kafka", "spec": {
        "dataSchema": {"dataSource": "d", "timestampSpec": {"column": "ts", "format": "millis"},
            "dimensionsSpec": {"dimensions": ["page"]},
            "metricsSpec": [{"type": "longSum", "name": "added", "fieldName": "added"}],
            "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": "none", "rollup": false}},
        "ioConfig": {"topic": "t", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "b"}},
        "tuningConfig": tuning}});
    load_spec_value(spec).expect("spec").spec
}

/// The indexes of rows at `times` (ms), one per hour they fall in; row `n` has page `p<n>`.
pub(crate) fn indexes(spec: &DatasourceSpec, times: &[i64]) -> Vec<IncrementalIndex> {
    let none = crate::schemas::DescriptorDir::none();
    let mut ingester = Ingester::new(spec, &none, MessageWindow::default(), RowMeters::new(0, 0)).expect("ingester");
    for (n, ts) in times.iter().enumerate() {
        let payload = format!(r#"{{"ts": {ts}, "page": "p{n}", "added": 1}}"#);
        ingester.ingest(Record::value(0, n as i64, Some(payload.as_bytes()), None)).expect("row");
    }
    ingester.take_indexes()
}

//! What the query benches share: records indexed under a spec into one segment per time chunk.

use sluice_format::spec::DatasourceSpec;
use sluice_query::QuerySegment;

/// `lines` indexed under `spec`, each time chunk persisted as one segment.
pub fn segments(spec: &DatasourceSpec, lines: &[String]) -> Vec<QuerySegment> {
    let (indexes, _) = crate::common::index_records(spec, lines.iter().map(|l| l.as_bytes()));
    indexes
        .values()
        .map(|index| {
            let interval = index.interval();
            QuerySegment { id: format!("w_{interval}"), interval, segment: crate::common::persist(index, "segment") }
        })
        .collect()
}

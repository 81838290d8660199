//! Counters as CloudWatch Embedded Metric Format: one JSON log line per document, which
//! CloudWatch Logs turns into metrics in the `Sluice` namespace without any API call.

use serde_json::{json, Map, Value};
use sluice_format::time::now_ms;

/// The namespace of every metric.
pub const NAMESPACE: &str = "Sluice";

/// One EMF document: dimensions (name, value) and metrics (name, value, unit).
pub fn document(dimensions: &[(&str, &str)], metrics: &[(&str, f64, &str)], now_ms: i64) -> Value {
    let mut doc = Map::new();
    doc.insert(
        "_aws".into(),
        json!({
            "Timestamp": now_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [dimensions.iter().map(|(k, _)| *k).collect::<Vec<_>>()],
                "Metrics": metrics.iter().map(|(name, _, unit)| json!({"Name": name, "Unit": unit})).collect::<Vec<_>>(),
            }],
        }),
    );
    for (k, v) in dimensions {
        doc.insert((*k).into(), json!(v));
    }
    for (name, value, _) in metrics {
        doc.insert((*name).into(), json!(value));
    }
    Value::Object(doc)
}

/// Writes one EMF document to standard output (the function's log stream).
pub fn emit(dimensions: &[(&str, &str)], metrics: &[(&str, f64, &str)]) {
    if metrics.is_empty() {
        return;
    }
    println!("{}", document(dimensions, metrics, now_ms()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_follow_the_embedded_metric_format() {
        let d = document(&[("Function", "indexer"), ("Datasource", "w")], &[("RowsProcessed", 12.0, "Count")], 1_000);
        assert_eq!(d["_aws"]["CloudWatchMetrics"][0]["Namespace"], "Sluice");
        assert_eq!(d["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Function", "Datasource"]]));
        assert_eq!(d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0], json!({"Name": "RowsProcessed", "Unit": "Count"}));
        assert_eq!(d["_aws"]["Timestamp"], 1_000);
        assert_eq!((d["Function"].as_str(), d["RowsProcessed"].as_f64()), (Some("indexer"), Some(12.0)));
    }
}

//! Druid's Wikipedia sample for the tests that run it through Kafka: its records, Druid's
//! tutorial spec pointed at a topic, and the answers Druid's documentation prints
//! (`data/queries/wikipedia-documented-answers.json`).
//!
//! The shipped sample has its first twelve records moved off 2015-09-12 to the days around it
//! (same time of day); [`tutorial_lines`] puts them back, as the documented answers assume.

use serde_json::Value;
use std::io::BufRead;

/// The repository's `data/` folder.
pub fn data_path(name: &str) -> String {
    format!("{}/../data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The sample's lines, as shipped.
pub fn sample_lines() -> Vec<String> {
    let file = std::fs::File::open(data_path("wikiticker-2015-09-12-sampled.json.gz")).expect("the sample");
    std::io::BufReader::new(flate2::read::GzDecoder::new(file)).lines().map(|l| l.expect("a line")).collect()
}

/// Whether a shipped record is one of the twelve moved off 2015-09-12.
pub fn is_stray(line: &str) -> bool {
    line.starts_with("{\"time\":\"2015-09-") && !line.starts_with("{\"time\":\"2015-09-12")
}

/// The sample as Druid's tutorial has it: every record on 2015-09-12.
pub fn tutorial_lines() -> Vec<String> {
    sample_lines()
        .into_iter()
        .map(|l| if is_stray(&l) { format!("{{\"time\":\"2015-09-12{}", &l[19..]) } else { l })
        .collect()
}

/// Lines as (partition, bytes), spread round-robin over `partitions`.
pub fn records(lines: Vec<String>, partitions: i32) -> Vec<(i32, Vec<u8>)> {
    lines.into_iter().enumerate().map(|(i, l)| ((i as i32) % partitions, l.into_bytes())).collect()
}

/// Druid's tutorial supervisor spec for `datasource`, reading `topic` from `bootstrap` from the
/// earliest offsets.
pub fn tutorial_spec(datasource: &str, topic: &str, bootstrap: &str) -> Value {
    let text = std::fs::read_to_string(data_path("specs/wikipedia-kafka-supervisor.json")).expect("the spec");
    let mut spec: Value = serde_json::from_str(&text).expect("the spec is JSON");
    spec["dataSchema"]["dataSource"] = datasource.into();
    spec["ioConfig"]["topic"] = topic.into();
    spec["ioConfig"]["consumerProperties"]["bootstrap.servers"] = bootstrap.into();
    spec["ioConfig"]["useEarliestOffset"] = true.into();
    spec
}

/// Tutorial query `file` of `data/queries/`, on `datasource`.
pub fn tutorial_query(file: &str, datasource: &str) -> String {
    let text = std::fs::read_to_string(data_path(&format!("queries/{file}"))).expect("the query");
    let mut query: Value = serde_json::from_str(&text).expect("the query is JSON");
    query["dataSource"] = datasource.into();
    query.to_string()
}

/// The documented answer to tutorial query `file`.
pub fn documented_answer(file: &str) -> Value {
    let text = std::fs::read_to_string(data_path("queries/wikipedia-documented-answers.json")).expect("the answers");
    let answers: Value = serde_json::from_str(&text).expect("the answers are JSON");
    answers.get(file).cloned().unwrap_or_else(|| panic!("no documented answer for {file}"))
}

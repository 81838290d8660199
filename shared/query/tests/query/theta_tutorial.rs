//! Druid's theta sketch tutorial (docs/tutorials/tutorial-sketches-theta.md): its rows and its
//! rollup spec, for the query engine's tests and SQL's.

/// The tutorial's rows, with its header.
const ROWS: &str = include_str!("theta_tutorial.csv");
/// The tutorial's rollup spec, as a Kafka spec: day, show and episode, a count and a theta
/// sketch of `uid`, the columns named by the CSV's header.
pub const SPEC: &str = include_str!("theta_tutorial_spec.json");

/// The tutorial's rows as records, each with the header that names its columns.
pub fn records() -> Vec<String> {
    let mut lines = ROWS.lines();
    let header = lines.next().expect("header");
    lines.map(|l| format!("{header}\n{l}")).collect()
}

//! The catalog's readers link no ingestion code: `sluice-query`, `sluice-sql`, the broker and
//! the query-worker function read what is visible through `sluice-metastore`, so neither
//! `sluice-pipeline` nor the Kafka client (`sluice-kafka`, rdkafka and librdkafka) is among
//! their normal dependencies, nor the catalog's own.

use std::process::Command;

/// Packages whose dependencies must hold no ingestion code.
const READERS: [&str; 5] = ["sluice-metastore", "sluice-query", "sluice-sql", "sluice-broker", "sluice-query-worker"];

/// Packages of the ingestion path.
const INGESTION: [&str; 4] = ["sluice-pipeline", "sluice-kafka", "rdkafka", "rdkafka-sys"];

/// The names of `package` and its normal dependencies, as `cargo tree` lists them.
fn normal_dependencies(package: &str) -> Vec<String> {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "--manifest-path", manifest, "-p", package])
        .args(["-e", "normal", "--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "cargo tree -p {package} failed: {}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().filter_map(|line| line.split_whitespace().next()).map(String::from).collect()
}

#[test]
fn readers_depend_on_the_catalog_and_not_on_the_ingestion_path() {
    for reader in READERS {
        let dependencies = normal_dependencies(reader);
        assert!(
            dependencies.iter().any(|d| d == "sluice-metastore"),
            "{reader}: no sluice-metastore in {dependencies:?}"
        );
        let ingestion: Vec<&String> = dependencies.iter().filter(|d| INGESTION.contains(&d.as_str())).collect();
        assert!(ingestion.is_empty(), "{reader} depends on {ingestion:?}");
    }
}

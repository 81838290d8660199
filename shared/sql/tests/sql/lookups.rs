//! Lookups in SQL on the Wikipedia sample: `LOOKUP()` with and without a replacement, the
//! `lookup` schema, and the same answers computed from the sample's own column.

use super::sql;
use serde_json::{json, Value};
use sluice_format::lookup::{KeyedTable, Lookups};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Country names by ISO code, for a few of the sample's countries.
pub const COUNTRY_NAMES: [(&str, &str); 5] =
    [("US", "United States"), ("GB", "United Kingdom"), ("FR", "France"), ("IT", "Italy"), ("JP", "Japan")];

/// The lookups the sample's source holds.
pub fn fixture() -> Arc<Lookups> {
    let names = KeyedTable::lookup("country_names", "v1", COUNTRY_NAMES.map(|(k, v)| (k.to_string(), v.to_string())));
    Arc::new(Lookups::from([("country_names".to_string(), names)]))
}

/// Rows per ISO code, from the column itself.
fn by_code() -> BTreeMap<Option<String>, i64> {
    sql("SELECT countryIsoCode, COUNT(*) FROM wikipedia GROUP BY 1")
        .into_iter()
        .map(|r| (r[0].as_str().map(str::to_string), r[1].as_i64().expect("a count")))
        .collect()
}

/// What grouping by the looked-up name gives, worked out from [`by_code`].
fn expected_by_name(missing: Option<&str>) -> BTreeMap<Option<String>, i64> {
    let names: BTreeMap<&str, &str> = COUNTRY_NAMES.into_iter().collect();
    let mut out = BTreeMap::new();
    for (code, n) in by_code() {
        let name = code.as_deref().and_then(|c| names.get(c)).map(|n| n.to_string()).or(missing.map(str::to_string));
        *out.entry(name).or_insert(0) += n;
    }
    out
}

fn grouped(rows: Vec<Vec<Value>>) -> BTreeMap<Option<String>, i64> {
    rows.into_iter().map(|r| (r[0].as_str().map(str::to_string), r[1].as_i64().expect("a count"))).collect()
}

#[test]
fn lookup_groups_by_the_mapped_value_with_or_without_a_replacement() {
    let plain = sql("SELECT LOOKUP(countryIsoCode, 'country_names') AS country, COUNT(*) FROM wikipedia GROUP BY 1");
    assert_eq!(grouped(plain), expected_by_name(None));
    let replaced = sql("SELECT LOOKUP(countryIsoCode, 'country_names', 'other'), COUNT(*) FROM wikipedia GROUP BY 1");
    let expected = expected_by_name(Some("other"));
    assert!(expected.contains_key(&Some("other".to_string())) && !expected.contains_key(&None));
    assert_eq!(grouped(replaced), expected);
}

#[test]
fn a_filter_on_a_looked_up_value_keeps_the_rows_of_its_keys() {
    let rows = sql("SELECT COUNT(*) FROM wikipedia WHERE LOOKUP(countryIsoCode, 'country_names') = 'France'");
    assert_eq!(rows, vec![vec![json!(by_code()[&Some("FR".to_string())])]]);
}

#[test]
fn the_lookup_schema_reads_a_lookup_as_rows_of_k_and_v() {
    let rows = sql("SELECT k, v FROM lookup.country_names ORDER BY k");
    let mut expected: Vec<Vec<Value>> = COUNTRY_NAMES.iter().map(|(k, v)| vec![json!(k), json!(v)]).collect();
    expected.sort_by(|a, b| a[0].as_str().cmp(&b[0].as_str()));
    assert_eq!(rows, expected);
    super::refused_naming("SELECT k FROM lookup.nope", "lookup 'nope' not found (lookups: country_names)");
    super::refused_naming(
        "SELECT LOOKUP(countryIsoCode, 'nope'), COUNT(*) FROM wikipedia GROUP BY 1",
        "lookup \"nope\" not found",
    );
}

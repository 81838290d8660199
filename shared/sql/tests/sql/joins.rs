//! JOINs on the Wikipedia sample: a lookup and a subquery on the right, INNER and LEFT, the
//! plan Druid's planner makes (a join datasource, `j0.` and `_j0.` prefixes), and the answers
//! worked out from the sample's own columns.

use super::lookups::COUNTRY_NAMES;
use super::{refused_naming, sql};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn counts(text: &str) -> BTreeMap<String, i64> {
    sql(text).into_iter().map(|r| (r[0].to_string(), r[1].as_i64().expect("a count"))).collect()
}

fn by_name(left: bool) -> BTreeMap<String, i64> {
    let names: BTreeMap<&str, &str> = COUNTRY_NAMES.into_iter().collect();
    let mut out = BTreeMap::new();
    for (code, n) in counts("SELECT countryIsoCode, COUNT(*) FROM wikipedia GROUP BY 1") {
        let name = code.trim_matches('"');
        match names.get(name) {
            Some(v) => *out.entry(json!(v).to_string()).or_insert(0) += n,
            None if left => *out.entry("null".to_string()).or_insert(0) += n,
            None => {}
        }
    }
    out
}

#[test]
fn a_join_to_a_lookup_gives_what_the_lookup_maps() {
    let inner = "SELECT l.v AS country, COUNT(*) FROM wikipedia w INNER JOIN lookup.country_names l \
                 ON w.countryIsoCode = l.k GROUP BY 1";
    assert_eq!(counts(inner), by_name(false));
    let left = "SELECT country_names.v, COUNT(*) FROM wikipedia LEFT JOIN lookup.country_names \
                ON countryIsoCode = country_names.k GROUP BY 1";
    assert_eq!(counts(left), by_name(true));
    let bare = "SELECT v, COUNT(*) FROM wikipedia JOIN lookup.country_names ON k = countryIsoCode GROUP BY 1";
    assert_eq!(counts(bare), by_name(false), "a bare name only the right side has is the right side's");
}

#[test]
fn a_join_to_a_subquery_reads_its_rows_per_key() {
    let per_channel = counts("SELECT channel, COUNT(*) FROM wikipedia GROUP BY 1");
    let squares: i64 = per_channel.values().map(|n| n * n).sum();
    let joined =
        sql("SELECT SUM(s.n) FROM wikipedia w JOIN (SELECT channel, COUNT(*) AS n FROM wikipedia GROUP BY channel) s \
                      ON w.channel = s.channel");
    assert_eq!(joined, vec![vec![json!(squares)]]);
    let top =
        sql("SELECT w.channel, s.n FROM wikipedia w JOIN (SELECT channel, COUNT(*) AS n FROM wikipedia GROUP BY 1) s \
                   ON s.channel = w.channel WHERE w.channel = '#de.wikipedia' LIMIT 1");
    assert_eq!(top, vec![vec![json!("#de.wikipedia"), json!(per_channel["\"#de.wikipedia\""])]]);
}

#[test]
fn a_join_on_two_equalities_matches_rows_on_both() {
    // Rows per (channel, namespace) joined back on both: each row reads its own pair's count.
    let pairs = sql("SELECT channel, namespace, COUNT(*) FROM wikipedia GROUP BY 1, 2");
    let squares: i64 = pairs.iter().map(|r| r[2].as_i64().expect("count").pow(2)).sum();
    let joined = sql("SELECT COUNT(*), SUM(s.n) FROM wikipedia w JOIN \
                      (SELECT channel, namespace, COUNT(*) AS n FROM wikipedia GROUP BY 1, 2) s \
                      ON w.channel = s.channel AND (w.namespace = s.namespace)");
    let rows: i64 = pairs.iter().map(|r| r[2].as_i64().expect("count")).sum();
    assert_eq!(joined, vec![vec![json!(rows), json!(squares)]]);
    // LEFT: a pair the right side lacks reads null, the rows kept.
    let left = sql("SELECT COUNT(*), COUNT(s.n) FROM wikipedia w LEFT JOIN \
                    (SELECT channel, namespace, COUNT(*) AS n FROM wikipedia WHERE namespace = 'Main' GROUP BY 1, 2) s \
                    ON w.channel = s.channel AND w.namespace = s.namespace");
    let main: i64 = pairs.iter().filter(|r| r[1] == json!("Main")).map(|r| r[2].as_i64().expect("count")).sum();
    assert_eq!(left, vec![vec![json!(rows), json!(main)]]);
}

#[test]
fn a_join_on_a_time_key_matches_the_subquerys_times() {
    let total = sql("SELECT COUNT(*) FROM wikipedia")[0][0].clone();
    let joined = sql("SELECT COUNT(*), SUM(s.n) FROM wikipedia w JOIN \
                      (SELECT TIME_FLOOR(__time, 'PT1H') AS h, COUNT(*) AS n FROM wikipedia GROUP BY 1) s \
                      ON TIME_FLOOR(w.__time, 'PT1H') = s.h");
    assert_eq!(joined[0][0], total, "every row matches its hour");
}

#[test]
fn two_joins_chain_and_star_names_the_right_columns_as_their_side_does() {
    let rows = sql("SELECT * FROM wikipedia w JOIN lookup.country_names a ON w.countryIsoCode = a.k \
                    JOIN lookup.country_names b ON a.k = b.k WHERE w.countryIsoCode = 'FR' LIMIT 1");
    assert_eq!(rows.len(), 1);
    let result = super::answer(&sluice_sql::SqlRequest::new(
        "SELECT * FROM wikipedia w JOIN lookup.country_names a ON w.countryIsoCode = a.k \
         JOIN lookup.country_names b ON a.k = b.k LIMIT 1",
    ))
    .expect("runs");
    let names: Vec<&str> = result.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(&names[names.len() - 4..], ["k", "v", "k", "v"]);
    let row = &rows[0];
    assert_eq!(&row[row.len() - 4..], [json!("FR"), json!("France"), json!("FR"), json!("France")]);
}

#[test]
fn explain_shows_druids_join_datasource() {
    let plan = sql("EXPLAIN PLAN FOR SELECT l.v, COUNT(*) FROM wikipedia w LEFT JOIN lookup.country_names l \
                    ON w.countryIsoCode = l.k JOIN lookup.country_names m ON l.k = m.k GROUP BY 1");
    let queries: Value = serde_json::from_str(plan[0][0].as_str().expect("text")).expect("JSON");
    let ds = &queries[0]["query"]["dataSource"];
    assert_eq!(ds["type"], "join");
    assert_eq!(ds["rightPrefix"], "_j0.");
    assert_eq!(ds["condition"], "(\"j0.k\" == \"_j0.k\")");
    assert_eq!(ds["joinType"], "INNER");
    assert_eq!(
        ds["left"],
        json!({"type": "join", "left": "wikipedia", "right": {"type": "lookup", "lookup": "country_names"},
        "rightPrefix": "j0.", "condition": "(\"countryIsoCode\" == \"j0.k\")", "joinType": "LEFT"})
    );
}

#[test]
fn joins_sluice_does_not_run_are_refused_by_name() {
    refused_naming(
        "SELECT COUNT(*) FROM wikipedia RIGHT JOIN lookup.country_names l ON countryIsoCode = l.k",
        "RIGHT JOIN",
    );
    refused_naming("SELECT COUNT(*) FROM wikipedia w, lookup.country_names l", "comma join");
    refused_naming(
        "SELECT COUNT(*) FROM wikipedia JOIN lookup.country_names l ON countryIsoCode <> l.k",
        "only equalities",
    );
    refused_naming(
        "SELECT COUNT(*) FROM wikipedia JOIN lookup.country_names l ON countryIsoCode = l.k AND page = l.v",
        "one key column",
    );
    refused_naming(
        "SELECT COUNT(*) FROM wikipedia w JOIN (SELECT channel FROM wikipedia) s ON w.channel = s.channel",
        "is held by more than one row",
    );
    refused_naming(
        "SELECT COUNT(*) FROM wikipedia FULL JOIN lookup.country_names l ON countryIsoCode = l.k",
        "FULL JOIN",
    );
}

#[test]
fn two_key_values_that_run_together_do_not_match_each_other() {
    // ("x\u1y", "z") and ("x", "y\u1z") would write the same key if the parts (apart by \u1)
    // ran together; ("x\u1y", "z") against itself still matches.
    let join = |r1: &str, r2: &str| {
        sql(&format!(
            "SELECT COUNT(*) FROM wikipedia w JOIN (SELECT '{r1}' AS r1, '{r2}' AS r2, COUNT(*) AS n \
             FROM wikipedia GROUP BY 1, 2) r ON CONCAT(SUBSTRING(w.channel, 1, 0), 'x\u{1}y') = r.r1 \
             AND CONCAT(SUBSTRING(w.channel, 1, 0), 'z') = r.r2"
        ))
    };
    let rows = sql("SELECT COUNT(*) FROM wikipedia")[0][0].clone();
    assert_eq!(join("x\u{1}y", "z"), vec![vec![rows]], "the same parts match");
    assert_eq!(join("x", "y\u{1}z"), vec![vec![json!(0)]], "parts that run together do not");
}

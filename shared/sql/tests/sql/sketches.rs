//! Druid SQL's sketch functions: Druid's theta tutorial's queries, verbatim, on its rows
//! (answers worked out from the rows: the tutorial shows them only as screenshots), and
//! quantiles and distinct counts on the Wikipedia sample against exact answers, within the
//! sketches' documented error.

use super::*;
use serde_json::json;

/// The theta tutorial's datasource: day, show and episode rolled up, a count and `theta_uid`.
fn tutorial() -> &'static MemorySegments {
    static SOURCE: OnceLock<MemorySegments> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let spec = sluice_format::spec::load_spec(theta_tutorial::SPEC).expect("spec").spec;
        let records = theta_tutorial::records();
        memory_source("ts_tutorial", &spec, records.iter().map(|r| r.as_bytes()))
    })
}

fn tutorial_sql(text: &str) -> Vec<Vec<Value>> {
    match runtime().block_on(run_sql(tutorial(), &SqlRequest::new(text))) {
        Ok(r) => r.rows,
        Err(e) => panic!("{text}\n  failed: {e}"),
    }
}

#[test]
fn the_theta_tutorials_queries_give_the_answers_its_rows_hold() {
    let all = tutorial_sql("SELECT * FROM ts_tutorial");
    assert_eq!(all.len(), 12, "day x show x episode");
    // theta_uid, the last column, shows each row's sketch in base64, as Druid shows it.
    use base64::Engine;
    let estimates: Vec<f64> = all
        .iter()
        .map(|r| {
            let text = r.last().and_then(Value::as_str).expect("base64");
            let bytes = base64::engine::general_purpose::STANDARD.decode(text).expect("base64");
            sluice_format::sketches::Theta::from_bytes(&bytes, 14).expect("a theta sketch").estimate()
        })
        .collect();
    assert_eq!(estimates.iter().sum::<f64>(), 17.0, "users per row, summed: {all:?}");

    let users = tutorial_sql(
        r#"SELECT __time, "show", "episode", APPROX_COUNT_DISTINCT_DS_THETA(theta_uid) AS users
        FROM ts_tutorial GROUP BY 1, 2, 3"#,
    );
    let day = |d: &str| json!(format!("2022-05-{d}T00:00:00.000Z"));
    let row = |d: &str, show: &str, e: &str, n: i64| vec![day(d), json!(show), json!(e), json!(n)];
    let (got, bt) = ("Game of Thrones", "Bridgerton");
    assert_eq!(
        users,
        vec![
            row("19", bt, "S1E1", 1),
            row("19", got, "S1E1", 1),
            row("19", got, "S1E2", 1),
            row("20", bt, "S1E1", 1),
            row("20", bt, "S1E2", 1),
            row("20", got, "S1E1", 1),
            row("21", bt, "S1E1", 2),
            row("21", got, "S1E1", 2),
            row("22", bt, "S1E1", 1),
            row("22", bt, "S1E2", 2),
            row("22", got, "S1E1", 2),
            row("23", got, "S1E1", 2),
        ]
    );
    let estimated = tutorial_sql(
        r#"SELECT __time, "show", "episode", THETA_SKETCH_ESTIMATE(DS_THETA(theta_uid)) AS users
        FROM ts_tutorial GROUP BY 1, 2, 3"#,
    );
    let as_doubles: Vec<Vec<Value>> = users
        .iter()
        .map(|r| vec![r[0].clone(), r[1].clone(), r[2].clone(), json!(r[3].as_f64().expect("n"))])
        .collect();
    assert_eq!(estimated, as_doubles);

    let bridgerton = tutorial_sql(
        r#"SELECT THETA_SKETCH_ESTIMATE(DS_THETA(theta_uid) FILTER(WHERE "show" = 'Bridgerton')) AS users FROM ts_tutorial"#,
    );
    assert_eq!(bridgerton, vec![vec![json!(5.0)]]);
    for (op, expected) in [("INTERSECT", 1.0), ("UNION", 5.0), ("NOT", 3.0)] {
        let text = format!(
            r#"SELECT THETA_SKETCH_ESTIMATE(
                 THETA_SKETCH_{op}(
                   DS_THETA(theta_uid) FILTER(WHERE "show" = 'Bridgerton' AND "episode" = 'S1E1'),
                   DS_THETA(theta_uid) FILTER(WHERE "show" = 'Bridgerton' AND "episode" = 'S1E2')
                 )
               ) AS users
             FROM ts_tutorial"#
        );
        assert_eq!(tutorial_sql(&text), vec![vec![json!(expected)]], "{op}");
    }
    let bounds =
        tutorial_sql("SELECT THETA_SKETCH_ESTIMATE_WITH_ERROR_BOUNDS(DS_THETA(theta_uid), 2) FROM ts_tutorial");
    assert_eq!(bounds, vec![vec![json!({"estimate": 5.0, "highBound": 5.0, "lowBound": 5.0, "numStdDev": 2})]]);
}

/// The exact `fraction` quantile and the rank of `value` among `values` (sorted).
fn exact_rank(values: &[f64], value: f64) -> f64 {
    values.partition_point(|v| *v <= value) as f64 / values.len() as f64
}

#[test]
fn quantiles_and_theta_counts_over_the_sample_are_within_their_documented_error() {
    let mut added: Vec<f64> =
        sql("SELECT added FROM wikipedia").iter().map(|r| r[0].as_f64().expect("added")).collect();
    added.sort_by(f64::total_cmp);
    let row = &sql("SELECT APPROX_QUANTILE_DS(added, 0.5), APPROX_QUANTILE_DS(added, 0.95), APPROX_QUANTILE_DS(added, 0.99, 256), \
        DS_RANK(DS_QUANTILES_SKETCH(added), 100), DS_GET_QUANTILES(DS_QUANTILES_SKETCH(added), 0.5, 0.95), \
        DS_CDF(DS_QUANTILES_SKETCH(added), 10, 100), DS_HISTOGRAM(DS_QUANTILES_SKETCH(added), 100) FROM wikipedia")[0];
    // DataSketches: k=128 has a normalized rank error of about 1.7% (99% confidence).
    for (i, p) in [(0, 0.5), (1, 0.95), (2, 0.99)] {
        let got = row[i].as_f64().expect("a quantile");
        let rank = exact_rank(&added, got);
        let below = exact_rank(&added, got - 0.5);
        assert!(below - 0.017 <= p && p <= rank + 0.017, "p{p}: {got} holds ranks {below}..{rank}");
    }
    assert!((row[3].as_f64().expect("rank") - exact_rank(&added, 100.0)).abs() <= 0.017, "{row:?}");
    assert_eq!(row[4][0], row[0], "the same sketch, the same median");
    let cdf = row[5].as_array().expect("cdf");
    assert!((cdf[1].as_f64().expect("cdf") - exact_rank(&added, 100.0)).abs() <= 0.017, "{row:?}");
    let hist = row[6].as_array().expect("histogram");
    let below = exact_rank(&added, 100.0) * added.len() as f64;
    let at_most = |i: usize| hist[i].as_f64().expect("count");
    assert!((at_most(0) - below).abs() <= 0.017 * added.len() as f64, "{hist:?} vs {below}");
    assert!((at_most(1) - (added.len() as f64 - below)).abs() <= 0.017 * added.len() as f64, "{hist:?}");

    let exact = sql("SELECT COUNT(*) FROM (SELECT DISTINCT \"user\" FROM wikipedia)")[0][0].as_f64().expect("exact");
    let counts = &sql("SELECT APPROX_COUNT_DISTINCT_DS_THETA(\"user\"), APPROX_COUNT_DISTINCT_DS_THETA(\"user\", 1024) FROM wikipedia")[0];
    assert_eq!(counts[0].as_f64(), Some(exact), "below 16,384 entries the theta count is exact");
    // A sketch of 1,024 entries: relative standard error 1/sqrt(1024), about 3.1%; three of them.
    let estimate = counts[1].as_f64().expect("estimate");
    assert!((estimate / exact - 1.0).abs() < 3.0 / 32.0, "{estimate} vs {exact}");
}

#[test]
fn sketch_functions_on_the_wrong_input_are_named() {
    for (text, expected) in [
        ("SELECT THETA_SKETCH_ESTIMATE(page) FROM wikipedia", "can only be used on thetaSketch aggregates"),
        ("SELECT DS_GET_QUANTILE(DS_THETA(page), 0.5) FROM wikipedia", "quantilesDoublesSketch"),
        ("SELECT THETA_SKETCH_UNION(DS_THETA(page)) FROM wikipedia", "at least 2"),
        ("SELECT APPROX_QUANTILE_DS(added, channel) FROM wikipedia", "numeric literal"),
    ] {
        refused_naming(text, expected);
    }
}

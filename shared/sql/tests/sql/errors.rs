//! Bad SQL, unknown tables and columns, and unsupported constructs: each a named error of
//! the kind Druid answers (parse, validation, unsupported).

use super::*;

fn check(text: &str, kind: fn(&SqlError) -> bool, mentions: &str) {
    let err = sql_error(text);
    assert!(kind(&err), "{text}: wrong kind {err:?}");
    assert!(err.to_string().contains(mentions), "{text}: {err} does not mention {mentions:?}");
}

fn parse(e: &SqlError) -> bool {
    matches!(e, SqlError::Parse { .. })
}
fn validation(e: &SqlError) -> bool {
    matches!(e, SqlError::Validation(_))
}
fn unsupported(e: &SqlError) -> bool {
    matches!(e, SqlError::Unsupported(_))
}

#[test]
fn parse_errors_name_their_position() {
    for (text, mentions) in [
        ("SELECT FROM wikipedia WHERE", "line 1, column"),
        ("SELECT channel FROM wikipedia WHERE (added > 1", "line 1"),
        ("SELEC 1", "SELEC"),
    ] {
        check(text, parse, mentions);
    }
    let SqlError::Parse { line, column, .. } = sql_error("SELECT a,\n  b FROM t WHERE ==") else { panic!("parse") };
    assert_eq!((line, column), (Some(2), Some(18)));
}

#[test]
fn unknown_tables_and_columns_are_named() {
    for (text, mentions) in [
        ("SELECT * FROM nowhere", "nowhere"),
        ("SELECT nothing FROM wikipedia", "nothing"),
        ("SELECT w.page FROM wikipedia AS x", "'w'"),
        ("SELECT COUNT(*) FROM wikipedia WHERE nothing = 1", "nothing"),
        ("SELECT page, COUNT(*) FROM wikipedia GROUP BY channel", "page"),
        ("SELECT SUM(page) FROM wikipedia", "SUM of a VARCHAR"),
        ("SELECT page FROM wikipedia WHERE SUM(added) > 1", "aggregate function SUM"),
        ("SELECT page FROM wikipedia GROUP BY 3", "ordinal 3"),
        ("SELECT page FROM wikipedia LIMIT -1", "LIMIT"),
    ] {
        check(text, validation, mentions);
    }
}

#[test]
fn unsupported_constructs_are_named() {
    for (text, mentions) in [
        ("SELECT a.page FROM wikipedia a RIGHT JOIN wikipedia b ON a.page = b.page", "RIGHT JOIN"),
        ("SELECT page FROM wikipedia UNION SELECT page FROM wikipedia", "UNION"),
        ("WITH RECURSIVE t AS (SELECT 1) SELECT * FROM t", "WITH RECURSIVE"),
        ("SELECT COUNT(*) FROM (SELECT page FROM wikipedia EXCEPT SELECT page FROM wikipedia)", "EXCEPT"),
        ("SELECT page FROM wikipedia ORDER BY added", "ORDER BY on anything but __time"),
        (
            "SELECT SUM(added) OVER (ORDER BY added RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM wikipedia",
            "RANGE frame",
        ),
        ("SELECT COUNT(*) FROM wikipedia WHERE page IN (SELECT page FROM wikipedia)", ""),
        ("INSERT INTO wikipedia VALUES (1)", "INSERT"),
        ("SELECT MEDIAN(added) FROM wikipedia", "MEDIAN"),
        ("SELECT channel, COUNT(*) FROM wikipedia GROUP BY channel ORDER BY 2 NULLS LAST", "NULLS LAST"),
    ] {
        check(text, unsupported, mentions);
    }
    let mut r = SqlRequest::new("SELECT COUNT(DISTINCT page) FROM wikipedia");
    r.context.insert("useApproximateCountDistinct".into(), false.into());
    let err = answer(&r).expect_err("exact distinct");
    assert!(unsupported(&err) && err.to_string().contains("useApproximateCountDistinct"), "{err}");
}

#[test]
fn errors_carry_druid_error_classes() {
    assert_eq!(sql_error("SELECT FROM").druid_kind().0, "SQL parse failed");
    assert_eq!(sql_error("SELECT * FROM nowhere").druid_kind().0, "Plan validation failed");
    assert_eq!(sql_error("SELECT 1 UNION SELECT 2").druid_kind().0, "Unsupported operation");
}

#[test]
fn expressions_at_the_depth_limit_plan_and_run_deeper_ones_are_refused() {
    let depth = sluice_sql::parse::MAX_DEPTH;
    let chain = vec!["added"; depth - 10].join(" + ");
    let ors = vec!["channel = '#en.wikipedia'"; depth / 2 - 5].join(" OR ");
    let nested = format!("{}added{}", "ABS(".repeat(30), ")".repeat(30));
    for text in [
        format!("SELECT SUM({chain}) FROM wikipedia"),
        format!("SELECT COUNT(*) FROM wikipedia WHERE {ors}"),
        format!("SELECT {nested} AS x FROM wikipedia LIMIT 1"),
        format!("SELECT COUNT(*) FROM wikipedia WHERE {chain} > 0 HAVING COUNT(*) > 0"),
    ] {
        assert!(!sql(&text).is_empty(), "{text:.80}");
    }
    let too_deep = format!("SELECT SUM({}) FROM wikipedia", vec!["added"; depth + 1].join(" + "));
    check(&too_deep, parse, "deeper than");
    let wide = format!("SELECT COUNT(*) FROM wikipedia WHERE page IN ({})", vec!["'x'"; 20_000].join(", "));
    assert_eq!(sql(&wide), vec![vec![serde_json::json!(0)]]);
}

#[test]
fn subqueries_past_max_subquery_rows_are_refused() {
    let count = "SELECT COUNT(*) FROM (SELECT page FROM wikipedia)";
    let mut request = SqlRequest::new(count);
    request.context.insert("maxSubqueryRows".into(), serde_json::json!(1_000));
    let e = answer(&request).expect_err("refused");
    assert!(matches!(e, SqlError::Query(_)) && e.druid_kind().2, "a client error: {e:?}");
    assert!(e.to_string().contains("context.maxSubqueryRows: a subquery returns more than 1000 rows"), "{e}");
    let grouped = "SELECT COUNT(*) FROM (SELECT page FROM wikipedia GROUP BY page)";
    let mut request = SqlRequest::new(grouped);
    request.context.insert("maxSubqueryRows".into(), serde_json::json!(1_000));
    assert!(answer(&request).expect_err("refused").to_string().contains("more than 1000 rows"));
    request.context.insert("maxSubqueryBytes".into(), serde_json::json!(10_000));
    request.context.insert("maxSubqueryRows".into(), serde_json::json!(100_000));
    assert!(answer(&request).expect_err("refused").to_string().contains("pass 10000 bytes"));
    assert_eq!(sql(count), [[serde_json::json!(39_244)]], "within the bound by default");
}

#[test]
fn scans_past_max_scatter_gather_bytes_are_refused() {
    let mut request = SqlRequest::new("SELECT * FROM wikipedia");
    request.context.insert("maxScatterGatherBytes".into(), serde_json::json!(100_000));
    let e = answer(&request).expect_err("refused");
    assert!(e.druid_kind().2 && e.to_string().contains("passes 100000 bytes"), "{e}");
}

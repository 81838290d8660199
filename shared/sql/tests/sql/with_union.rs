//! `WITH` (each name read as the subquery it names) and a top-level `UNION ALL` (each branch
//! its own query, rows appended), against the same queries written without them.

use super::*;
use serde_json::json;

#[test]
fn with_names_read_as_the_subqueries_they_name() {
    let with = sql("WITH per_channel AS (SELECT channel, COUNT(*) AS n FROM wikipedia GROUP BY channel), \
        busy AS (SELECT channel, n FROM per_channel WHERE n > 1000) \
        SELECT COUNT(*), SUM(n) FROM busy");
    let nested = sql("SELECT COUNT(*), SUM(n) FROM (SELECT channel, n FROM \
        (SELECT channel, COUNT(*) AS n FROM wikipedia GROUP BY channel) WHERE n > 1000)");
    assert_eq!(with, nested);
    assert!(with[0][0].as_i64().is_some_and(|c| c > 0), "{with:?}");
    // A name shadows a datasource of the same name, and takes the alias it is read under.
    let shadowed = sql("WITH wikipedia AS (SELECT page FROM wikipedia WHERE channel = '#en.wikipedia') \
        SELECT COUNT(*) FROM wikipedia w WHERE w.page IS NOT NULL");
    assert_eq!(shadowed, sql("SELECT COUNT(*) FROM wikipedia WHERE channel = '#en.wikipedia' AND page IS NOT NULL"));
}

#[test]
fn with_refuses_recursion_column_lists_and_runaway_copies() {
    let mut doubling = String::from("WITH c0 AS (SELECT page FROM wikipedia)");
    for i in 1..=10 {
        doubling.push_str(&format!(
            ", c{i} AS (SELECT page FROM (SELECT page FROM c{p}) WHERE page IN (SELECT page FROM c{p}))",
            p = i - 1
        ));
    }
    doubling.push_str(" SELECT COUNT(*) FROM c10");
    for (text, expected) in [
        ("WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r", "WITH RECURSIVE"),
        ("WITH t (a) AS (SELECT page FROM wikipedia) SELECT a FROM t", "name the columns"),
        (doubling.as_str(), "copy more than 256 subqueries"),
    ] {
        refused_naming(text, expected);
    }
}

#[test]
fn union_all_appends_each_branchs_rows_under_the_first_branchs_names() {
    let got = sql("SELECT 'robots' AS kind, COUNT(*) AS n FROM wikipedia WHERE isRobot = 'true' \
        UNION ALL SELECT 'people', COUNT(*) FROM wikipedia WHERE isRobot = 'false' \
        UNION ALL SELECT 'all', COUNT(*) FROM wikipedia");
    let robots = sql("SELECT COUNT(*) FROM wikipedia WHERE isRobot = 'true'")[0][0].clone();
    let people = sql("SELECT COUNT(*) FROM wikipedia WHERE isRobot = 'false'")[0][0].clone();
    assert_eq!(
        got,
        vec![vec![json!("robots"), robots], vec![json!("people"), people], vec![json!("all"), json!(39_244)]]
    );
    let r = answer(&SqlRequest::new(
        "(SELECT channel AS c FROM wikipedia LIMIT 1) UNION ALL (SELECT page FROM wikipedia LIMIT 2)",
    ))
    .expect("answers");
    assert_eq!((r.columns[0].name.as_str(), r.rows.len()), ("c", 3));
    // WITH over a union: each branch reads the names.
    let with = sql("WITH t AS (SELECT COUNT(*) AS n FROM wikipedia) SELECT n FROM t UNION ALL SELECT n + 1 FROM t");
    assert_eq!(with, vec![vec![json!(39_244)], vec![json!(39_245)]]);
    // ORDER BY and LIMIT over the whole union; a union inside a subquery.
    assert_eq!(
        sql("SELECT 1 AS x UNION ALL SELECT 3 UNION ALL SELECT 2 ORDER BY x DESC LIMIT 2"),
        [[json!(3)], [json!(2)]]
    );
    let both = sql("SELECT COUNT(*), COUNT(DISTINCT channel) FROM \
                    (SELECT channel FROM wikipedia UNION ALL SELECT channel FROM wikipedia WHERE isRobot = 'true')");
    let robots = sql("SELECT COUNT(*) FROM wikipedia WHERE isRobot = 'true'")[0][0].as_i64().expect("count");
    assert_eq!(both[0][0], json!(39_244 + robots));
    let three = "SELECT COUNT(*) FROM (SELECT channel FROM wikipedia UNION ALL SELECT channel FROM wikipedia \
                 UNION ALL SELECT channel FROM wikipedia)";
    refused_naming(three, "more than 100000 rows (Druid's maxSubqueryRows)");
    for (text, expected) in [
        ("SELECT 1 UNION SELECT 2", "UNION without ALL"),
        ("SELECT n FROM (SELECT 1 AS n UNION SELECT 2)", "UNION without ALL"),
        ("SELECT 1 UNION ALL SELECT 1, 2", "branch 2 has 2 columns"),
        ("SELECT 1 AS x UNION ALL SELECT 2 ORDER BY x + 1", "ORDER BY an expression over a UNION ALL"),
        ("EXPLAIN PLAN FOR SELECT 1 UNION ALL SELECT 2", "EXPLAIN of a UNION ALL"),
        ("SELECT 1 INTERSECT SELECT 1", "INTERSECT"),
    ] {
        refused_naming(text, expected);
    }
}

#[test]
fn with_names_users_write_are_only_names() {
    // A quoted name may hold anything, a NUL too: it names a table, never another name's
    // subquery, so that chains of such names cannot copy past the bounds.
    let mut chain = String::from("WITH c0 AS (SELECT page FROM wikipedia)");
    for i in 1..=12 {
        chain.push_str(&format!(
            ", c{i} AS (SELECT page FROM \"\u{0}with#{p}\" WHERE page IN (SELECT page FROM \"\u{0}with#{p}\"))",
            p = i - 1
        ));
    }
    chain.push_str(" SELECT COUNT(*) FROM c12");
    refused_naming(&chain, "with#11");
    // Only c12's body is copied in: none of the names it reads is another name's.
    let parsed = sluice_sql::parse::parse(&chain, &[]).expect("parses");
    let nodes = sluice_sql::measure::nodes(&parsed.query);
    assert!(nodes < 20, "{nodes} nodes: {}", parsed.query);
}

#[test]
fn with_copies_are_bounded_by_the_nodes_they_add() {
    // Few copies (64), each of a 5,000-value IN list: 320,000 nodes, past the bound before the
    // copies are made.
    let list = vec!["'p'"; 5_000].join(", ");
    let mut doubling = format!("WITH c0 AS (SELECT page FROM wikipedia WHERE page IN ({list}))");
    for i in 1..=6 {
        doubling
            .push_str(&format!(", c{i} AS (SELECT page FROM c{p} WHERE page IN (SELECT page FROM c{p}))", p = i - 1));
    }
    doubling.push_str(" SELECT COUNT(*) FROM c6");
    refused_naming(&doubling, &format!("more than {} expressions", sluice_sql::measure::MAX_NODES));
    // A nested WITH's copies count with the outer's: 64 reads of a name whose body reads its
    // own name 64 times copy 4,160 subqueries.
    let reads = |name: &str| vec![format!("SELECT page FROM {name}"); 64].join(" UNION ALL ");
    let nested = format!(
        "WITH a AS (WITH x AS (SELECT page FROM wikipedia) SELECT COUNT(*) AS n FROM ({})) \
         SELECT COUNT(*) FROM ({})",
        reads("x"),
        reads("a").replace("SELECT page", "SELECT n")
    );
    refused_naming(&nested, "copy more than 256 subqueries");
    // Few nodes, many bytes: a 200 KB literal read 21 times.
    let long = format!("WITH a AS (SELECT '{}' AS s) SELECT COUNT(*) FROM ({})", "x".repeat(200_000), {
        vec!["SELECT s FROM a"; 21].join(" UNION ALL ")
    });
    refused_naming(&long, &format!("more than {} bytes of text", sluice_sql::measure::MAX_TEXT_BYTES));
    // The same list read once is answered.
    assert_eq!(
        sql(&format!("WITH c0 AS (SELECT page FROM wikipedia WHERE page IN ({list})) SELECT COUNT(*) FROM c0")),
        [[json!(0)]]
    );
}

#[test]
fn a_union_all_answer_is_bounded_whole_not_by_branch() {
    // Each branch returns about 40 KB; 64 of them pass a 1 MiB answer that each alone is within.
    let branch = "(SELECT page FROM wikipedia LIMIT 2000)";
    let one = answer(&request(branch, 1 << 20)).expect("one branch is within the bound");
    assert_eq!(one.rows.len(), 2000);
    let union = vec![branch; 64].join(" UNION ALL ");
    let e = answer(&request(&union, 1 << 20)).expect_err("the union passes the bound").to_string();
    // Refused by the branch's native query, given only what the branches before it left, or by
    // the rows it returns.
    assert!(e.contains("bytes (context.maxScatterGatherBytes)"), "{e}");
    // What a branch reads inside is not its answer: a count over a subquery of 20,000 pages
    // (about 560 KB) after branches that took more than half the bytes is answered.
    let heavy = [branch; 10].join(" UNION ALL ");
    let counted = format!("{heavy} UNION ALL (SELECT COUNT(*) FROM (SELECT page FROM wikipedia LIMIT 20000))");
    let r = answer(&request(&counted, 1 << 20)).expect("the count is one row");
    assert_eq!(r.rows.last().expect("rows")[0], json!(20_000));
    // Within the bound, every branch's rows are returned.
    let small = vec!["(SELECT page FROM wikipedia LIMIT 10)"; 64].join(" UNION ALL ");
    assert_eq!(answer(&request(&small, 1 << 20)).expect("within").rows.len(), 640);
}

fn request(text: &str, max_bytes: usize) -> SqlRequest {
    let mut r = SqlRequest::new(text);
    r.context.insert("maxScatterGatherBytes".into(), json!(max_bytes));
    r
}

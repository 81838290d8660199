//! INFORMATION_SCHEMA and sys.segments, queried as the SQLAlchemy dialects and consoles do.

use super::*;
use serde_json::json;

#[test]
fn tables_and_schemata_list_the_datasource() {
    let tables = sql("SELECT TABLE_NAME FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = 'druid'");
    assert_eq!(tables, vec![vec![json!("wikipedia")]]);
    let exists = sql("SELECT COUNT(*) > 0 AS exists_ FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME = 'wikipedia'");
    assert_eq!(exists, vec![vec![json!(true)]]);
    let missing = sql("SELECT COUNT(*) > 0 AS exists_ FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME = 'nope'");
    assert_eq!(missing, vec![vec![json!(false)]]);
    let schemas = sql("SELECT SCHEMA_NAME FROM INFORMATION_SCHEMA.SCHEMATA ORDER BY SCHEMA_NAME");
    assert!(schemas.contains(&vec![json!("druid")]) && schemas.contains(&vec![json!("INFORMATION_SCHEMA")]));
}

#[test]
fn columns_have_druid_sql_types_in_order() {
    let cols = sql("SELECT COLUMN_NAME, DATA_TYPE, IS_NULLABLE, JDBC_TYPE, ORDINAL_POSITION FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = 'wikipedia' AND TABLE_SCHEMA = 'druid'");
    let by_name = |n: &str| cols.iter().find(|r| r[0] == json!(n)).unwrap_or_else(|| panic!("{n} in {cols:?}")).clone();
    assert_eq!(by_name("__time"), vec![json!("__time"), json!("TIMESTAMP"), json!("NO"), json!(93), json!(1)]);
    assert_eq!(by_name("channel")[1], json!("VARCHAR"));
    assert_eq!(by_name("added")[1], json!("BIGINT"));
    assert_eq!(by_name("channel")[3], json!(12));
    let n = cols.len();
    let mut positions: Vec<i64> = cols.iter().map(|r| r[4].as_i64().expect("position")).collect();
    positions.sort();
    assert_eq!(positions, (1..=n as i64).collect::<Vec<_>>());
    // Every column of the table answers a query.
    for r in &cols {
        let name = r[0].as_str().expect("name");
        let q = format!("SELECT COUNT(\"{name}\") FROM wikipedia");
        assert_eq!(sql(&q).len(), 1, "{q}");
    }
}

#[test]
fn sys_segments_lists_the_visible_segments() {
    let rows = sql("SELECT datasource, COUNT(*), SUM(num_rows) FROM sys.segments GROUP BY datasource");
    let segments = wikipedia().tables["wikipedia"].len();
    let total: u64 = wikipedia().tables["wikipedia"].iter().map(|s| s.segment.num_rows() as u64).sum();
    assert_eq!(rows, vec![vec![json!("wikipedia"), json!(segments), json!(total)]]);
    let first = sql("SELECT \"start\", \"end\", version, partition_num FROM sys.segments LIMIT 1");
    let (start, end) = (first[0][0].as_str().expect("start"), first[0][1].as_str().expect("end"));
    assert!(start < end && start.starts_with("2015-09-12T"), "{first:?}");
    assert_eq!((first[0][2].clone(), first[0][3].clone()), (json!("v1"), json!(0)), "{first:?}");
}

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

#[test]
fn sys_server_segments_lists_every_visible_segment_once_under_the_historical_of_sys_servers() {
    let servers = sql("SELECT server, server_type, tier, current_size FROM sys.servers ORDER BY server_type");
    let bytes: u64 = sql("SELECT SUM(size) FROM sys.segments")[0][0].as_u64().expect("size");
    assert_eq!(servers.len(), 2, "{servers:?}");
    assert_eq!(servers[0][1..], [json!("broker"), Value::Null, json!(0)], "{servers:?}");
    assert_eq!(servers[1][1..], [json!("historical"), json!("_default_tier"), json!(bytes)], "{servers:?}");
    let served = sql("SELECT server, COUNT(*), COUNT(DISTINCT segment_id) FROM sys.server_segments GROUP BY server");
    let segments = wikipedia().tables["wikipedia"].len();
    assert_eq!(served, vec![vec![servers[1][0].clone(), json!(segments), json!(segments)]]);
    let ids = |q: &str| sql(q).into_iter().map(|r| r[0].to_string()).collect::<std::collections::BTreeSet<_>>();
    let (listed, served) =
        (ids("SELECT segment_id FROM sys.segments"), ids("SELECT segment_id FROM sys.server_segments"));
    assert_eq!(listed, served, "the ids of sys.segments, each served");
}

/// The sample, with two supervisors and three tasks.
struct WithIngestion;

#[async_trait::async_trait]
impl sluice_sql::Segments for WithIngestion {
    async fn datasources(&self) -> Result<Vec<String>, SqlError> {
        wikipedia().datasources().await
    }

    async fn segments(
        &self,
        datasource: &str,
        intervals: &[sluice_format::time::Interval],
        plan: Option<&sluice_query::ReadPlan>,
    ) -> Result<Arc<Vec<QuerySegment>>, SqlError> {
        wikipedia().segments(datasource, intervals, plan).await
    }

    async fn supervisors(&self) -> Result<Vec<sluice_sql::SupervisorRow>, SqlError> {
        let row = |id: &str, state: &str, healthy: bool| sluice_sql::SupervisorRow {
            id: id.into(),
            state: state.into(),
            detailed_state: state.into(),
            healthy,
            source: format!("{id}-topic"),
            suspended: state == "SUSPENDED",
            spec: format!("{{\"dataSource\":\"{id}\"}}"),
        };
        Ok(vec![row("wikipedia", "RUNNING", true), row("edits", "SUSPENDED", true)])
    }

    async fn tasks(&self) -> Result<Vec<sluice_sql::TaskRow>, SqlError> {
        let row = |seq: u32, status: &str, duration_ms: i64| sluice_sql::TaskRow {
            id: format!("wikipedia_0000_{seq:012}"),
            group_id: "index_kafka_wikipedia".into(),
            kind: "index_kafka".into(),
            datasource: "wikipedia".into(),
            created_time: format!("2026-12-06T00:00:0{seq}.000Z"),
            status: status.into(),
            runner_status: if status == "RUNNING" { "RUNNING" } else { "NONE" }.into(),
            duration_ms,
            error: (status == "FAILED").then(|| "parse exceptions past maxParseExceptions".into()),
        };
        Ok(vec![row(1, "SUCCESS", 1_200), row(2, "FAILED", 300), row(3, "RUNNING", -1)])
    }
}

fn system_sql(text: &str) -> Vec<Vec<Value>> {
    runtime().block_on(run_sql(&WithIngestion, &SqlRequest::new(text))).unwrap_or_else(|e| panic!("{text}: {e}")).rows
}

#[test]
fn sys_supervisors_and_sys_tasks_answer_as_druid_lays_them_out() {
    let rows = system_sql(
        "SELECT supervisor_id, healthy, suspended, type, source FROM sys.supervisors WHERE state = 'SUSPENDED'",
    );
    assert_eq!(rows, vec![vec![json!("edits"), json!(1), json!(1), json!("kafka"), json!("edits-topic")]]);
    let rows = system_sql(
        "SELECT status, COUNT(*), SUM(duration) FROM sys.tasks WHERE duration >= 0 GROUP BY status ORDER BY status",
    );
    assert_eq!(rows, vec![vec![json!("FAILED"), json!(1), json!(300)], vec![json!("SUCCESS"), json!(1), json!(1_200)]]);
    let rows = system_sql("SELECT task_id, location, host, plaintext_port, tls_port, error_msg FROM sys.tasks WHERE runner_status = 'NONE' ORDER BY created_time DESC LIMIT 1");
    let failed = "parse exceptions past maxParseExceptions";
    assert_eq!(
        rows,
        vec![vec![json!("wikipedia_0000_000000000002"), Value::Null, Value::Null, json!(-1), json!(-1), json!(failed)]]
    );
    // Druid's columns, in Druid's order, listed as tools list them.
    let columns = system_sql("SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = 'sys' AND TABLE_NAME = 'tasks' ORDER BY ORDINAL_POSITION");
    let names: Vec<&str> = columns.iter().filter_map(|r| r[0].as_str()).collect();
    assert_eq!(names[..5], ["task_id", "group_id", "type", "datasource", "created_time"]);
    assert_eq!(names.len(), 14);
    // A datasource's query beside them still reads its segments.
    let joined = system_sql("SELECT COUNT(*) FROM wikipedia");
    assert_eq!(joined, vec![vec![json!(39_244)]]);
}

#[test]
fn a_source_without_ingestion_metadata_refuses_sys_tasks_by_name() {
    for table in ["sys.tasks", "sys.supervisors"] {
        let message = sql_error(&format!("SELECT * FROM {table}")).to_string();
        assert!(message.contains(table), "{message}");
    }
}

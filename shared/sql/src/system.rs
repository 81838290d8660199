//! The metadata tables tools introspect: `INFORMATION_SCHEMA.SCHEMATA`, `TABLES` and
//! `COLUMNS`, `sys.segments`, `sys.supervisors` and `sys.tasks`, as Druid lays them out.

use crate::catalog::Schemas;
use crate::types::{Column, SqlType};
use serde_json::{json, Value};

/// A metadata table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SystemTable {
    /// `INFORMATION_SCHEMA.SCHEMATA`.
    Schemata,
    /// `INFORMATION_SCHEMA.TABLES`.
    Tables,
    /// `INFORMATION_SCHEMA.COLUMNS`.
    Columns,
    /// `sys.segments`.
    Segments,
    /// `sys.servers`.
    Servers,
    /// `sys.server_segments`.
    ServerSegments,
    /// `sys.supervisors`.
    Supervisors,
    /// `sys.tasks`.
    Tasks,
}

const SCHEMAS: [&str; 3] = ["druid", "INFORMATION_SCHEMA", "sys"];

/// Every metadata table by its schema and name.
pub const SYSTEM_TABLES: [(&str, &str, SystemTable); 8] = [
    ("INFORMATION_SCHEMA", "SCHEMATA", SystemTable::Schemata),
    ("INFORMATION_SCHEMA", "TABLES", SystemTable::Tables),
    ("INFORMATION_SCHEMA", "COLUMNS", SystemTable::Columns),
    ("sys", "segments", SystemTable::Segments),
    ("sys", "servers", SystemTable::Servers),
    ("sys", "server_segments", SystemTable::ServerSegments),
    ("sys", "supervisors", SystemTable::Supervisors),
    ("sys", "tasks", SystemTable::Tasks),
];

impl SystemTable {
    /// An `INFORMATION_SCHEMA` table by its lower-case name.
    pub fn information_schema(name: &str) -> Option<Self> {
        match name {
            "schemata" => Some(SystemTable::Schemata),
            "tables" => Some(SystemTable::Tables),
            "columns" => Some(SystemTable::Columns),
            _ => None,
        }
    }

    /// A `sys` table by its lower-case name.
    pub fn sys(name: &str) -> Option<Self> {
        match name {
            "segments" => Some(SystemTable::Segments),
            "servers" => Some(SystemTable::Servers),
            "server_segments" => Some(SystemTable::ServerSegments),
            "supervisors" => Some(SystemTable::Supervisors),
            "tasks" => Some(SystemTable::Tasks),
            _ => None,
        }
    }

    /// Whether reading it needs every datasource's schema.
    pub fn needs_schemas(self) -> bool {
        matches!(
            self,
            SystemTable::Tables
                | SystemTable::Columns
                | SystemTable::Segments
                | SystemTable::Servers
                | SystemTable::ServerSegments
        )
    }

    /// Its columns.
    pub fn columns(self) -> Vec<Column> {
        let v = |n: &str| Column::new(n, SqlType::Varchar);
        let b = |n: &str| Column::new(n, SqlType::Bigint);
        match self {
            SystemTable::Schemata => vec![
                v("CATALOG_NAME"),
                v("SCHEMA_NAME"),
                v("SCHEMA_OWNER"),
                v("DEFAULT_CHARACTER_SET_CATALOG"),
                v("DEFAULT_CHARACTER_SET_SCHEMA"),
                v("DEFAULT_CHARACTER_SET_NAME"),
                v("SQL_PATH"),
            ],
            SystemTable::Tables => vec![
                v("TABLE_CATALOG"),
                v("TABLE_SCHEMA"),
                v("TABLE_NAME"),
                v("TABLE_TYPE"),
                v("IS_JOINABLE"),
                v("IS_BROADCAST"),
            ],
            SystemTable::Columns => vec![
                v("TABLE_CATALOG"),
                v("TABLE_SCHEMA"),
                v("TABLE_NAME"),
                v("COLUMN_NAME"),
                b("ORDINAL_POSITION"),
                v("COLUMN_DEFAULT"),
                v("IS_NULLABLE"),
                v("DATA_TYPE"),
                b("CHARACTER_MAXIMUM_LENGTH"),
                b("CHARACTER_OCTET_LENGTH"),
                b("NUMERIC_PRECISION"),
                b("NUMERIC_PRECISION_RADIX"),
                b("NUMERIC_SCALE"),
                b("DATETIME_PRECISION"),
                v("CHARACTER_SET_NAME"),
                v("COLLATION_NAME"),
                b("JDBC_TYPE"),
            ],
            SystemTable::Segments => vec![
                v("segment_id"),
                v("datasource"),
                v("start"),
                v("end"),
                b("size"),
                v("version"),
                b("partition_num"),
                b("num_replicas"),
                b("num_rows"),
                b("is_active"),
                b("is_published"),
                b("is_available"),
                b("is_realtime"),
                b("is_overshadowed"),
                v("shard_spec"),
                v("dimensions"),
                v("metrics"),
                v("last_compaction_state"),
                b("replication_factor"),
            ],
            SystemTable::Servers => vec![
                v("server"),
                v("host"),
                b("plaintext_port"),
                b("tls_port"),
                v("server_type"),
                v("tier"),
                b("current_size"),
                b("max_size"),
                b("is_leader"),
                v("start_time"),
            ],
            SystemTable::ServerSegments => vec![v("server"), v("segment_id")],
            SystemTable::Supervisors => vec![
                v("supervisor_id"),
                v("state"),
                v("detailed_state"),
                b("healthy"),
                v("type"),
                v("source"),
                b("suspended"),
                v("spec"),
            ],
            SystemTable::Tasks => vec![
                v("task_id"),
                v("group_id"),
                v("type"),
                v("datasource"),
                v("created_time"),
                v("queue_insertion_time"),
                v("status"),
                v("runner_status"),
                b("duration"),
                v("location"),
                v("host"),
                b("plaintext_port"),
                b("tls_port"),
                v("error_msg"),
            ],
        }
    }

    /// Its rows (values in column order).
    pub fn rows(self, schemas: &Schemas) -> Vec<Vec<Value>> {
        match self {
            SystemTable::Schemata => SCHEMAS
                .iter()
                .map(|s| {
                    vec![json!("druid"), json!(s), Value::Null, Value::Null, Value::Null, Value::Null, Value::Null]
                })
                .collect(),
            SystemTable::Tables => {
                let mut rows: Vec<Vec<Value>> = schemas
                    .tables
                    .keys()
                    .map(|t| vec![json!("druid"), json!("druid"), json!(t), json!("TABLE"), json!("NO"), json!("NO")])
                    .collect();
                for (schema, table, _) in SYSTEM_TABLES {
                    rows.push(vec![
                        json!("druid"),
                        json!(schema),
                        json!(table),
                        json!("SYSTEM_TABLE"),
                        json!("NO"),
                        json!("NO"),
                    ]);
                }
                rows
            }
            SystemTable::Columns => {
                let mut rows = Vec::new();
                for (table, columns) in &schemas.tables {
                    for (i, c) in columns.iter().enumerate() {
                        rows.push(column_row("druid", table, i, c));
                    }
                }
                for (schema, name, t) in SYSTEM_TABLES {
                    for (i, c) in t.columns().iter().enumerate() {
                        rows.push(column_row(schema, name, i, c));
                    }
                }
                rows
            }
            SystemTable::Segments => schemas
                .segments
                .iter()
                .map(|s| {
                    let rest = s.id.strip_prefix(&format!("{}_", s.datasource)).unwrap_or(&s.id);
                    let mut pieces = rest.splitn(3, '_').skip(2);
                    let tail = pieces.next().unwrap_or("");
                    let (version, partition) = match tail.rsplit_once('_') {
                        Some((v, p)) if p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty() => {
                            (v.to_string(), p.parse::<u64>().unwrap_or(0))
                        }
                        _ => (tail.to_string(), 0),
                    };
                    vec![
                        json!(s.id),
                        json!(s.datasource),
                        json!(s.start),
                        json!(s.end),
                        json!(s.size),
                        json!(version),
                        json!(partition),
                        json!(1),
                        json!(s.num_rows),
                        json!(1),
                        json!(1),
                        json!(1),
                        json!(0),
                        json!(0),
                        json!(json!({"type": "numbered", "partitionNum": partition, "partitions": 0}).to_string()),
                        json!(serde_json::to_string(&s.dimensions).unwrap_or_default()),
                        json!(serde_json::to_string(&s.metrics).unwrap_or_default()),
                        Value::Null,
                        json!(1),
                    ]
                })
                .collect(),
            SystemTable::Servers => {
                let bytes = schemas.segments.iter().map(|s| s.size).sum();
                schemas.servers.iter().map(|s| s.values(bytes)).collect()
            }
            SystemTable::ServerSegments => schemas
                .servers
                .iter()
                .filter(|s| s.serves_segments)
                .flat_map(|s| schemas.segments.iter().map(|seg| vec![json!(s.server), json!(seg.id)]))
                .collect(),
            SystemTable::Supervisors => schemas.supervisors.iter().map(|s| s.values()).collect(),
            SystemTable::Tasks => schemas.tasks.iter().map(|t| t.values()).collect(),
        }
    }
}

fn column_row(schema: &str, table: &str, i: usize, c: &Column) -> Vec<Value> {
    let nullable = if c.name == "__time" { "NO" } else { "YES" };
    let (precision, radix) = match c.ty {
        SqlType::Bigint => (json!(19), json!(10)),
        SqlType::Double => (json!(15), json!(10)),
        SqlType::Float => (json!(7), json!(10)),
        _ => (Value::Null, Value::Null),
    };
    vec![
        json!("druid"),
        json!(schema),
        json!(table),
        json!(c.name),
        json!(i as i64 + 1),
        Value::Null,
        json!(nullable),
        json!(c.ty.sql_name()),
        Value::Null,
        Value::Null,
        precision,
        radix,
        if c.ty.is_integer() && c.ty != SqlType::Timestamp { json!(0) } else { Value::Null },
        if c.ty == SqlType::Timestamp { json!(3) } else { Value::Null },
        if c.ty == SqlType::Varchar { json!("UTF-16LE") } else { Value::Null },
        if c.ty == SqlType::Varchar { json!("UTF-16LE$en_US$primary") } else { Value::Null },
        json!(c.ty.jdbc_type()),
    ]
}

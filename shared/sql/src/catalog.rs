//! The datasources SQL sees: each with visible segments, its columns read from the segments'
//! directories (`__time` first, then by name).

use crate::types::{Column, SqlType};
use sluice_format::time::Interval;
use sluice_query::QuerySegment;
use std::collections::BTreeMap;

/// One visible segment, as `sys.segments` shows it.
#[derive(Debug, Clone)]
pub struct SegmentInfo {
    /// Its datasource.
    pub datasource: String,
    /// Druid's segment id.
    pub id: String,
    /// Time chunk start, ISO 8601.
    pub start: String,
    /// Time chunk end, ISO 8601.
    pub end: String,
    /// Its time chunk.
    pub interval: Interval,
    /// Bytes.
    pub size: u64,
    /// Rows.
    pub num_rows: u64,
    /// Dimension names.
    pub dimensions: Vec<String>,
    /// Metric names.
    pub metrics: Vec<String>,
}

/// The datasources' columns and segments, and the supervisors and tasks when a query reads
/// them.
#[derive(Debug, Clone, Default)]
pub struct Schemas {
    /// Columns of each datasource with segments.
    pub tables: BTreeMap<String, Vec<Column>>,
    /// Every visible segment read.
    pub segments: Vec<SegmentInfo>,
    /// The supervisors (read only for `sys.supervisors`).
    pub supervisors: Vec<crate::ingestion::SupervisorRow>,
    /// The tasks (read only for `sys.tasks`).
    pub tasks: Vec<crate::ingestion::TaskRow>,
    /// The servers (read only for `sys.servers` and `sys.server_segments`).
    pub servers: Vec<crate::servers::ServerRow>,
    /// The lookups (the `lookup` schema's tables, what `LOOKUP()` reads), one version each.
    pub lookups: std::sync::Arc<sluice_format::lookup::Lookups>,
}

/// One datasource as SQL sees it: its columns and its visible segments.
#[derive(Debug, Clone)]
pub struct Table {
    /// `__time`, then the other columns by name, each with the widest type its segments give.
    pub columns: Vec<Column>,
    /// Its visible segments.
    pub segments: Vec<SegmentInfo>,
}

impl Table {
    /// The table of `datasource` from its visible segments (whose directories are all that is
    /// read); `None` without segments: it is not a table, as in Druid.
    pub fn of(datasource: &str, segments: &[QuerySegment]) -> Option<Self> {
        if segments.is_empty() {
            return None;
        }
        let mut columns: BTreeMap<String, SqlType> = BTreeMap::new();
        let mut infos = Vec::with_capacity(segments.len());
        for seg in segments {
            let directory = seg.segment.directory();
            let mut info = SegmentInfo {
                datasource: datasource.to_string(),
                id: seg.id.clone(),
                start: sluice_format::time::format_iso(seg.interval.start),
                end: sluice_format::time::format_iso(seg.interval.end),
                interval: seg.interval,
                size: seg.segment.size() as u64,
                num_rows: seg.segment.num_rows() as u64,
                dimensions: Vec::new(),
                metrics: Vec::new(),
            };
            for entry in directory.columns.iter().filter(|c| !c.is_path()) {
                let ty = SqlType::of_column(entry);
                match entry.kind {
                    sluice_format::segment::ColumnType::Time => {}
                    sluice_format::segment::ColumnType::Metric => info.metrics.push(entry.name.clone()),
                    _ => info.dimensions.push(entry.name.clone()),
                }
                columns.entry(entry.name.clone()).and_modify(|known| *known = widen(known, &ty)).or_insert(ty);
            }
            infos.push(info);
        }
        let mut list = vec![Column::new("__time", SqlType::Timestamp)];
        list.extend(columns.into_iter().filter(|(n, _)| n != "__time").map(|(n, t)| Column::new(n, t)));
        Some(Table { columns: list, segments: infos })
    }
}

impl Schemas {
    /// Adds a datasource from its visible segments (none: it is not a table, as in Druid).
    pub fn add(&mut self, datasource: &str, segments: &[QuerySegment]) {
        if let Some(table) = Table::of(datasource, segments) {
            self.insert(datasource, &table);
        }
    }

    /// Adds a datasource's table.
    pub fn insert(&mut self, datasource: &str, table: &Table) {
        self.tables.insert(datasource.to_string(), table.columns.clone());
        self.segments.extend(table.segments.iter().cloned());
    }
}

/// The type of a column whose segments disagree (an `auto` column): documents over the rest,
/// strings over numbers, doubles over longs.
fn widen(a: &SqlType, b: &SqlType) -> SqlType {
    let json = |t: &SqlType| matches!(t, SqlType::Complex(k) if k == "json");
    match (a, b) {
        (a, b) if a == b => a.clone(),
        (j, _) | (_, j) if json(j) => j.clone(),
        (SqlType::Varchar, _) | (_, SqlType::Varchar) => SqlType::Varchar,
        (a, b) if a.is_numeric() && b.is_numeric() => SqlType::Double,
        (a, _) => a.clone(),
    }
}

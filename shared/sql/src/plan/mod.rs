//! Planning: a parsed SELECT into one native query (timeseries, topN, groupBy or scan) over a
//! datasource, a system table or a subquery's rows, with how each result column is read
//! from the native answer.
//!
//! As Druid's planner does: no GROUP BY, or only a time floor, is a timeseries; one string
//! key ordered by an aggregate with a LIMIT is a topN; other grouping is a groupBy (time
//! floors as virtual-column keys); no aggregation is a scan. Conditions on `__time` that
//! bound it become the query's intervals, the rest native filters; expressions become
//! virtual columns.

mod aggregate;
mod filter;
mod grouped;
mod intervals;
mod joins;
mod json_calls;
mod names;
mod parts;
mod relations;
mod scalar;
mod select;
mod sketch_calls;
mod time;
mod time_calls;
mod unions;
mod virtuals;
mod windows;

pub use joins::{inline_rows, JoinPlan, JoinSide};
pub use names::object_path;
pub use scalar::{Const, Scalar};
pub use select::plan_query;
pub use time::tz;
pub use unions::field as union_field;
pub use windows::WindowStage;

use crate::system::SystemTable;
use crate::types::Column;
use serde_json::Value;

/// What a plan reads.
#[derive(Debug, Clone)]
pub enum Input {
    /// A datasource.
    Table(String),
    /// The rows of a subquery.
    Inline(Box<Plan>),
    /// A metadata table.
    System(SystemTable),
    /// A lookup's entries, as rows of `k` and `v`.
    Lookup(String),
    /// A query's rows with window functions computed over them.
    Windowed(Box<WindowStage>),
    /// The rows of each branch of a `UNION ALL`, appended.
    Union(Vec<Plan>),
    /// No table: a select list of constants.
    Nothing,
}

/// Where a result column's values come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A field of the native result rows.
    Field(String),
    /// The time bucket of a timeseries row.
    Timestamp,
    /// A constant.
    Const(Value),
    /// A Druid expression over the fields of a native result row, computed after the query.
    Expression(String),
}

/// One result column.
#[derive(Debug, Clone)]
pub struct Output {
    /// Its name and type.
    pub column: Column,
    /// Where its values come from.
    pub source: Source,
}

/// Rows sorted and cut after the native query (a scan of in-memory rows ordered by other
/// columns than `__time`).
#[derive(Debug, Clone, Default)]
pub struct After {
    /// Sort keys: output index, largest first.
    pub order: Vec<(usize, bool)>,
    /// Rows skipped.
    pub offset: u64,
    /// Rows kept.
    pub limit: Option<u64>,
}

/// A planned query.
#[derive(Debug, Clone)]
pub struct Plan {
    /// What it reads.
    pub input: Input,
    /// The native query (none for a select list of constants).
    pub native: Option<Value>,
    /// The result columns.
    pub outputs: Vec<Output>,
    /// An aggregation without GROUP BY: one row even over no rows, read from these fields.
    pub one_row: Option<serde_json::Map<String, Value>>,
    /// Outputs past this many are sort keys only, dropped after sorting.
    pub visible: usize,
    /// Sorting and cutting done after the native query.
    pub after: After,
    /// The joins of its FROM clause, leftmost first.
    pub joins: Vec<JoinPlan>,
}

impl Plan {
    /// The result columns.
    pub fn columns(&self) -> Vec<Column> {
        self.outputs.iter().take(self.visible).map(|o| o.column.clone()).collect()
    }

    /// The datasources it reads, for EXPLAIN's RESOURCES.
    pub fn datasources(&self) -> Vec<String> {
        let mut out = match &self.input {
            Input::Table(t) => vec![t.clone()],
            Input::Inline(inner) => inner.datasources(),
            Input::Windowed(stage) => stage.inner.datasources(),
            Input::Union(branches) => branches.iter().flat_map(Plan::datasources).collect(),
            Input::System(_) | Input::Lookup(_) | Input::Nothing => Vec::new(),
        };
        for j in &self.joins {
            if let JoinSide::Rows(plan) = &j.right {
                out.extend(plan.datasources());
            }
        }
        out
    }
}

/// What planning needs to know.
pub struct Options<'a> {
    /// Resolves table names.
    pub catalog: &'a dyn Catalog,
    /// `CURRENT_TIMESTAMP`, in milliseconds.
    pub now_ms: i64,
    /// `COUNT(DISTINCT x)` may be approximate.
    pub approximate_count_distinct: bool,
    /// Context entries passed to native queries (`timeout`).
    pub context: serde_json::Map<String, Value>,
    /// `sqlTimeZone` when it is not UTC: a valid zone name.
    pub time_zone: Option<String>,
}

/// A table a query can read: its input and columns.
#[derive(Debug, Clone)]
pub struct Relation {
    /// What reading it means.
    pub input: Input,
    /// Its columns (a join's right columns named with its prefix).
    pub columns: Vec<Column>,
    /// The joins onto it, leftmost first.
    pub joins: Vec<JoinPlan>,
}

/// Resolves table names (`wikipedia`, `druid.wikipedia`, `INFORMATION_SCHEMA.TABLES`,
/// `sys.segments`) to relations.
pub trait Catalog {
    /// The table named by `path`, or a validation error naming it.
    fn relation(&self, path: &[String]) -> Result<Relation, crate::SqlError>;
}

//! What a query reads: a table, or a table joined to tables held in memory (Druid's `join`
//! datasource, its right side a `lookup` or `inline` rows), and the lookups the query sees.
//!
//! A join is Druid's broadcast hash join with a right side that holds each key once: every
//! right column becomes a column of the left table's rows, read through the key the condition
//! computes from the left row ([`JoinedColumn`]). The left table keeps its per-segment (and
//! fanned-out) execution; a LEFT join leaves the right columns null where no key matches, an
//! INNER join drops those rows.

use super::VirtualColumn;
use crate::QueryError;
use serde::{Deserialize, Deserializer};
use serde_json::Value as Json;
use sluice_format::expr::{BinaryOp, Expr};
use sluice_format::filter::Filter;
use sluice_format::lookup::{KeyedTable, Lookups};
use sluice_format::text::excerpt;
use sluice_format::value::Value;
use std::sync::Arc;

/// Most joins one datasource may chain.
pub const MAX_JOINS: usize = 16;

/// A query's datasource: the table whose segments are read, the joins over it and the lookups
/// its expressions and joins read (bound by [`DataSource::bind_lookups`], one version each).
#[derive(Clone, PartialEq)]
pub struct DataSource {
    /// The table read.
    pub name: String,
    /// Joins, leftmost first.
    pub joins: Vec<Join>,
    /// The lookups the query sees.
    pub lookups: Arc<Lookups>,
}

impl std::fmt::Debug for DataSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Partial results are cached by what a query computes: the lookups' versions are part of it.
        let lookups: Vec<String> = self.lookups.values().map(|l| format!("{}@{}", l.name(), l.version())).collect();
        write!(f, "DataSource({:?}, joins: {:?}, lookups: {lookups:?})", self.name, self.joins)
    }
}

impl DataSource {
    /// A table with no joins.
    pub fn table(name: impl Into<String>) -> Self {
        Self { name: name.into(), joins: Vec::new(), lookups: Arc::default() }
    }

    /// Binds the lookups the query sees.
    pub fn bind_lookups(&mut self, lookups: Arc<Lookups>) {
        self.lookups = lookups;
    }
}

/// How rows without a match are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Kept, the right columns null.
    Left,
    /// Dropped.
    Inner,
}

/// The right side of a join.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinRight {
    /// A lookup, by name: columns `k` and `v`.
    Lookup(String),
    /// Rows held in the query, keyed by the condition's right column.
    Inline(Arc<KeyedTable>),
}

/// One join: its right side, the prefix of the right columns' names and the condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    /// The right side.
    pub right: JoinRight,
    /// Columns of the right side it exposes, without the prefix.
    pub right_columns: Vec<String>,
    /// Prefix of the right columns' names in the joined rows.
    pub prefix: String,
    /// The left side of the condition, over the left rows' columns.
    pub key: Arc<JoinKey>,
    /// The right column the key is compared with, without the prefix.
    pub right_key: String,
    /// LEFT or INNER.
    pub kind: JoinKind,
}

/// The left side of a join condition: an expression over the left row.
#[derive(Debug, PartialEq)]
pub struct JoinKey {
    /// The parsed expression; its fields are slots of `inputs`.
    pub expr: Expr,
    /// The columns it reads, by slot (`None`: a slot the condition's right side took).
    pub inputs: Vec<Option<String>>,
}

/// A right column read through a join: the right row whose key equals the left row's key.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedColumn {
    /// The column's name in the joined rows (the prefix and the right column).
    pub name: String,
    /// The left key.
    pub key: Arc<JoinKey>,
    /// The right side.
    pub right: JoinRight,
    /// The right column read.
    pub column: String,
    /// What a row whose key matches nothing reads.
    pub missing: Missing,
}

/// What a key that matches no right row reads: null (a join, a lookup by default), the key
/// itself (`retainMissingValue`) or a constant (`replaceMissingValueWith`).
#[derive(Debug, Clone, PartialEq)]
pub enum Missing {
    /// Null.
    Null,
    /// The key.
    Retain,
    /// This value.
    Replace(String),
}

impl Join {
    /// The join as columns of the left rows, and the filter an INNER join adds.
    pub fn columns(&self) -> (Vec<VirtualColumn>, Option<Filter>) {
        let columns = self
            .right_columns
            .iter()
            .map(|c| {
                VirtualColumn::Joined(JoinedColumn {
                    name: format!("{}{c}", self.prefix),
                    key: self.key.clone(),
                    right: self.right.clone(),
                    column: c.clone(),
                    missing: Missing::Null,
                })
            })
            .collect();
        let mut columns: Vec<VirtualColumn> = columns;
        if self.kind == JoinKind::Inner && !self.right_columns.contains(&self.right_key) {
            // A composite key's column, read by the match condition only.
            columns.push(VirtualColumn::Joined(JoinedColumn {
                name: format!("{}{}", self.prefix, self.right_key),
                key: self.key.clone(),
                right: self.right.clone(),
                column: self.right_key.clone(),
                missing: Missing::Null,
            }));
        }
        let matched = (self.kind == JoinKind::Inner).then(|| Filter::Not {
            field: Box::new(Filter::Null { column: format!("{}{}", self.prefix, self.right_key) }),
        });
        (columns, matched)
    }
}

impl<'de> Deserialize<'de> for DataSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Json::deserialize(d)?;
        let mut joins = Vec::new();
        let name = read(&value, &mut joins).map_err(D::Error::custom)?;
        // No datasource can have such a name; refusing it keeps it out of store keys and errors.
        if let Some(problem) = sluice_format::spec::datasource_name_problem(&name) {
            return Err(D::Error::custom(format!("datasource name {problem}")));
        }
        joins.reverse();
        Ok(DataSource { name, joins, lookups: Arc::default() })
    }
}

const EXPECTED: &str = "expected a table name, {\"type\": \"table\", \"name\": ...} or {\"type\": \"join\", ...}";

/// Why a `dataSource` cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DataSourceError {
    /// Not a table, a table object or a join.
    #[error("{EXPECTED}")]
    NotATable,
    /// A datasource type not read on the left of a native query.
    #[error(
        "dataSource type {0:?} is not supported on the left of a native query ({EXPECTED}); \
         SQL reads a lookup as lookup.<name> and runs subqueries"
    )]
    LeftType(String),
    /// A datasource type not read on the right of a join.
    #[error("dataSource type {0:?} on the right of a join is not supported: expected lookup or inline")]
    RightType(String),
    /// More joins than the bound.
    #[error("more than {MAX_JOINS} joins")]
    TooManyJoins,
    /// A field the form needs is absent (or not of the form it needs).
    #[error("{form} needs {field}")]
    Needs {
        /// The form (`a join`).
        form: &'static str,
        /// The field and what it holds.
        field: &'static str,
    },
    /// A `rightPrefix` that is empty or a prefix of `__time`.
    #[error("join rightPrefix {0:?} must be non-empty and not a prefix of __time")]
    RightPrefix(String),
    /// A join type not run here.
    #[error("joinType {0} is not supported: a right side held in memory joins LEFT or INNER")]
    JoinType(&'static str),
    /// No join type, or not one of Druid's.
    #[error("joinType: expected \"LEFT\" or \"INNER\"")]
    NoJoinType,
    /// The right side of a `query` type, which native queries do not run.
    #[error(
        "a join's right side of type \"query\" is not run by native queries yet: SQL runs it \
         (JOIN (SELECT ...)), or give its rows as an \"inline\" datasource"
    )]
    QueryOnTheRight,
    /// The join condition does not parse.
    #[error("join condition: {0}")]
    ConditionSyntax(sluice_format::expr::ExprError),
    /// A condition that is not equalities between the sides.
    #[error(
        "join condition {condition:?}: expected equalities (joined by &&, at most {MAX_JOIN_KEYS}) each between \
         an expression of the left side and a column of the right side (\"{prefix}...\"); other conditions are \
         not supported"
    )]
    Condition {
        /// The condition, cut to a readable length.
        condition: String,
        /// The right side's prefix.
        prefix: String,
    },
    /// The condition names a right column the right side does not have.
    #[error("join condition {condition:?}: the right side has no column {column:?}")]
    NoRightColumn {
        /// The condition, cut to a readable length.
        condition: String,
        /// The column, cut to a readable length.
        column: String,
    },
    /// A lookup joined on another column than its key `k`.
    #[error("join condition {0:?}: a lookup is joined on its one key column \"k\"")]
    LookupKey(String),
    /// The inline rows do not make a table keyed by the condition's column.
    #[error("the join's inline rows: {0}")]
    InlineRows(sluice_format::lookup::KeyedError),
}

/// The table at the left of `value`, its joins pushed rightmost first.
fn read(value: &Json, joins: &mut Vec<Join>) -> Result<String, DataSourceError> {
    match value {
        Json::String(s) => Ok(s.clone()),
        Json::Object(o) => match o.get("type").and_then(Json::as_str) {
            Some("table") => match o.get("name") {
                Some(Json::String(name)) => Ok(name.clone()),
                _ => Err(DataSourceError::NotATable),
            },
            Some("join") => {
                if joins.len() >= MAX_JOINS {
                    return Err(DataSourceError::TooManyJoins);
                }
                joins.push(join(o)?);
                read(o.get("left").ok_or(DataSourceError::Needs { form: "a join", field: "\"left\"" })?, joins)
            }
            Some(kind) => Err(DataSourceError::LeftType(excerpt(kind, 40).into_owned())),
            None => Err(DataSourceError::NotATable),
        },
        _ => Err(DataSourceError::NotATable),
    }
}

fn join(o: &serde_json::Map<String, Json>) -> Result<Join, DataSourceError> {
    let prefix = match o.get("rightPrefix") {
        Some(Json::String(p)) if !p.is_empty() && !"__time".starts_with(p.as_str()) => p.clone(),
        Some(Json::String(p)) => return Err(DataSourceError::RightPrefix(excerpt(p, 40).into_owned())),
        _ => return Err(DataSourceError::Needs { form: "a join", field: "\"rightPrefix\"" }),
    };
    let kind = match o.get("joinType").and_then(Json::as_str) {
        Some("LEFT") => JoinKind::Left,
        Some("INNER") => JoinKind::Inner,
        Some("RIGHT") => return Err(DataSourceError::JoinType("RIGHT")),
        Some("FULL") => return Err(DataSourceError::JoinType("FULL")),
        _ => return Err(DataSourceError::NoJoinType),
    };
    let (right, right_columns) =
        right_side(o.get("right").ok_or(DataSourceError::Needs { form: "a join", field: "\"right\"" })?)?;
    let condition = o
        .get("condition")
        .and_then(Json::as_str)
        .ok_or(DataSourceError::Needs { form: "a join", field: "a \"condition\" expression" })?;
    let (key, right_keys) = condition_parts(condition, &prefix)?;
    if let Some(missing) = right_keys.iter().find(|k| !right_columns.contains(k)) {
        return Err(DataSourceError::NoRightColumn {
            condition: excerpt(condition, 120).into_owned(),
            column: excerpt(missing, 80).into_owned(),
        });
    }
    let right_key = match right_keys.as_slice() {
        [one] => one.clone(),
        _ => COMPOSITE_KEY.to_string(),
    };
    let right = match right {
        RightRows::Lookup(_) if right_keys.len() > 1 => {
            return Err(DataSourceError::LookupKey(excerpt(condition, 120).into_owned()))
        }
        RightRows::Lookup(name) => JoinRight::Lookup(name),
        RightRows::Inline(mut columns, mut rows) => {
            if right_keys.len() > 1 {
                // Several equalities: the right rows keyed by their key columns' values together.
                let at: Vec<usize> = right_keys.iter().filter_map(|k| columns.iter().position(|c| c == k)).collect();
                for row in &mut rows {
                    let parts: Option<Vec<String>> =
                        at.iter().map(|&i| row[i].as_str().map(|s| format!("{}:{s}", s.chars().count()))).collect();
                    row.push(parts.map_or(Value::Null, |p| Value::String(p.join(KEY_SEPARATOR))));
                }
                columns.push(COMPOSITE_KEY.to_string());
            }
            JoinRight::Inline(
                KeyedTable::from_rows("inline", columns, &right_key, rows).map_err(DataSourceError::InlineRows)?,
            )
        }
    };
    if matches!(right, JoinRight::Lookup(_)) && right_key != "k" {
        return Err(DataSourceError::LookupKey(excerpt(condition, 120).into_owned()));
    }
    Ok(Join { right, right_columns, prefix, key: Arc::new(key), right_key, kind })
}

enum RightRows {
    Lookup(String),
    Inline(Vec<String>, Vec<Vec<Value>>),
}

fn right_side(value: &Json) -> Result<(RightRows, Vec<String>), DataSourceError> {
    let kind = value.get("type").and_then(Json::as_str);
    match kind {
        Some("lookup") => match value.get("lookup") {
            Some(Json::String(name)) => Ok((RightRows::Lookup(name.clone()), vec!["k".into(), "v".into()])),
            _ => Err(DataSourceError::Needs { form: "a lookup datasource", field: "\"lookup\": the lookup's name" }),
        },
        Some("inline") => {
            let columns: Vec<String> = match value.get("columnNames") {
                Some(Json::Array(a)) => a.iter().map(|c| c.as_str().map(str::to_string)).collect::<Option<_>>(),
                _ => None,
            }
            .ok_or(DataSourceError::Needs {
                form: "an inline datasource",
                field: "\"columnNames\": a list of names",
            })?;
            let rows = match value.get("rows") {
                Some(Json::Array(rows)) => rows
                    .iter()
                    .map(|r| r.as_array().map(|r| r.iter().cloned().map(Value::from_json).collect()))
                    .collect::<Option<Vec<Vec<Value>>>>(),
                _ => None,
            }
            .ok_or(DataSourceError::Needs {
                form: "an inline datasource",
                field: "\"rows\": a list of lists of values",
            })?;
            Ok((RightRows::Inline(columns.clone(), rows), columns))
        }
        Some("query") => Err(DataSourceError::QueryOnTheRight),
        Some(other) => Err(DataSourceError::RightType(excerpt(other, 40).into_owned())),
        None => Err(DataSourceError::Needs { form: "the right side of a join", field: "a \"type\"" }),
    }
}

/// The right rows' column holding the values of several key columns together.
const COMPOSITE_KEY: &str = "\u{1}key";
/// What separates the values of a composite key, each written as its length in characters,
/// `:`, and itself (so no two lists of values write the same key).
const KEY_SEPARATOR: &str = "\u{1}";
/// Most equalities a join condition holds.
pub const MAX_JOIN_KEYS: usize = 16;

/// The left key and the right key columns of `condition`: one equality such as
/// `"x" == "j.k"`, or several joined by `&&` (the left key then the values of their left sides
/// together, null when any is null).
fn condition_parts(condition: &str, prefix: &str) -> Result<(JoinKey, Vec<String>), DataSourceError> {
    let mut names: Vec<String> = Vec::new();
    let parsed = sluice_format::expr::parse(condition, &mut |field| {
        names.iter().position(|n| n == field).unwrap_or_else(|| {
            names.push(field.to_string());
            names.len() - 1
        })
    })
    .map_err(DataSourceError::ConditionSyntax)?;
    let unsupported = || DataSourceError::Condition {
        condition: excerpt(condition, 120).into_owned(),
        prefix: excerpt(prefix, 40).into_owned(),
    };
    let mut equalities = Vec::new();
    let mut stack = vec![parsed];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Binary(BinaryOp::And, a, b) => {
                stack.push(*b);
                stack.push(*a);
            }
            Expr::Binary(BinaryOp::Eq, a, b) => equalities.push((*a, *b)),
            _ => return Err(unsupported()),
        }
        if equalities.len() > MAX_JOIN_KEYS {
            return Err(unsupported());
        }
    }
    let right_of = |e: &Expr| match e {
        Expr::Field(slot) => names[*slot].strip_prefix(prefix).map(str::to_string),
        _ => None,
    };
    let mut lefts = Vec::with_capacity(equalities.len());
    let mut rights = Vec::with_capacity(equalities.len());
    for (a, b) in equalities {
        let (left, right) = match (right_of(&a), right_of(&b)) {
            (None, Some(r)) => (a, r),
            (Some(r), None) => (b, r),
            _ => return Err(unsupported()),
        };
        lefts.push(left);
        rights.push(right);
    }
    let mut used = Vec::new();
    lefts.iter().for_each(|l| fields(l, &mut used));
    if used.iter().any(|slot| names[*slot].starts_with(prefix)) {
        return Err(unsupported());
    }
    let expr = match lefts.len() {
        1 => lefts.pop().unwrap_or(Expr::Literal(Value::Null)),
        _ => {
            let separator = Expr::Literal(Value::String(KEY_SEPARATOR.to_string()));
            let mut parts = Vec::with_capacity(lefts.len() * 2);
            use sluice_format::expr::Function;
            for (i, l) in lefts.into_iter().enumerate() {
                if i > 0 {
                    parts.push(separator.clone());
                }
                parts.push(Expr::Call(Function::Strlen, vec![l.clone()]));
                parts.push(Expr::Literal(Value::String(":".into())));
                parts.push(l);
            }
            Expr::Call(sluice_format::expr::Function::Concat, parts)
        }
    };
    let inputs = names.into_iter().enumerate().map(|(i, n)| used.contains(&i).then_some(n)).collect();
    Ok((JoinKey { expr, inputs }, rights))
}

/// The field slots `e` reads.
fn fields(e: &Expr, out: &mut Vec<usize>) {
    match e {
        Expr::Field(slot) => out.push(*slot),
        Expr::Literal(_) | Expr::Time => {}
        Expr::Unary(_, a) => fields(a, out),
        Expr::Binary(_, a, b) => {
            fields(a, out);
            fields(b, out);
        }
        Expr::Call(_, args) => args.iter().for_each(|a| fields(a, out)),
    }
}

/// Folds the joins of a datasource into the query: their columns appended to `virtuals`,
/// INNER joins' match conditions ANDed to `filter`.
pub fn apply_joins(
    source: &mut DataSource,
    virtuals: &mut Vec<VirtualColumn>,
    filter: &mut Option<Filter>,
) -> Result<(), QueryError> {
    let mut conditions = Vec::new();
    for join in &source.joins {
        let (columns, matched) = join.columns();
        for c in &columns {
            if virtuals.iter().any(|v| v.name() == c.name()) {
                return Err(QueryError::invalid(
                    "dataSource",
                    format!("the join's column {:?} is also a virtual column", excerpt(c.name(), 80)),
                ));
            }
        }
        virtuals.extend(columns);
        conditions.extend(matched);
    }
    if !conditions.is_empty() {
        conditions.extend(filter.take());
        *filter = Some(Filter::And { fields: conditions });
    }
    Ok(())
}

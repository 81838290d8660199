//! The stored columns a query may read, so that ranged reads fetch only those, and the ones
//! its filters name, the only ones whose bitmap indexes it may use.

use super::computed::VirtualColumn;
use super::{Common, Query};
use crate::aggregator_spec::QueryAggregator;
use sluice_format::filter::Filter;

impl Query {
    /// The stored columns the query may read (`None`: all of them); `__time` always.
    pub fn columns(&self) -> Option<std::collections::BTreeSet<String>> {
        use std::collections::BTreeSet;
        let mut out: BTreeSet<String> = BTreeSet::from(["__time".to_string()]);
        let common = |c: &Common, out: &mut BTreeSet<String>| {
            if let Some(f) = &c.filter {
                filter_columns(f, out);
            }
            for a in &c.aggregations {
                aggregator_columns(a, out);
            }
            virtual_inputs(&c.virtual_columns, out);
        };
        match self {
            Query::Timeseries(q) => common(&q.common, &mut out),
            Query::TopN(q) => {
                common(&q.common, &mut out);
                out.insert(q.dimension.dimension.clone());
            }
            Query::GroupBy(q) => {
                common(&q.common, &mut out);
                out.extend(q.dimensions.iter().map(|d| d.dimension.clone()));
            }
            Query::Scan(q) => {
                if q.columns.is_empty() {
                    return None;
                }
                out.extend(q.columns.iter().cloned());
                if let Some(f) = &q.filter {
                    filter_columns(f, &mut out);
                }
                virtual_inputs(&q.virtual_columns, &mut out);
            }
            Query::TimeBoundary(q) => {
                if let Some(f) = &q.filter {
                    filter_columns(f, &mut out);
                }
            }
            Query::SegmentMetadata(_) => return None,
            Query::DataSourceMetadata(_) => {}
            Query::Search(q) => {
                let dims = q.search_dimensions.as_ref()?;
                out.extend(dims.iter().map(|d| d.dimension.clone()));
                if let Some(f) = &q.filter {
                    filter_columns(f, &mut out);
                }
                virtual_inputs(&q.virtual_columns, &mut out);
            }
        }
        Some(out)
    }
}

impl Query {
    /// The stored columns the query's filters name (its own, its filtered aggregators'): the
    /// only columns whose bitmap indexes the engine may use. Every other column it reads by
    /// its values (a string column by its ids and dictionary).
    pub fn filtered_columns(&self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let common = |c: &Common, out: &mut std::collections::BTreeSet<String>| {
            if let Some(f) = &c.filter {
                filter_columns(f, out);
            }
            for a in &c.aggregations {
                aggregator_filter_columns(a, out);
            }
        };
        match self {
            Query::Timeseries(q) => common(&q.common, &mut out),
            Query::TopN(q) => common(&q.common, &mut out),
            Query::GroupBy(q) => common(&q.common, &mut out),
            Query::Scan(q) => q.filter.iter().for_each(|f| filter_columns(f, &mut out)),
            Query::TimeBoundary(q) => q.filter.iter().for_each(|f| filter_columns(f, &mut out)),
            Query::Search(q) => q.filter.iter().for_each(|f| filter_columns(f, &mut out)),
            Query::SegmentMetadata(_) | Query::DataSourceMetadata(_) => {}
        }
        out
    }
}

fn aggregator_filter_columns(a: &QueryAggregator, out: &mut std::collections::BTreeSet<String>) {
    match a {
        QueryAggregator::Plain(_) | QueryAggregator::SketchMerge(_) => {}
        QueryAggregator::Filtered { filter, aggregator, .. } => {
            filter_columns(filter, out);
            aggregator_filter_columns(aggregator, out);
        }
    }
}

fn aggregator_columns(a: &QueryAggregator, out: &mut std::collections::BTreeSet<String>) {
    match a {
        QueryAggregator::Plain(spec) => out.extend(spec.field_name().map(str::to_string)),
        QueryAggregator::SketchMerge(s) => {
            out.insert(s.field_name.clone());
        }
        QueryAggregator::Filtered { filter, aggregator, .. } => {
            filter_columns(filter, out);
            aggregator_columns(aggregator, out);
        }
    }
}

fn expression_inputs(text: &str, out: &mut std::collections::BTreeSet<String>) {
    let mut names = Vec::new();
    // A bad expression is reported when the query runs; here it only adds no column. Any
    // lookup it names reads only its key, which is a column here.
    let any_lookup = |name: &str| Some(sluice_format::lookup::KeyedTable::lookup(name, "", []));
    let _ = sluice_format::expr::parse_with(
        text,
        &mut |field| {
            names.push(field.to_string());
            names.len() - 1
        },
        &any_lookup,
    );
    out.extend(names);
}

fn virtual_inputs(virtuals: &[VirtualColumn], out: &mut std::collections::BTreeSet<String>) {
    for v in virtuals {
        match v {
            VirtualColumn::Expression { expression, .. } => expression_inputs(expression, out),
            VirtualColumn::Joined(j) => out.extend(j.key.inputs.iter().flatten().cloned()),
            VirtualColumn::NestedField(n) => {
                out.insert(n.column_name.clone());
            }
        }
    }
}

fn filter_columns(f: &Filter, out: &mut std::collections::BTreeSet<String>) {
    match f {
        Filter::Selector { dimension, .. }
        | Filter::In { dimension, .. }
        | Filter::Bound { dimension, .. }
        | Filter::Like { dimension, .. }
        | Filter::Regex { dimension, .. }
        | Filter::Search { dimension, .. }
        | Filter::Interval { dimension, .. } => {
            out.insert(dimension.clone());
        }
        Filter::ColumnComparison { dimensions } => {
            for d in dimensions {
                match d {
                    serde_json::Value::String(s) => {
                        out.insert(s.clone());
                    }
                    other => {
                        if let Some(s) = other.get("dimension").and_then(|v| v.as_str()) {
                            out.insert(s.to_string());
                        }
                    }
                }
            }
        }
        Filter::Equals { column, .. } | Filter::Range { column, .. } | Filter::Null { column } => {
            out.insert(column.clone());
        }
        Filter::And { fields } | Filter::Or { fields } => fields.iter().for_each(|f| filter_columns(f, out)),
        Filter::Not { field } => filter_columns(field, out),
        Filter::Expression { expression } => expression_inputs(expression, out),
        Filter::True | Filter::False => {}
    }
}

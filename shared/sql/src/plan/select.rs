//! A SELECT: its FROM resolved, its select list expanded and named, WHERE split into
//! intervals and a filter; then planned as a scan, or handed to [`super::grouped`].

use super::intervals::TimeRange;
use super::joins::Qualifier;
use super::names::{ident_path, object_path};
use super::parts::{has_aggregate, resolve_item, Item, OrderKey, Parts};
use super::virtuals::Virtuals;
use super::{Input, Options, Output, Plan, Relation, Source};
use crate::types::Column;
use crate::SqlError;
use serde_json::json;
use sqlparser::ast::{BinaryOperator, Expr, GroupByExpr, OrderByKind, Query, Select, SelectItem, SetExpr, TableFactor};

/// Plans a query.
pub fn plan_query(query: &Query, options: &Options<'_>) -> Result<Plan, SqlError> {
    if query.with.is_some() {
        return Err(SqlError::unsupported("WITH"));
    }
    if query.fetch.is_some() || !query.locks.is_empty() || query.for_clause.is_some() || query.settings.is_some() {
        return Err(SqlError::unsupported("FETCH, FOR, locking and SETTINGS clauses"));
    }
    let select = match query.body.as_ref() {
        SetExpr::Select(s) => s.as_ref(),
        SetExpr::Query(q) if query.order_by.is_none() && query.limit_clause.is_none() => return plan_query(q, options),
        SetExpr::SetOperation { .. } => return super::unions::plan_union(query, options),
        SetExpr::Values(_) => return Err(SqlError::unsupported("VALUES")),
        other => return Err(SqlError::unsupported(crate::short(&other.to_string()))),
    };
    if let Some(windowed) = super::windows::plan_windows(query, select, options)? {
        return Ok(windowed);
    }
    unsupported_clauses(select)?;
    let (relation, qualifiers) = from(select, options)?;
    let items = expand(select, &relation)?;
    let (limit, offset) = super::parts::limits(query, options)?;
    let mut parts = Parts {
        relation,
        qualifiers,
        items,
        range: TimeRange::default(),
        conditions: Vec::new(),
        select,
        order: Vec::new(),
        limit,
        offset,
        options,
    };
    parts.order = order_keys(query, &parts)?;
    if let Some(w) = &select.selection {
        let mut conjuncts = Vec::new();
        split_and(w, &mut conjuncts);
        let mut range = TimeRange::default();
        let mut rest = Vec::new();
        {
            let scope = parts.scope();
            for c in conjuncts {
                if !range.narrow(c, &scope)? {
                    rest.push(c.clone());
                }
            }
        }
        parts.range = range;
        parts.conditions = rest;
    }
    if matches!(parts.relation.input, Input::Nothing) {
        return constants(&parts);
    }
    let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty())
        || select.having.is_some()
        || select.distinct.is_some()
        || parts.items.iter().any(|i| has_aggregate(&i.expr));
    if grouped {
        super::grouped::plan(&parts)
    } else {
        scan(&parts)
    }
}

fn unsupported_clauses(s: &Select) -> Result<(), SqlError> {
    let named = [
        (s.top.is_some(), "TOP"),
        (s.into.is_some(), "SELECT INTO"),
        (!s.lateral_views.is_empty(), "LATERAL VIEW"),
        (s.prewhere.is_some(), "PREWHERE"),
        (s.qualify.is_some(), "QUALIFY"),
        (!s.named_window.is_empty(), "WINDOW"),
        (
            !s.cluster_by.is_empty() || !s.distribute_by.is_empty() || !s.sort_by.is_empty(),
            "CLUSTER/DISTRIBUTE/SORT BY",
        ),
        (!s.connect_by.is_empty(), "CONNECT BY"),
        (matches!(s.distinct, Some(sqlparser::ast::Distinct::On(_))), "DISTINCT ON"),
        (matches!(s.group_by, GroupByExpr::All(_)), "GROUP BY ALL"),
        (matches!(&s.group_by, GroupByExpr::Expressions(_, m) if !m.is_empty()), "GROUP BY ROLLUP/CUBE modifiers"),
    ];
    match named.iter().find(|(present, _)| *present) {
        Some((_, what)) => Err(SqlError::unsupported(what)),
        None => Ok(()),
    }
}

/// The relation of the FROM clause (its joins planned) and the names its columns may be
/// qualified by.
fn from(select: &Select, options: &Options<'_>) -> Result<(Relation, Vec<Qualifier>), SqlError> {
    let (table, joins) = match select.from.as_slice() {
        [] => return Ok((Relation { input: Input::Nothing, columns: Vec::new(), joins: Vec::new() }, Vec::new())),
        [one] => (&one.relation, &one.joins),
        _ => return Err(SqlError::unsupported("more than one table in FROM (a comma join: write JOIN ... ON)")),
    };
    let (relation, qualifiers) = left_table(table, options)?;
    super::joins::join_all(relation, qualifiers, joins, options)
}

/// The table at the left of the FROM clause.
fn left_table(table: &TableFactor, options: &Options<'_>) -> Result<(Relation, Vec<Qualifier>), SqlError> {
    let left = |names: Vec<String>| names.into_iter().map(|n| (n, String::new())).collect::<Vec<Qualifier>>();
    match table {
        TableFactor::Table { name, alias, args, .. } => {
            if args.is_some() {
                return Err(SqlError::unsupported("table functions"));
            }
            let path = object_path(name);
            let relation = options.catalog.relation(&path)?;
            let mut qualifiers = vec![path.last().cloned().unwrap_or_default()];
            qualifiers.extend(alias.as_ref().map(|a| a.name.value.clone()));
            Ok((relation, left(qualifiers)))
        }
        TableFactor::Derived { subquery, alias, lateral: false, .. } => {
            let (inner, columns) = super::joins::derived(subquery, alias.as_ref(), options)?;
            let qualifiers = alias.iter().map(|a| a.name.value.clone()).collect();
            Ok((Relation { input: Input::Inline(Box::new(inner)), columns, joins: Vec::new() }, left(qualifiers)))
        }
        other => Err(SqlError::unsupported(format!("FROM {}", crate::short(&other.to_string())))),
    }
}

/// The select list with `*` expanded and every item named: its alias, its column's name,
/// or `EXPR$n` as Druid names the rest.
fn expand(select: &Select, relation: &Relation) -> Result<Vec<Item>, SqlError> {
    let mut items = Vec::new();
    for (i, item) in select.projection.iter().enumerate() {
        match item {
            SelectItem::UnnamedExpr(e) => {
                let name = match ident_path(e) {
                    Some(p) => p.last().cloned().unwrap_or_default(),
                    None => format!("EXPR${i}"),
                };
                items.push(Item { expr: e.clone(), name });
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                items.push(Item { expr: expr.clone(), name: alias.value.clone() })
            }
            SelectItem::Wildcard(opts) | SelectItem::QualifiedWildcard(_, opts) => {
                if opts.opt_exclude.is_some()
                    || opts.opt_except.is_some()
                    || opts.opt_replace.is_some()
                    || opts.opt_rename.is_some()
                {
                    return Err(SqlError::unsupported("* with EXCLUDE, EXCEPT, REPLACE or RENAME"));
                }
                for c in &relation.columns {
                    let ident = sqlparser::ast::Ident::with_quote('"', c.name.clone());
                    // A join's right column is named as its side names it.
                    let name = relation.joins.iter().rev().find_map(|j| c.name.strip_prefix(j.prefix.as_str()));
                    items.push(Item { expr: Expr::Identifier(ident), name: name.unwrap_or(&c.name).to_string() });
                }
            }
            other => return Err(SqlError::unsupported(format!("select item {}", crate::short(&other.to_string())))),
        }
    }
    Ok(items)
}

/// ORDER BY keys, each resolved to the select item it names (by ordinal, alias or the same
/// expression) when it names one.
fn order_keys(query: &Query, parts: &Parts<'_>) -> Result<Vec<OrderKey>, SqlError> {
    let Some(order) = &query.order_by else { return Ok(Vec::new()) };
    let exprs = match &order.kind {
        OrderByKind::Expressions(e) => e,
        OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
    };
    let mut keys = Vec::new();
    for o in exprs {
        if o.with_fill.is_some() {
            return Err(SqlError::unsupported("ORDER BY ... WITH FILL"));
        }
        let descending = matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc));
        if matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Using(_))) {
            return Err(SqlError::unsupported("ORDER BY ... USING"));
        }
        // Native orderings put nulls first ascending and last descending.
        if let Some(first) = o.options.nulls_first {
            if first == descending {
                return Err(SqlError::unsupported(format!(
                    "NULLS {} with {} (nulls sort first ascending and last descending)",
                    if first { "FIRST" } else { "LAST" },
                    if descending { "DESC" } else { "ASC" }
                )));
            }
        }
        let item = resolve_item(&o.expr, &parts.items, &[], "ORDER BY", parts.options)?;
        let expr = item.map(|i| parts.items[i].expr.clone()).unwrap_or_else(|| o.expr.clone());
        keys.push(OrderKey { expr, item, descending });
    }
    Ok(keys)
}

fn split_and<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            split_and(left, out);
            split_and(right, out);
        }
        Expr::Nested(inner) if matches!(inner.as_ref(), Expr::BinaryOp { op: BinaryOperator::And, .. }) => {
            split_and(inner, out)
        }
        other => out.push(other),
    }
}

/// A select list without FROM: constants, evaluated once.
fn constants(parts: &Parts<'_>) -> Result<Plan, SqlError> {
    if !parts.conditions.is_empty() || parts.items.iter().any(|i| has_aggregate(&i.expr)) {
        return Err(SqlError::unsupported("WHERE or aggregates without FROM"));
    }
    let scope = parts.scope();
    let mut outputs = Vec::new();
    for item in &parts.items {
        let s = scope.scalar(&item.expr)?;
        let value = match &s.constant {
            Some(c) => c.json(),
            None => {
                let e = sluice_format::expr::parse(&s.expr, &mut |_| 0).map_err(|e| SqlError::validation(e.reason))?;
                sluice_query::json::value_json(&sluice_format::expr::eval(&e, &[], 0))
            }
        };
        outputs.push(Output { column: Column::new(&item.name, s.ty), source: Source::Const(value) });
    }
    let visible = outputs.len();
    Ok(Plan {
        input: Input::Nothing,
        native: None,
        outputs,
        one_row: None,
        visible,
        after: Default::default(),
        joins: Vec::new(),
    })
}

/// A select list without aggregation: a scan.
fn scan(parts: &Parts<'_>) -> Result<Plan, SqlError> {
    let scope = parts.scope();
    let mut virtuals = Virtuals::new(&parts.relation.columns);
    let mut outputs = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    for item in &parts.items {
        let s = scope.scalar(&item.expr)?;
        let source = match &s.constant {
            Some(c) => Source::Const(c.json()),
            None => {
                let name = virtuals.column_for(&s);
                if !columns.contains(&name) {
                    columns.push(name.clone());
                }
                Source::Field(name)
            }
        };
        outputs.push(Output { column: Column::new(&item.name, s.ty), source });
    }
    let visible = outputs.len();
    let mut after = super::After::default();
    let order = match parts.order.as_slice() {
        [] => "none",
        [key] if scope.scalar(&key.expr)?.column.as_deref() == Some("__time") => {
            if key.descending {
                "descending"
            } else {
                "ascending"
            }
        }
        // Rows held in memory are sorted after the scan.
        keys if !matches!(parts.relation.input, Input::Table(_)) => {
            for key in keys {
                let index = match key.item {
                    Some(i) => i,
                    None => {
                        let s = scope.scalar(&key.expr)?;
                        let name = virtuals.column_for(&s);
                        if !columns.contains(&name) {
                            columns.push(name.clone());
                        }
                        outputs.push(Output { column: Column::new(&name, s.ty), source: Source::Field(name) });
                        outputs.len() - 1
                    }
                };
                after.order.push((index, key.descending));
            }
            after.limit = parts.limit;
            after.offset = parts.offset;
            "none"
        }
        _ => {
            return Err(SqlError::unsupported(
                "ORDER BY on anything but __time in a query without GROUP BY (native scans order by time only)",
            ))
        }
    };
    let filter = parts.filter(&mut virtuals)?;
    if columns.is_empty() {
        columns.push("__time".into());
    }
    let mut native = json!({
        "queryType": "scan",
        "dataSource": parts.datasource(),
        "intervals": parts.range.intervals(),
        "columns": columns,
        "order": order,
        "resultFormat": "list",
        "context": parts.context(&[]),
    });
    if !virtuals.is_empty() {
        native["virtualColumns"] = json!(virtuals.json());
    }
    if let Some(f) = filter {
        native["filter"] = f;
    }
    if after.order.is_empty() {
        if let Some(l) = parts.limit {
            native["limit"] = json!(l);
        }
        if parts.offset > 0 {
            native["offset"] = json!(parts.offset);
        }
    }
    Ok(Plan {
        input: parts.relation.input.clone(),
        native: Some(native),
        outputs,
        one_row: None,
        visible,
        after,
        joins: parts.relation.joins.clone(),
    })
}

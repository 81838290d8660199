//! SELECTs with window functions (`RANK() OVER (PARTITION BY ... ORDER BY ...)`,
//! `SUM(SUM(x)) OVER (...)`), planned as Druid plans them: the query without its window
//! functions runs first (its GROUP BY, WHERE and HAVING as written; its rows bounded as a
//! subquery's), then each window function is computed over its rows ([`crate::window`]), and
//! the select list, ORDER BY and LIMIT are applied to the result.
//!
//! The inner query's select list holds every part of the outer one that is not a window
//! function: each window function's argument, PARTITION BY and ORDER BY expressions, and the
//! largest window-free parts of the select items (`ABS(delta)`, `SUM(delta)`), each named
//! `__e<n>`; the window values are `__w<n>`; the select items are computed over those.

use super::names::{function_args, function_name};
use super::parts::{order_over, Item};
use super::scalar::{quote_column, Scalar, Scope};
use super::{plan_query, After, Input, Options, Output, Plan, Source};
use crate::types::{Column, SqlType};
use crate::window::{Bound, Call, Frame, Function};
use crate::SqlError;
use serde_json::Value;
use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, NamedWindowExpr, Query, Select, SelectItem, SetExpr,
    WindowFrameBound, WindowFrameUnits, WindowSpec, WindowType,
};

/// Most window functions in one select list.
pub const MAX_WINDOW_CALLS: usize = 64;

/// The query a window stage reads and the window functions it computes over its rows.
#[derive(Debug, Clone)]
pub struct WindowStage {
    /// The query without its window functions.
    pub inner: Plan,
    /// The window functions, over the inner query's columns; their values are `__w<n>`.
    pub calls: Vec<Call>,
}

/// Whether `e` calls a window function (anywhere inside it).
pub fn has_window(e: &Expr) -> bool {
    let mut found = false;
    let _ = sqlparser::ast::visit_expressions(e, |x| {
        if let Expr::Function(f) = x {
            found |= f.over.is_some();
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    found
}

/// Plans `select` (the body of `query`) when its select list calls window functions.
pub fn plan_windows(query: &Query, select: &Select, options: &Options<'_>) -> Result<Option<Plan>, SqlError> {
    let windowed = select.projection.iter().any(|i| match i {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => has_window(e),
        _ => false,
    });
    if !windowed {
        return Ok(None);
    }
    let items: Vec<(&Expr, Option<&Ident>)> = (select.projection.iter())
        .map(|i| match i {
            SelectItem::UnnamedExpr(e) => Some((e, None)),
            SelectItem::ExprWithAlias { expr, alias } => Some((expr, Some(alias))),
            _ => None,
        })
        .collect::<Option<_>>()
        .ok_or_else(|| SqlError::unsupported("* beside window functions (name the columns)"))?;
    if select.distinct.is_some() {
        return Err(SqlError::unsupported("DISTINCT with window functions"));
    }
    let mut stage = Split { named: &select.named_window, inner: Vec::new(), calls: Vec::new() };
    for (e, _) in &items {
        stage.split(e)?;
    }
    // The inner query: the same FROM, WHERE, GROUP BY and HAVING, without ORDER BY and LIMIT.
    let mut inner_select = select.clone();
    inner_select.named_window.clear();
    inner_select.projection = (stage.inner.iter().enumerate())
        .map(|(k, e)| SelectItem::ExprWithAlias { expr: e.clone(), alias: Ident::with_quote('"', format!("__e{k}")) })
        .collect();
    let mut inner_query = query.clone();
    *inner_query.body = SetExpr::Select(Box::new(inner_select));
    inner_query.order_by = None;
    inner_query.limit_clause = None;
    let inner = plan_query(&inner_query, options)?;
    let inner_columns = inner.columns();
    let mut columns = inner_columns.clone();
    let mut calls = Vec::with_capacity(stage.calls.len());
    for (n, (f, spec)) in stage.calls.iter().enumerate() {
        let (call, ty) = stage.call(f, spec, &inner_columns)?;
        columns.push(Column::new(format!("__w{n}"), ty));
        calls.push(call);
    }
    // The select list over the inner columns and the window values.
    let substitute = |x: &Expr| -> Result<Option<Scalar>, SqlError> {
        let at = match x {
            Expr::Function(f) if f.over.is_some() => {
                stage.calls.iter().position(|(c, _)| c == f).map(|n| inner_columns.len() + n)
            }
            x => stage.inner.iter().position(|e| e == x),
        };
        Ok(at.map(|i| {
            let c = &columns[i];
            Scalar { expr: quote_column(&c.name), ty: c.ty.clone(), column: Some(c.name.clone()), constant: None }
        }))
    };
    let scope = Scope {
        columns: &[],
        qualifiers: Vec::new(),
        now_ms: options.now_ms,
        zone: options.time_zone.clone(),
        substitute: Some(&substitute),
    };
    let mut outputs = Vec::with_capacity(items.len());
    let mut named = Vec::with_capacity(items.len());
    for (i, (e, alias)) in items.iter().enumerate() {
        let name = match (alias, super::names::ident_path(e)) {
            (Some(a), _) => a.value.clone(),
            (None, Some(path)) => path.last().cloned().unwrap_or_default(),
            (None, None) => format!("EXPR${i}"),
        };
        outputs.push(output(&scope, e, &name)?);
        named.push(Item { expr: (*e).clone(), name });
    }
    let visible = outputs.len();
    let mut after = After::default();
    for (item, expr, descending) in order_over(query, &named, options)? {
        let at = match item {
            Some(i) => i,
            None => {
                outputs.push(output(&scope, expr, "")?);
                outputs.len() - 1
            }
        };
        after.order.push((at, descending));
    }
    let (limit, offset) = super::parts::limits(query, options)?;
    (after.limit, after.offset) = (limit, offset);
    let stage = WindowStage { inner, calls };
    Ok(Some(Plan {
        input: Input::Windowed(Box::new(stage)),
        native: None,
        outputs,
        one_row: None,
        visible,
        after,
        joins: Vec::new(),
    }))
}

/// A select item or ORDER BY key over the inner columns and window values.
fn output(scope: &Scope<'_>, e: &Expr, name: &str) -> Result<Output, SqlError> {
    let s = scope.scalar(e)?;
    let source = match (&s.column, &s.constant) {
        (_, Some(c)) => Source::Const(c.json()),
        (Some(c), None) if s.expr == quote_column(c) => Source::Field(c.clone()),
        _ => Source::Expression(s.expr.clone()),
    };
    Ok(Output { column: Column::new(name, s.ty), source })
}

/// The select list split into the inner query's expressions and the window calls.
struct Split<'s> {
    named: &'s [sqlparser::ast::NamedWindowDefinition],
    inner: Vec<Expr>,
    calls: Vec<(sqlparser::ast::Function, WindowSpec)>,
}

impl Split<'_> {
    /// Index of `e` among the inner expressions, added when new.
    fn inner(&mut self, e: &Expr) -> usize {
        match self.inner.iter().position(|x| x == e) {
            Some(i) => i,
            None => {
                self.inner.push(e.clone());
                self.inner.len() - 1
            }
        }
    }

    fn split(&mut self, e: &Expr) -> Result<(), SqlError> {
        if !has_window(e) {
            self.inner(e);
            return Ok(());
        }
        match e {
            Expr::Function(f) if f.over.is_some() => {
                if self.calls.len() >= MAX_WINDOW_CALLS {
                    return Err(SqlError::unsupported(format!("more than {MAX_WINDOW_CALLS} window functions")));
                }
                let spec = self.spec(f.over.as_ref().expect("checked"))?;
                let mut plain = f.clone();
                plain.over = None;
                for a in window_args(&plain)? {
                    if has_window(a) {
                        return Err(SqlError::unsupported("a window function inside another's argument"));
                    }
                    self.inner(a);
                }
                for p in &spec.partition_by {
                    self.inner(p);
                }
                for o in &spec.order_by {
                    self.inner(&o.expr);
                }
                if !self.calls.iter().any(|(c, _)| c == f) {
                    self.calls.push((f.clone(), spec));
                }
                Ok(())
            }
            Expr::Nested(x) | Expr::UnaryOp { expr: x, .. } | Expr::Cast { expr: x, .. } => self.split(x),
            Expr::BinaryOp { left, right, .. } => {
                self.split(left)?;
                self.split(right)
            }
            Expr::Function(f) => {
                for a in function_args(f)? {
                    self.split(a)?;
                }
                Ok(())
            }
            other => {
                Err(SqlError::unsupported(format!("a window function inside {}", crate::short(&other.to_string()))))
            }
        }
    }

    /// The window specification `over` names, named windows resolved.
    fn spec(&self, over: &WindowType) -> Result<WindowSpec, SqlError> {
        let mut current = over.clone();
        for _ in 0..=self.named.len() {
            match current {
                WindowType::WindowSpec(spec) if spec.window_name.is_none() => return Ok(spec),
                WindowType::WindowSpec(spec) => {
                    return Err(SqlError::unsupported(format!(
                        "a window that extends window {}",
                        spec.window_name.map(|n| n.value).unwrap_or_default()
                    )))
                }
                WindowType::NamedWindow(name) => {
                    let found = self.named.iter().find(|d| d.0.value == name.value).ok_or_else(|| {
                        SqlError::validation(format!("window '{}' is not defined", crate::short(&name.value)))
                    })?;
                    current = match &found.1 {
                        NamedWindowExpr::WindowSpec(spec) => WindowType::WindowSpec(spec.clone()),
                        NamedWindowExpr::NamedWindow(other) => WindowType::NamedWindow(other.clone()),
                    };
                }
            }
        }
        Err(SqlError::validation("named windows refer to each other in a cycle"))
    }

    /// The engine's call for window function `f` over `spec`, and its type.
    fn call(
        &self,
        f: &sqlparser::ast::Function,
        spec: &WindowSpec,
        inner: &[Column],
    ) -> Result<(Call, SqlType), SqlError> {
        let name = function_name(f);
        let mut plain = f.clone();
        plain.over = None;
        let args = window_args(&plain)?;
        let at = |e: &Expr| self.inner.iter().position(|x| x == e).expect("split added it");
        let arg = args.first().map(|a| at(a));
        let arg_type = arg.map(|i| inner[i].ty.clone()).unwrap_or(SqlType::Bigint);
        let constant =
            |i: usize| -> Result<Option<Value>, SqlError> { args.get(i).map(|a| literal(a, &name)).transpose() };
        let count = |i: usize, default: u64| -> Result<u64, SqlError> {
            match constant(i)? {
                None => Ok(default),
                Some(v) => v.as_u64().ok_or_else(|| {
                    SqlError::validation(format!("{name} argument {} must be a non-negative integer", i + 1))
                }),
            }
        };
        let (function, ty) = match name.as_str() {
            "ROW_NUMBER" => (Function::RowNumber, SqlType::Bigint),
            "RANK" => (Function::Rank, SqlType::Bigint),
            "DENSE_RANK" => (Function::DenseRank, SqlType::Bigint),
            "PERCENT_RANK" => (Function::PercentRank, SqlType::Double),
            "CUME_DIST" => (Function::CumeDist, SqlType::Double),
            "NTILE" => (Function::Ntile(count(0, 1)?.max(1)), SqlType::Bigint),
            "LAG" => (Function::Lag(count(1, 1)?, constant(2)?.unwrap_or(Value::Null)), arg_type.clone()),
            "LEAD" => (Function::Lead(count(1, 1)?, constant(2)?.unwrap_or(Value::Null)), arg_type.clone()),
            "FIRST_VALUE" => (Function::FirstValue, arg_type.clone()),
            "LAST_VALUE" => (Function::LastValue, arg_type.clone()),
            "SUM" => (Function::Sum, if arg_type == SqlType::Bigint { SqlType::Bigint } else { SqlType::Double }),
            "COUNT" => (Function::Count, SqlType::Bigint),
            "MIN" => (Function::Min, arg_type.clone()),
            "MAX" => (Function::Max, arg_type.clone()),
            "AVG" => (Function::Avg, SqlType::Double),
            other => return Err(SqlError::unsupported(format!("window function {}", crate::short(other)))),
        };
        // NTILE's argument is its tile count and COUNT(*) counts rows: neither reads a column.
        let arg = match function {
            Function::Ntile(_) | Function::RowNumber | Function::Rank | Function::DenseRank => None,
            Function::PercentRank | Function::CumeDist => None,
            Function::Count if is_count_star(&plain) => None,
            _ => arg,
        };
        let partition = spec.partition_by.iter().map(at).collect();
        let mut order = Vec::with_capacity(spec.order_by.len());
        for o in &spec.order_by {
            let descending = matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc));
            if o.options.nulls_first.is_some_and(|first| first == descending) {
                return Err(SqlError::unsupported("NULLS FIRST with DESC or NULLS LAST with ASC in a window"));
            }
            order.push((at(&o.expr), descending));
        }
        let frame = frame(spec, &name)?;
        if matches!(function, Function::Ntile(_)) && spec.window_frame.is_some() {
            return Err(SqlError::unsupported("a frame for NTILE"));
        }
        Ok((Call { function, arg, partition, order, frame }, ty))
    }
}

/// The arguments of a window function (`COUNT(*)` has none).
fn window_args(f: &sqlparser::ast::Function) -> Result<Vec<&Expr>, SqlError> {
    if is_count_star(f) {
        return Ok(Vec::new());
    }
    function_args(f)
}

fn is_count_star(f: &sqlparser::ast::Function) -> bool {
    matches!(&f.args, FunctionArguments::List(l)
        if matches!(l.args.as_slice(), [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)]))
}

/// A literal argument of window function `name`.
fn literal(e: &Expr, name: &str) -> Result<Value, SqlError> {
    let scope = Scope { columns: &[], qualifiers: Vec::new(), now_ms: 0, zone: None, substitute: None };
    match scope.scalar(e).ok().and_then(|s| s.constant) {
        Some(c) => Ok(c.json()),
        None => Err(SqlError::validation(format!("{name}: {} must be a literal", crate::short(&e.to_string())))),
    }
}

/// The frame of `spec`: its own, or the default (the partition without ORDER BY; from its
/// start to the current row's peers with it).
fn frame(spec: &WindowSpec, name: &str) -> Result<Frame, SqlError> {
    let Some(f) = &spec.window_frame else {
        return Ok(if spec.order_by.is_empty() { Frame::PARTITION } else { Frame::RUNNING });
    };
    let rows = match f.units {
        WindowFrameUnits::Rows => true,
        WindowFrameUnits::Range => false,
        WindowFrameUnits::Groups => return Err(SqlError::unsupported("GROUPS frames")),
    };
    let bound = |b: &WindowFrameBound| -> Result<Bound, SqlError> {
        let n = |e: &Expr| -> Result<u64, SqlError> {
            literal(e, name)?.as_u64().ok_or_else(|| {
                SqlError::unsupported(
                    "a window frame bound other than a non-negative integer (Druid refuses expressions)",
                )
            })
        };
        Ok(match b {
            WindowFrameBound::CurrentRow => Bound::CurrentRow,
            WindowFrameBound::Preceding(None) => Bound::UnboundedPreceding,
            WindowFrameBound::Following(None) => Bound::UnboundedFollowing,
            WindowFrameBound::Preceding(Some(e)) => Bound::Preceding(n(e)?),
            WindowFrameBound::Following(Some(e)) => Bound::Following(n(e)?),
        })
    };
    let start = bound(&f.start_bound)?;
    let end = f.end_bound.as_ref().map(bound).transpose()?.unwrap_or(Bound::CurrentRow);
    let offset = |b: Bound| matches!(b, Bound::Preceding(_) | Bound::Following(_));
    if !rows && (offset(start) || offset(end)) {
        return Err(SqlError::unsupported(
            "a RANGE frame with n PRECEDING or FOLLOWING (only UNBOUNDED and CURRENT ROW, as Druid's strict validation)",
        ));
    }
    if matches!(start, Bound::UnboundedFollowing) || matches!(end, Bound::UnboundedPreceding) {
        return Err(SqlError::validation("a window frame that ends before it starts"));
    }
    Ok(Frame { rows, start, end })
}

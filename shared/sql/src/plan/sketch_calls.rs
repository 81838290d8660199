//! Druid SQL's theta and quantiles sketch functions, planned as Druid plans them: a
//! `thetaSketch` or `quantilesDoublesSketch` aggregator, finalized or not, and the sketch
//! post-aggregators over it (`thetaSketchEstimate`, `thetaSketchSetOp`,
//! `quantilesDoublesSketchTo*`). The set and read functions take sketch aggregates
//! (`DS_THETA(...)`, `DS_QUANTILES_SKETCH(...)`, each with its own `FILTER`) or other set
//! operations, as in Druid.

use super::aggregate::{AggRef, Aggregates};
use super::names::{function_args, function_name};
use super::scalar::{Const, Scope};
use super::virtuals::Virtuals;
use crate::types::SqlType;
use crate::SqlError;
use serde_json::{json, Value};
use sqlparser::ast::{Expr, Function};

/// A sketch kind a function reads or makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Theta,
    Quantiles,
}

impl Kind {
    fn type_name(self) -> &'static str {
        match self {
            Kind::Theta => "thetaSketch",
            Kind::Quantiles => "quantilesDoublesSketch",
        }
    }
}

/// What a sketch call is planned in: the query's scope and virtual columns, and the
/// aggregate's `FILTER` when it has one.
struct Planning<'s, 'v> {
    scope: &'s Scope<'s>,
    virtuals: &'v mut Virtuals,
    filter: Option<Value>,
}

/// Plans sketch function `f` (named `name`, [`super::names::is_sketch_function`]) into
/// `aggregates`.
pub fn call(
    aggregates: &mut Aggregates,
    name: &str,
    f: &Function,
    scope: &Scope<'_>,
    virtuals: &mut Virtuals,
) -> Result<AggRef, SqlError> {
    let filter = match &f.filter {
        Some(cond) => Some(super::filter::filter(cond, scope, virtuals)?),
        None => None,
    };
    aggregates.sketch_call(name, f, &mut Planning { scope, virtuals, filter })
}

impl Aggregates {
    /// Plans sketch function `f` (named `name`).
    fn sketch_call(&mut self, name: &str, f: &Function, p: &mut Planning) -> Result<AggRef, SqlError> {
        let args = function_args(f)?;
        let literal = |i: usize, what: &str, p: &Planning| -> Result<Option<f64>, SqlError> {
            let Some(e) = args.get(i) else { return Ok(None) };
            match p.scope.scalar(e)?.constant {
                Some(Const::Long(n)) => Ok(Some(n as f64)),
                Some(Const::Double(x)) => Ok(Some(x)),
                _ => Err(SqlError::validation(format!("{name}: {what} must be a numeric literal"))),
            }
        };
        let wrap = |mut spec: Value, p: &Planning| match &p.filter {
            Some(fl) => {
                spec["name"] = json!("_");
                json!({"type": "filtered", "filter": fl, "aggregator": spec})
            }
            None => spec,
        };
        match name {
            "APPROX_COUNT_DISTINCT_DS_THETA" | "DS_THETA" => {
                let column = self.sketch_input(name, &args, Kind::Theta, p)?;
                let mut spec = json!({"type": "thetaSketch", "fieldName": column});
                if let Some(size) = literal(1, "the size", p)? {
                    spec["size"] = json!(size as u64);
                }
                if name == "DS_THETA" {
                    spec["shouldFinalize"] = json!(false);
                    return Ok(self.add(wrap(spec, p), SqlType::Complex(Kind::Theta.type_name().into()), Value::Null));
                }
                Ok(self.add(wrap(spec, p), SqlType::Bigint, json!(0)))
            }
            "APPROX_QUANTILE_DS" | "DS_QUANTILES_SKETCH" => {
                let column = self.sketch_input(name, &args, Kind::Quantiles, p)?;
                let k_at = if name == "DS_QUANTILES_SKETCH" { 1 } else { 2 };
                let mut spec = json!({"type": "quantilesDoublesSketch", "fieldName": column});
                if let Some(k) = literal(k_at, "k", p)? {
                    spec["k"] = json!(k as u64);
                }
                if name == "DS_QUANTILES_SKETCH" {
                    spec["shouldFinalize"] = json!(false);
                    return Ok(self.add(
                        wrap(spec, p),
                        SqlType::Complex(Kind::Quantiles.type_name().into()),
                        Value::Null,
                    ));
                }
                let fraction = literal(1, "the probability", p)?
                    .ok_or_else(|| SqlError::validation(format!("{name} needs a probability")))?;
                let sketch = self.add(wrap(spec, p), SqlType::Bigint, json!(0));
                // Druid reads the probability as a float.
                let post = json!({"type": "quantilesDoublesSketchToQuantile", "fraction": fraction as f32 as f64,
                    "field": {"type": "fieldAccess", "fieldName": sketch.name}});
                Ok(self.add_post(post, SqlType::Double))
            }
            "THETA_SKETCH_ESTIMATE" | "THETA_SKETCH_ESTIMATE_WITH_ERROR_BOUNDS" => {
                let field = self.sketch_arg(name, &args, 0, Kind::Theta, p)?;
                let mut post = json!({"type": "thetaSketchEstimate", "field": field});
                if name == "THETA_SKETCH_ESTIMATE" {
                    return Ok(self.add_post(post, SqlType::Double));
                }
                let n = literal(1, "errorBoundsStdDev", p)?
                    .ok_or_else(|| SqlError::validation(format!("{name} needs errorBoundsStdDev (1, 2 or 3)")))?;
                post["errorBoundsStdDev"] = json!(n as u64);
                Ok(self.add_post(post, SqlType::Complex("estimateWithErrorBounds".into())))
            }
            "THETA_SKETCH_UNION" | "THETA_SKETCH_INTERSECT" | "THETA_SKETCH_NOT" => {
                let post = self.set_op(name, f, p)?;
                Ok(self.add_post(post, SqlType::Complex(Kind::Theta.type_name().into())))
            }
            _ => {
                let field = self.sketch_arg(name, &args, 0, Kind::Quantiles, p)?;
                let numbers = |p: &Planning| -> Result<Vec<f64>, SqlError> {
                    (1..args.len()).map(|i| literal(i, "each point", p).map(|x| x.unwrap_or(f64::NAN))).collect()
                };
                let (post, ty) = match name {
                    "DS_GET_QUANTILE" => {
                        let f = literal(1, "the fraction", p)?.unwrap_or(f64::NAN) as f32 as f64;
                        (json!({"type": "quantilesDoublesSketchToQuantile", "fraction": f}), SqlType::Double)
                    }
                    "DS_RANK" => {
                        let v = literal(1, "the value", p)?.unwrap_or(f64::NAN) as f32 as f64;
                        (json!({"type": "quantilesDoublesSketchToRank", "value": v}), SqlType::Double)
                    }
                    "DS_GET_QUANTILES" => (
                        json!({"type": "quantilesDoublesSketchToQuantiles", "fractions": numbers(p)?}),
                        SqlType::Complex("DOUBLE_ARRAY".into()),
                    ),
                    "DS_CDF" => (
                        json!({"type": "quantilesDoublesSketchToCDF", "splitPoints": numbers(p)?}),
                        SqlType::Complex("DOUBLE_ARRAY".into()),
                    ),
                    _ => (
                        json!({"type": "quantilesDoublesSketchToHistogram", "splitPoints": numbers(p)?}),
                        SqlType::Complex("DOUBLE_ARRAY".into()),
                    ),
                };
                let mut post = post;
                post["field"] = field;
                Ok(self.add_post(post, ty))
            }
        }
    }

    /// The input column of a sketch aggregate: a value column, or a sketch column of `kind`.
    fn sketch_input(&mut self, name: &str, args: &[&Expr], kind: Kind, p: &mut Planning) -> Result<String, SqlError> {
        let e = args.first().ok_or_else(|| SqlError::validation(format!("{name} needs an argument")))?;
        let x = p.scope.scalar(e)?;
        match &x.ty {
            SqlType::Complex(k) if k != kind.type_name() => Err(SqlError::validation(format!(
                "{name} of a COMPLEX<{k}> column (expected values or COMPLEX<{}>)",
                kind.type_name()
            ))),
            _ => Ok(p.virtuals.column_for(&x)),
        }
    }

    /// Argument `i` of `name` as a post-aggregator field giving a sketch of `kind`: a sketch
    /// aggregate (planned here) or, for theta, a set operation.
    fn sketch_arg(
        &mut self,
        name: &str,
        args: &[&Expr],
        i: usize,
        kind: Kind,
        p: &mut Planning,
    ) -> Result<Value, SqlError> {
        let e = args.get(i).ok_or_else(|| SqlError::validation(format!("{name} needs a sketch")))?;
        let refused = || {
            SqlError::validation(format!(
                "{name} can only be used on {} aggregates (DS_THETA, DS_QUANTILES_SKETCH) or set operations, not on {}",
                kind.type_name(),
                crate::short(&e.to_string())
            ))
        };
        let Expr::Function(inner) = e else { return Err(refused()) };
        let inner_name = function_name(inner);
        match (kind, inner_name.as_str()) {
            (Kind::Theta, "DS_THETA") | (Kind::Quantiles, "DS_QUANTILES_SKETCH") => {
                let filter = match &inner.filter {
                    Some(cond) => Some(super::filter::filter(cond, p.scope, p.virtuals)?),
                    None => None,
                };
                let mut inner_planning = Planning { scope: p.scope, virtuals: p.virtuals, filter };
                let r = self.sketch_call(&inner_name, inner, &mut inner_planning)?;
                Ok(json!({"type": "fieldAccess", "fieldName": r.name}))
            }
            (Kind::Theta, "THETA_SKETCH_UNION" | "THETA_SKETCH_INTERSECT" | "THETA_SKETCH_NOT") => {
                self.set_op(&inner_name, inner, p)
            }
            _ => Err(refused()),
        }
    }

    /// A `thetaSketchSetOp` over its sketch arguments (the first may be the size).
    fn set_op(&mut self, name: &str, f: &Function, p: &mut Planning) -> Result<Value, SqlError> {
        let args = function_args(f)?;
        let func = name.trim_start_matches("THETA_SKETCH_");
        let mut post = json!({"type": "thetaSketchSetOp", "name": "_", "func": func});
        let mut first = 0;
        if let Some(e) = args.first() {
            if let Ok(Some(Const::Long(size))) = p.scope.scalar(e).map(|s| s.constant) {
                post["size"] = json!(size);
                first = 1;
            }
        }
        let fields: Vec<Value> =
            (first..args.len()).map(|i| self.sketch_arg(name, &args, i, Kind::Theta, p)).collect::<Result<_, _>>()?;
        if fields.len() < 2 {
            return Err(SqlError::validation(format!("{name} takes at least 2 sketches")));
        }
        post["fields"] = json!(fields);
        Ok(post)
    }
}

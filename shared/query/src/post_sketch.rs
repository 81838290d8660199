//! The sketch post-aggregators of Druid's DataSketches extension: `thetaSketchEstimate`,
//! `thetaSketchSetOp` and the `quantilesDoublesSketchTo*` family, over the sketches of a
//! group's `thetaSketch` and `quantilesDoublesSketch` aggregates (or of earlier set operations).

use super::json::json_double;
use super::model::PostAggregator;
use super::QueryError;
use serde_json::{json, Value};
use sluice_format::aggregate::MetricCell;
use sluice_format::sketches::{theta_lg_k, SetOp, DEFAULT_THETA_SIZE};
use std::collections::HashMap;

/// Where the post-aggregators read a group's sketches, by aggregator name.
pub type Sketches<'a> = dyn Fn(&str) -> Option<MetricCell> + 'a;

/// Sketches a set operation takes at most.
pub const MAX_SET_OP_FIELDS: usize = 1_000;
/// Fractions or split points a quantiles post-aggregator takes at most.
pub const MAX_POINTS: usize = 10_000;

/// Checks a sketch post-aggregator's own fields; `check_field` checks each operand.
pub fn check(
    p: &PostAggregator,
    at: &str,
    mut check_field: impl FnMut(&PostAggregator, &str) -> Result<(), QueryError>,
) -> Result<(), QueryError> {
    let bad = |field: &str, why: String| Err(QueryError::invalid(format!("{at}.{field}"), why));
    match p {
        PostAggregator::ThetaEstimate { field, error_bounds_std_dev, .. } => {
            if error_bounds_std_dev.is_some_and(|n| !(1..=3).contains(&n)) {
                return bad("errorBoundsStdDev", "must be 1, 2 or 3".into());
            }
            check_field(field, &format!("{at}.field"))
        }
        PostAggregator::ThetaSetOp { func, size, fields, .. } => {
            if SetOp::parse(func).is_none() {
                return bad("func", format!("{func:?}: expected UNION, INTERSECT or NOT"));
            }
            if let Some(size) = size {
                if let Err(e) = theta_lg_k(*size) {
                    return bad("size", e.to_string());
                }
            }
            if fields.len() < 2 || fields.len() > MAX_SET_OP_FIELDS {
                return bad(
                    "fields",
                    format!("{} fields: a set operation takes 2 to {MAX_SET_OP_FIELDS}", fields.len()),
                );
            }
            for (j, f) in fields.iter().enumerate() {
                check_field(f, &format!("{at}.fields[{j}]"))?;
            }
            Ok(())
        }
        PostAggregator::ToQuantile { field, fraction, .. } => {
            if !(0.0..=1.0).contains(fraction) {
                return bad("fraction", format!("{fraction} is not between 0 and 1"));
            }
            check_field(field, &format!("{at}.field"))
        }
        PostAggregator::ToQuantiles { field, fractions, .. } => {
            if fractions.len() > MAX_POINTS {
                return bad("fractions", format!("{} fractions: at most {MAX_POINTS}", fractions.len()));
            }
            if let Some(f) = fractions.iter().find(|f| !(0.0..=1.0).contains(*f)) {
                return bad("fractions", format!("{f} is not between 0 and 1"));
            }
            check_field(field, &format!("{at}.field"))
        }
        PostAggregator::ToCdf { field, split_points, .. } => {
            increasing(split_points).or_else(|e| bad("splitPoints", e.to_string()))?;
            check_field(field, &format!("{at}.field"))
        }
        PostAggregator::ToHistogram { field, split_points, num_bins, .. } => {
            match (split_points, num_bins) {
                (Some(_), Some(_)) => return bad("numBins", "cannot accept both splitPoints and numBins".into()),
                (Some(points), None) => increasing(points).or_else(|e| bad("splitPoints", e.to_string()))?,
                (None, Some(n)) if *n < 2 || *n > 10_000 => return bad("numBins", format!("{n}: expected 2 to 10000")),
                _ => {}
            }
            check_field(field, &format!("{at}.field"))
        }
        PostAggregator::ToRank { field, .. } => check_field(field, &format!("{at}.field")),
        _ => Ok(()),
    }
}

/// Split points a histogram or CDF cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SplitPointsError {
    /// More than [`MAX_POINTS`].
    #[error("{0} split points: at most {MAX_POINTS}")]
    TooMany(usize),
    /// Not finite, or not increasing.
    #[error("split points must be finite and increasing")]
    NotIncreasing,
}

fn increasing(points: &[f64]) -> Result<(), SplitPointsError> {
    if points.len() > MAX_POINTS {
        return Err(SplitPointsError::TooMany(points.len()));
    }
    if points.iter().any(|p| !p.is_finite()) || points.windows(2).any(|w| w[0] >= w[1]) {
        return Err(SplitPointsError::NotIncreasing);
    }
    Ok(())
}

/// The sketch `p` gives: an aggregate's (through `fieldAccess`) or a set operation's.
pub fn sketch(p: &PostAggregator, made: &HashMap<String, MetricCell>, sketches: &Sketches) -> Option<MetricCell> {
    match p {
        PostAggregator::FieldAccess { field_name, .. } | PostAggregator::FinalizingFieldAccess { field_name, .. } => {
            made.get(field_name).cloned().or_else(|| sketches(field_name))
        }
        PostAggregator::ThetaSetOp { func, size, fields, .. } => {
            let lg_k = theta_lg_k(size.unwrap_or(DEFAULT_THETA_SIZE)).unwrap_or(14);
            let op = SetOp::parse(func)?;
            // Each operand is read as the operation takes it, none held beside the result.
            let mut not_theta = false;
            let operands = fields.iter().map_while(|f| match sketch(f, made, sketches) {
                Some(MetricCell::Theta(t)) => Some(*t),
                _ => {
                    not_theta = true;
                    None
                }
            });
            let result = op.apply(lg_k, operands);
            (!not_theta).then(|| MetricCell::Theta(Box::new(result)))
        }
        _ => None,
    }
}

/// The value of sketch post-aggregator `p` (`None`: `p` is not one); a set operation's
/// sketch is kept in `made` for the post-aggregators after it.
pub fn value(p: &PostAggregator, made: &mut HashMap<String, MetricCell>, sketches: &Sketches) -> Option<Value> {
    let quantiles = |field: &PostAggregator, made: &HashMap<String, MetricCell>| match sketch(field, made, sketches) {
        Some(MetricCell::Quantiles(q)) if q.n() > 0 => Some(q),
        _ => None,
    };
    let doubles = |v: Option<Vec<f64>>| v.map(|v| json!(v.into_iter().map(json_double).collect::<Vec<_>>()));
    Some(match p {
        PostAggregator::ThetaEstimate { field, error_bounds_std_dev, .. } => {
            let Some(MetricCell::Theta(t)) = sketch(field, made, sketches) else { return Some(Value::Null) };
            match error_bounds_std_dev {
                None => json_double(t.estimate()),
                Some(n) => {
                    let (low, high) = t.bounds(*n);
                    json!({"estimate": json_double(t.estimate()), "highBound": json_double(high),
                        "lowBound": json_double(low), "numStdDev": n})
                }
            }
        }
        PostAggregator::ThetaSetOp { name, .. } => match sketch(p, made, sketches) {
            Some(cell) => {
                let shown = super::aggregator::sketch_json(&cell);
                made.insert(name.clone(), cell);
                shown
            }
            None => Value::Null,
        },
        PostAggregator::ToQuantile { field, fraction, .. } => {
            quantiles(field, made).and_then(|q| q.quantile(*fraction)).map(json_double).unwrap_or(Value::Null)
        }
        PostAggregator::ToQuantiles { field, fractions, .. } => {
            doubles(quantiles(field, made).and_then(|q| q.quantiles(fractions))).unwrap_or(Value::Null)
        }
        PostAggregator::ToRank { field, value, .. } => {
            quantiles(field, made).and_then(|q| q.rank(*value)).map(json_double).unwrap_or(Value::Null)
        }
        PostAggregator::ToCdf { field, split_points, .. } => {
            doubles(quantiles(field, made).and_then(|q| q.split(split_points, true))).unwrap_or(Value::Null)
        }
        PostAggregator::ToHistogram { field, split_points, num_bins, .. } => {
            let histogram = quantiles(field, made).and_then(|q| match split_points {
                Some(points) => q.split(points, false),
                None => q.histogram(num_bins.unwrap_or(10)),
            });
            doubles(histogram).unwrap_or(Value::Null)
        }
        _ => return None,
    })
}

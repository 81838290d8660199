//! Judging a filter against a segment's summary: can any row of the segment match?
//!
//! A filter's truth on a row is true, false or unknown (a comparison with null), as
//! [`crate::filter`] evaluates it. For each part of the filter the pruner works out which of
//! true and false some row of the segment may give, from what the summary says of the column
//! the part tests: a leaf may be true (false) when some value of the column, or null if some
//! row is null, may make it so; `and` may be true when every part may be, false when any may
//! be; `or` the other way round; `not` swaps them, so that `not` of a test that is unknown on
//! every row cannot match, as in Druid. A multi-value row is true when one of its values is,
//! and false only when one of its values is, so the same judgement covers it.
//!
//! Each judgement errs towards "may": a leaf on a column the summary says nothing of (a
//! metric, `__time`, a virtual column) or an `expression` filter may be either.

use super::{ColumnSummary, DoubleSummary, LongSummary, NumberSpan, SegmentSummary, StringSummary, SUMMARY_VERSION};
use crate::filter::{Filter, FilterError, RowFilter, Truth};
use crate::value::Value;

/// Which truth values some row of a segment may give a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Outcomes {
    /// Some row may make it true.
    yes: bool,
    /// Some row may make it false.
    no: bool,
}

const ANY: Outcomes = Outcomes { yes: true, no: true };
const NEITHER: Outcomes = Outcomes { yes: false, no: false };

impl Outcomes {
    fn of(truth: Truth) -> Self {
        Outcomes { yes: truth == Some(true), no: truth == Some(false) }
    }

    fn or(self, other: Outcomes) -> Self {
        Outcomes { yes: self.yes || other.yes, no: self.no || other.no }
    }
}

/// A filter ready to be judged against many summaries (its patterns compiled once).
#[derive(Debug, Clone)]
pub struct SegmentPruner {
    root: Node,
}

#[derive(Debug, Clone)]
enum Node {
    Fixed(Outcomes),
    Leaf(Leaf),
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
}

/// A filter on one column, compiled for one value slot.
#[derive(Debug, Clone)]
struct Leaf {
    column: String,
    test: RowFilter,
    /// A `like` pattern's literal start, and whether it is the whole pattern.
    like: Option<(String, bool)>,
}

impl SegmentPruner {
    /// Prepares `filter`; `virtual_columns` names the query's virtual columns, whose values no
    /// summary holds.
    pub fn new(filter: &Filter, virtual_columns: &[&str]) -> Result<Self, FilterError> {
        Ok(Self { root: node(filter, virtual_columns)? })
    }

    /// Returns false only when no row of the segment `summary` describes can match the filter.
    /// A summary of another version matches; a segment of no rows does not.
    pub fn may_match(&self, summary: &SegmentSummary) -> bool {
        if summary.version != SUMMARY_VERSION {
            return true;
        }
        summary.num_rows > 0 && judge(&self.root, summary).yes
    }
}

/// Returns false only when no row of the segment `summary` describes can match `filter` (a
/// query without virtual columns; a filter that does not compile may match).
pub fn may_match(filter: &Filter, summary: &SegmentSummary) -> bool {
    SegmentPruner::new(filter, &[]).map_or(true, |p| p.may_match(summary))
}

fn node(filter: &Filter, virtual_columns: &[&str]) -> Result<Node, FilterError> {
    let column = match filter {
        Filter::True => return Ok(Node::Fixed(Outcomes { yes: true, no: false })),
        Filter::False => return Ok(Node::Fixed(Outcomes { yes: false, no: true })),
        Filter::Expression { .. } | Filter::ColumnComparison { .. } => return Ok(Node::Fixed(ANY)),
        Filter::And { fields } => {
            return Ok(Node::And(fields.iter().map(|f| node(f, virtual_columns)).collect::<Result<_, _>>()?))
        }
        Filter::Or { fields } => {
            return Ok(Node::Or(fields.iter().map(|f| node(f, virtual_columns)).collect::<Result<_, _>>()?))
        }
        Filter::Not { field } => return Ok(Node::Not(Box::new(node(field, virtual_columns)?))),
        leaf => leaf.column().unwrap_or_default(),
    };
    let test = filter.compile(&mut |_| 0)?;
    if column == "__time" || virtual_columns.contains(&column) {
        return Ok(Node::Fixed(ANY));
    }
    let like = match filter {
        Filter::Like { pattern, escape, .. } => {
            Some(like_start(pattern, escape.as_deref().and_then(|e| e.chars().next())))
        }
        _ => None,
    };
    Ok(Node::Leaf(Leaf { column: column.to_string(), test, like }))
}

/// The characters a LIKE pattern starts with before its first wildcard (as
/// [`crate::filter::like_to_regex`] reads it), and whether it has none.
fn like_start(pattern: &str, escape: Option<char>) -> (String, bool) {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else if c == '%' || c == '_' {
            return (out, false);
        } else {
            out.push(c);
        }
    }
    (out, true)
}

fn judge(node: &Node, summary: &SegmentSummary) -> Outcomes {
    match node {
        Node::Fixed(o) => *o,
        Node::And(parts) => parts
            .iter()
            .map(|p| judge(p, summary))
            .fold(Outcomes { yes: true, no: false }, |a, o| Outcomes { yes: a.yes && o.yes, no: a.no || o.no }),
        Node::Or(parts) => parts
            .iter()
            .map(|p| judge(p, summary))
            .fold(Outcomes { yes: false, no: true }, |a, o| Outcomes { yes: a.yes || o.yes, no: a.no && o.no }),
        Node::Not(inner) => {
            let o = judge(inner, summary);
            Outcomes { yes: o.no, no: o.yes }
        }
        Node::Leaf(leaf) => {
            let on_null = || Outcomes::of(leaf.test.truth(&[Value::Null], 0));
            let nulls = |any: bool| if any { on_null() } else { NEITHER };
            match summary.columns.get(&leaf.column) {
                // Absent from the segment: every row reads it as null.
                None => on_null(),
                Some(ColumnSummary::Other) => ANY,
                Some(ColumnSummary::String(s)) => nulls(s.nulls).or(strings(leaf, s)),
                Some(ColumnSummary::Long(l)) => nulls(l.nulls).or(longs(&leaf.test, l)),
                Some(ColumnSummary::Double(d)) => nulls(d.nulls).or(doubles(&leaf.test, d)),
            }
        }
    }
}

/// Some value at least `x` (above it, with `strict`) may lie at or below the largest value
/// `max`, or below any value `max` starts (`cut`).
fn max_reaches(max: Option<&str>, cut: bool, x: &str, strict: bool) -> bool {
    match max {
        None => true,
        Some(max) if cut => x <= max || x.starts_with(max),
        Some(max) => {
            if strict {
                x < max
            } else {
                x <= max
            }
        }
    }
}

/// Some value at most `x` (below it, with `strict`) may lie at or above the smallest value (or
/// a prefix of it) `min`.
fn min_reaches(min: Option<&str>, x: &str, strict: bool) -> bool {
    min.is_none_or(|min| if strict { min < x } else { min <= x })
}

impl StringSummary {
    /// Whether some row may hold `value`.
    fn may_hold(&self, value: &str) -> bool {
        if let Some(values) = &self.values {
            return values.binary_search_by(|v| v.as_str().cmp(value)).is_ok();
        }
        min_reaches(self.min.as_deref(), value, false)
            && max_reaches(self.max.as_deref(), self.max_cut, value, false)
            && self.bloom.as_ref().is_none_or(|b| b.may_contain(value))
    }

    /// Whether some row may hold a value starting with `prefix`.
    fn may_hold_prefixed(&self, prefix: &str) -> bool {
        let above_min = self.min.as_deref().is_none_or(|min| min <= prefix || min.starts_with(prefix));
        above_min && max_reaches(self.max.as_deref(), self.max_cut, prefix, false)
    }

    /// Whether no row holds a value.
    fn holds_no_value(&self) -> bool {
        match &self.values {
            Some(values) => values.is_empty(),
            None => self.min.is_none() && self.max.is_none() && self.bloom.is_none() && self.numbers.is_none(),
        }
    }
}

/// What the non-null values of a string dimension may give `leaf`.
fn strings(leaf: &Leaf, s: &StringSummary) -> Outcomes {
    if s.holds_no_value() {
        return NEITHER;
    }
    if let Some(values) = &s.values {
        let each = values.iter().map(|v| Outcomes::of(leaf.test.truth(&[Value::String(v.clone())], 0)));
        return each.fold(NEITHER, Outcomes::or);
    }
    match &leaf.test {
        RowFilter::Const(b) => Outcomes { yes: *b, no: !*b },
        RowFilter::InSet(_, set) => Outcomes { yes: set.iter().flatten().any(|v| s.may_hold(v)), no: true },
        RowFilter::NumEq(_, x) => Outcomes { yes: s.numbers.is_some_and(|n| n.min() <= *x && *x <= n.max()), no: true },
        RowFilter::NumRange(_, lo, hi) => {
            // A value that does not read as a number is unknown, neither true nor false.
            let yes = s.numbers.is_some_and(|n| overlaps(n, *lo, *hi));
            Outcomes { yes, no: s.numbers.is_some_and(|n| !within(n, *lo, *hi)) }
        }
        RowFilter::StrRange(_, lo, hi) => {
            let (min, max) = (s.min.as_deref(), s.max.as_deref());
            let yes = lo.as_ref().is_none_or(|(b, strict)| max_reaches(max, s.max_cut, b, *strict))
                && hi.as_ref().is_none_or(|(b, strict)| min_reaches(min, b, *strict));
            // The range holds every value when it holds the smallest and the largest.
            let lo_holds = lo.as_ref().is_none_or(|(b, strict)| {
                min.is_some_and(|min| if *strict { b.as_str() < min } else { b.as_str() <= min })
            });
            let hi_holds = hi.as_ref().is_none_or(|(b, strict)| {
                !s.max_cut && max.is_some_and(|max| if *strict { max < b.as_str() } else { max <= b.as_str() })
            });
            Outcomes { yes, no: !(lo_holds && hi_holds) }
        }
        RowFilter::Regex(..) => match &leaf.like {
            Some((start, true)) => Outcomes { yes: s.may_hold(start), no: true },
            Some((start, false)) => Outcomes { yes: s.may_hold_prefixed(start), no: true },
            None => ANY,
        },
        RowFilter::IsNull(_) => Outcomes { yes: false, no: true },
        RowFilter::And(_)
        | RowFilter::Or(_)
        | RowFilter::Not(_)
        | RowFilter::Expr(_)
        | RowFilter::Search(..)
        | RowFilter::Same(_) => ANY,
    }
}

/// Some number within `span` may lie within the bounds (a NaN bound holds none).
fn overlaps(span: NumberSpan, lo: Option<(f64, bool)>, hi: Option<(f64, bool)>) -> bool {
    let lo_ok = lo.is_none_or(|(b, strict)| if strict { span.max() > b } else { span.max() >= b });
    let hi_ok = hi.is_none_or(|(b, strict)| if strict { span.min() < b } else { span.min() <= b });
    lo_ok && hi_ok
}

/// Every number within `span` lies within the bounds.
fn within(span: NumberSpan, lo: Option<(f64, bool)>, hi: Option<(f64, bool)>) -> bool {
    let lo_ok = lo.is_none_or(|(b, strict)| if strict { b < span.min() } else { b <= span.min() });
    let hi_ok = hi.is_none_or(|(b, strict)| if strict { span.max() < b } else { span.max() <= b });
    lo_ok && hi_ok
}

/// What the non-null values of a numeric dimension within `span` may give `test`; `reads` tells
/// whether a string may be the text of such a value (a long's digits, a double's shortest form).
fn numeric(test: &RowFilter, span: NumberSpan, reads: impl Fn(&str) -> bool) -> Outcomes {
    match test {
        RowFilter::Const(b) => Outcomes { yes: *b, no: !*b },
        RowFilter::InSet(_, set) => Outcomes { yes: set.iter().flatten().any(|v| reads(v)), no: true },
        RowFilter::NumEq(_, x) => {
            let yes = span.min() <= *x && *x <= span.max();
            Outcomes { yes, no: !(span.min() == *x && span.max() == *x) }
        }
        RowFilter::NumRange(_, lo, hi) => Outcomes { yes: overlaps(span, *lo, *hi), no: !within(span, *lo, *hi) },
        RowFilter::IsNull(_) => Outcomes { yes: false, no: true },
        // Compared as text or patterns: any.
        _ => ANY,
    }
}

fn longs(test: &RowFilter, l: &LongSummary) -> Outcomes {
    let Some([lo, hi]) = l.span else { return NEITHER };
    let span = NumberSpan(Some(lo as f64), Some(hi as f64));
    // A long reads as its digits, which read back as the long.
    numeric(test, span, |v| v.parse::<i64>().is_ok_and(|v| lo <= v && v <= hi))
}

fn doubles(test: &RowFilter, d: &DoubleSummary) -> Outcomes {
    let Some(span) = d.span else { return NEITHER };
    // A double reads as its shortest form (`value::format_double`), which reads back as it.
    let reads = |v: &str| {
        v.parse::<f64>().is_ok_and(|x| if x.is_nan() { span.is_wild() } else { span.min() <= x && x <= span.max() })
    };
    numeric(test, span, reads)
}

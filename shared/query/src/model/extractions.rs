//! Extraction functions (`extractionFn`), as Druid's dimension specs and filters carry them,
//! read as Druid expressions over the column they apply to: `substring`, `upper`, `lower`,
//! `strlen`, `regex`, `partial`, `searchQuery`, `timeFormat` (of `__time`), `bucket`,
//! `stringFormat`, `cascade`, and lookups inside a cascade. When a query is read, each
//! becomes a virtual column the dimension or filter then reads, so that a function of one
//! string column is computed once per dictionary value and filtered through its bitmaps.
//! `javascript` and the others are refused by name.

use super::extraction_error::ExtractionError;
use super::{DimensionSpec, VirtualColumn};
use crate::aggregator_spec::QueryAggregator;
use serde_json::{Map, Value};
use sluice_format::filter::Filter;

/// Most functions a cascade chains.
const MAX_CASCADE: usize = 16;
/// Longest expression an extraction function becomes (a cascade repeats its input).
const MAX_EXPRESSION_BYTES: usize = 64 << 10;

/// The column of the values of `dimension` through extraction function `f`, named `name`.
fn column(name: String, dimension: &str, f: &Value) -> Result<VirtualColumn, ExtractionError> {
    if matches!(f.get("type").and_then(Value::as_str), Some("lookup" | "registeredLookup")) {
        let lookup = super::lookup_dimensions::extraction(f)?;
        return Ok(super::lookup_dimensions::looked_up(name, dimension, lookup));
    }
    let input = if dimension == "__time" { "__time".to_string() } else { identifier(dimension) };
    Ok(VirtualColumn::Expression { name, expression: expression(f, &input)?, output_type: None })
}

/// Points the dimensions with an extraction function at virtual columns holding the values
/// through it.
pub fn fold_dimensions(dims: &mut [DimensionSpec], virtuals: &mut Vec<VirtualColumn>) -> Result<(), ExtractionError> {
    for d in dims {
        if let Some(f) = d.extraction.take() {
            let name = format!("__extraction{}:{}", virtuals.len(), d.output_name);
            virtuals.push(
                column(name.clone(), &d.dimension, &f).map_err(|e| e.at(format!("dimension {:?}", d.output_name)))?,
            );
            d.dimension = name;
        }
    }
    Ok(())
}

/// Points the filters with an extraction function (in `filter` and in the filtered
/// aggregators) at virtual columns holding the values through it, and the aggregators over an
/// `expression` at virtual columns computing it.
pub fn fold_filters(
    filter: Option<&mut Filter>,
    aggregators: &mut [QueryAggregator],
    virtuals: &mut Vec<VirtualColumn>,
) -> Result<(), ExtractionError> {
    if let Some(f) = filter {
        fold_filter(f, virtuals)?;
    }
    for a in aggregators {
        let mut a = a;
        while let QueryAggregator::Filtered { filter, aggregator, .. } = a {
            fold_filter(filter, virtuals)?;
            a = aggregator;
        }
        // A numeric aggregator over an expression reads a virtual column computing it.
        if let QueryAggregator::Plain(spec) = a {
            use sluice_format::spec::AggregatorSpec::*;
            if let LongSum(n) | DoubleSum(n) | FloatSum(n) | LongMin(n) | LongMax(n) | DoubleMin(n) | DoubleMax(n)
            | FloatMin(n) | FloatMax(n) = spec
            {
                if let (None, Some(expression)) = (&n.field_name, n.expression.take()) {
                    let name = format!("__input{}:{}", virtuals.len(), n.name);
                    virtuals.push(VirtualColumn::Expression { name: name.clone(), expression, output_type: None });
                    n.field_name = Some(name);
                }
            }
        }
    }
    Ok(())
}

fn fold_filter(filter: &mut Filter, virtuals: &mut Vec<VirtualColumn>) -> Result<(), ExtractionError> {
    if let Filter::Interval { extraction_fn: Some(_), .. } = filter {
        return Err(ExtractionError::Unsupported("an interval filter with an extractionFn is not supported"));
    }
    match filter {
        Filter::And { fields } | Filter::Or { fields } => {
            fields.iter_mut().try_for_each(|f| fold_filter(f, virtuals))?;
        }
        Filter::Not { field } => fold_filter(field, virtuals)?,
        leaf => {
            if let Some((dimension, extraction)) = leaf.extraction_mut() {
                if let Some(f) = extraction.take() {
                    let name = format!("__extraction{}:{dimension}", virtuals.len());
                    virtuals.push(
                        column(name.clone(), dimension, &f).map_err(|e| e.at(format!("filter on {dimension:?}")))?,
                    );
                    *dimension = name;
                }
            }
        }
    }
    Ok(())
}

/// An identifier as expression text.
pub fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
}

fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The expression applying extraction function `f` to the value of expression `input`.
pub fn expression(f: &Value, input: &str) -> Result<String, ExtractionError> {
    expression_at(f, input, 0)
}

fn expression_at(f: &Value, input: &str, depth: usize) -> Result<String, ExtractionError> {
    let Value::Object(o) = f else { return Err(ExtractionError::NotAnObject) };
    let needs = |form, field| ExtractionError::Needs { form, field };
    let kind = o.get("type").and_then(Value::as_str).ok_or(needs("extractionFn", "a \"type\""))?;
    let text = |k: &str| o.get(k).and_then(Value::as_str);
    let int = |k: &str| o.get(k).and_then(Value::as_i64);
    let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
    Ok(match kind {
        "upper" | "lower" => format!("{kind}({input})"),
        // Null stays null, as in Druid's SQL-compatible mode.
        "strlen" => format!("strlen({input})"),
        "substring" => {
            let index = int("index").unwrap_or(0);
            if index < 0 {
                return Err(ExtractionError::OutOfRange { form: "substring", expected: "\"index\" >= 0" });
            }
            let length = int("length").unwrap_or(-1);
            format!("if(strlen({input}) > {index}, substring({input}, {index}, {length}), null)")
        }
        "regex" => {
            let pattern = text("expr").ok_or(needs("a regex extractionFn", "\"expr\""))?;
            let index = int("index").unwrap_or(1).max(0);
            let missing = match (flag("replaceMissingValue"), text("replaceMissingValueWith")) {
                (true, Some(r)) => literal(r),
                (true, None) => "null".into(),
                (false, _) => input.to_string(),
            };
            format!("nvl(regexp_extract({input}, {}, {index}), {missing})", literal(pattern))
        }
        "partial" => {
            let pattern = text("expr").ok_or(needs("a partial extractionFn", "\"expr\""))?;
            format!("if(regexp_like({input}, {}), {input}, null)", literal(pattern))
        }
        "searchQuery" => {
            let query = o.get("query").ok_or(needs("a searchQuery extractionFn", "\"query\""))?;
            format!("if({}, {input}, null)", search_test(query, input)?)
        }
        "timeFormat" => {
            if input != "__time" {
                return Err(ExtractionError::Unsupported("timeFormat applies to __time here"));
            }
            let zone = text("timeZone").unwrap_or("UTC");
            sluice_format::expr::time_zone(zone).map_err(ExtractionError::TimeZone)?;
            // The granularity buckets in its own zone (UTC when it names none), as Druid's does;
            // `asMillis` is about reading string input, which `__time` is not.
            let time = match o.get("granularity") {
                None | Some(Value::Null) => input.to_string(),
                Some(g) => match period_of(g)? {
                    None => input.to_string(),
                    Some((period, tz)) => {
                        let tz = tz.unwrap_or_else(|| "UTC".to_string());
                        format!("timestamp_floor({input}, {}, null, {})", literal(&period), literal(&tz))
                    }
                },
            };
            match text("format") {
                Some(pattern) => format!("timestamp_format({time}, {}, {})", literal(pattern), literal(zone)),
                None => format!("timestamp_format({time}, null, {})", literal(zone)),
            }
        }
        "bucket" => {
            let size = o.get("size").and_then(Value::as_f64).unwrap_or(1.0);
            let offset = o.get("offset").and_then(Value::as_f64).unwrap_or(0.0);
            if !(size.is_finite() && size > 0.0 && offset.is_finite()) {
                return Err(ExtractionError::OutOfRange {
                    form: "bucket",
                    expected: "a positive \"size\" and a finite \"offset\"",
                });
            }
            let bucket = format!("(floor((cast({input}, 'DOUBLE') - {offset:?}) / {size:?}) * {size:?} + {offset:?})");
            // A whole bucket is written without a fraction, as Druid writes it.
            format!("if(floor({bucket}) == {bucket}, cast({bucket}, 'LONG'), {bucket})")
        }
        "stringFormat" => {
            let pattern = text("format").ok_or(needs("a stringFormat extractionFn", "\"format\""))?;
            let call = |value: &str| format!("format({}, {value})", literal(pattern));
            match text("nullHandling").unwrap_or("nullString") {
                "nullString" => call(&format!("nvl({input}, 'null')")),
                "emptyString" => call(&format!("nvl({input}, '')")),
                "returnNull" => format!("if(isnull({input}), null, {})", call(input)),
                other => {
                    return Err(ExtractionError::NotAChoice {
                        field: "stringFormat nullHandling",
                        value: sluice_format::text::excerpt(other, 40).into_owned(),
                        expected: "nullString, emptyString or returnNull",
                    })
                }
            }
        }
        "cascade" => {
            let fns =
                o.get("extractionFns").and_then(Value::as_array).ok_or(needs("a cascade", "\"extractionFns\""))?;
            if fns.len() > MAX_CASCADE || depth > MAX_CASCADE {
                return Err(ExtractionError::CascadeTooLong(MAX_CASCADE));
            }
            let mut out = input.to_string();
            for f in fns {
                out = expression_at(f, &out, depth + 1)?;
                if out.len() > MAX_EXPRESSION_BYTES {
                    return Err(ExtractionError::ExpressionTooLong(MAX_EXPRESSION_BYTES));
                }
            }
            out
        }
        "registeredLookup" => {
            let name = text("lookup").ok_or(needs("a registeredLookup extractionFn", "\"lookup\""))?;
            lookup(o, input, name)?
        }
        "lookup" => {
            return Err(ExtractionError::Unsupported(
                "an inline lookup extractionFn inside a cascade is not supported: register the lookup",
            ))
        }
        "identity" => input.to_string(),
        "javascript" => {
            return Err(ExtractionError::Unsupported(
                "javascript extraction functions are not supported (Druid disables JavaScript by default)",
            ))
        }
        other => {
            return Err(ExtractionError::unknown_type(
                other,
                "substring, upper, lower, strlen, regex, partial, searchQuery, timeFormat, bucket, stringFormat, \
                 cascade, lookup or registeredLookup",
            ))
        }
    })
}

fn lookup(o: &Map<String, Value>, input: &str, name: &str) -> Result<String, ExtractionError> {
    let retain = o.get("retainMissingValue").and_then(Value::as_bool).unwrap_or(false);
    let replace = o.get("replaceMissingValueWith").and_then(Value::as_str).filter(|s| !s.is_empty());
    Ok(match (retain, replace) {
        (true, Some(_)) => return Err(ExtractionError::MissingValueConflict),
        (true, None) => format!("nvl(lookup({input}, {}), {input})", literal(name)),
        (false, Some(r)) => format!("lookup({input}, {}, {})", literal(name), literal(r)),
        (false, None) => format!("lookup({input}, {})", literal(name)),
    })
}

/// A search query spec as a boolean expression over `input`.
fn search_test(query: &Value, input: &str) -> Result<String, ExtractionError> {
    let spec: sluice_format::search::SearchSpec =
        serde_json::from_value(query.clone()).map_err(ExtractionError::SearchQuery)?;
    use sluice_format::search::SearchSpec;
    let contains = |value: &str, case_sensitive: bool| {
        let f = if case_sensitive { "contains_string" } else { "icontains_string" };
        format!("{f}({input}, {})", literal(value))
    };
    Ok(match spec {
        SearchSpec::Contains { value, case_sensitive } => contains(&value, case_sensitive),
        SearchSpec::InsensitiveContains { value } => contains(&value, false),
        SearchSpec::Fragment { values, case_sensitive } => {
            let all: Vec<String> = values.iter().map(|v| contains(v, case_sensitive)).collect();
            if all.is_empty() {
                "1".into()
            } else {
                format!("({})", all.join(" && "))
            }
        }
        SearchSpec::Regex { pattern } => format!("regexp_like({input}, {})", literal(&pattern)),
    })
}

/// The ISO period and zone a granularity buckets by (`None` for `all` and `none`).
fn period_of(g: &Value) -> Result<Option<(String, Option<String>)>, ExtractionError> {
    let named = |name: &str| -> Result<Option<(String, Option<String>)>, ExtractionError> {
        let period = match name.to_ascii_lowercase().as_str() {
            "all" | "none" => return Ok(None),
            "second" => "PT1S",
            "minute" => "PT1M",
            "five_minute" => "PT5M",
            "ten_minute" => "PT10M",
            "fifteen_minute" => "PT15M",
            "thirty_minute" => "PT30M",
            "hour" => "PT1H",
            "six_hour" => "PT6H",
            "eight_hour" => "PT8H",
            "day" => "P1D",
            "week" => "P1W",
            "month" => "P1M",
            "quarter" => "P3M",
            "year" => "P1Y",
            other => {
                return Err(ExtractionError::UnknownGranularity(sluice_format::text::excerpt(other, 40).into_owned()))
            }
        };
        Ok(Some((period.to_string(), None)))
    };
    match g {
        Value::String(name) => named(name),
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("period") => {
                if o.get("origin").is_some_and(|v| !v.is_null()) {
                    return Err(ExtractionError::Unsupported(
                        "a timeFormat granularity with an origin is not supported",
                    ));
                }
                let period = o
                    .get("period")
                    .and_then(Value::as_str)
                    .ok_or(ExtractionError::Needs { form: "a period granularity", field: "\"period\"" })?;
                Ok(Some((period.to_string(), o.get("timeZone").and_then(Value::as_str).map(str::to_string))))
            }
            Some("duration") => {
                let ms = o.get("duration").and_then(Value::as_i64).filter(|ms| *ms > 0 && ms % 1000 == 0);
                let ms = ms.ok_or(ExtractionError::OutOfRange {
                    form: "a timeFormat duration granularity",
                    expected: "a \"duration\" of whole seconds",
                })?;
                Ok(Some((format!("PT{}S", ms / 1000), None)))
            }
            Some(name) => named(name),
            None => Err(ExtractionError::Needs { form: "a granularity object", field: "\"type\"" }),
        },
        _ => Err(ExtractionError::NotAChoice {
            field: "granularity",
            value: sluice_format::text::excerpt(&g.to_string(), 40).into_owned(),
            expected: "a name or an object",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sluice_format::value::Value as V;

    fn run(f: Value, input: &str, value: V, time: i64) -> V {
        let text = expression(&f, input).expect("translates");
        let e = sluice_format::expr::parse(&text, &mut |_| 0).unwrap_or_else(|e| panic!("{text}: {e}"));
        sluice_format::expr::eval(&e, &[value], time)
    }

    #[test]
    fn extraction_functions_give_druids_values() {
        let s = |t: &str| V::String(t.into());
        let x = identifier("x");
        let cascade = json!({"type": "cascade", "extractionFns": [{"type": "substring", "index": 0, "length": 1}, {"type": "upper"}]});
        assert_eq!(run(cascade, &x, s("wiki"), 0), s("W"));
        assert_eq!(run(json!({"type": "substring", "index": 5}), &x, s("wiki"), 0), V::Null);
        assert_eq!(run(json!({"type": "substring", "index": 1, "length": 2}), &x, s("wiki"), 0), s("ik"));
        assert_eq!(run(json!({"type": "strlen"}), &x, V::Null, 0), V::Null);
        let regex = json!({"type": "regex", "expr": "#([a-z]+)\\.", "replaceMissingValue": true, "replaceMissingValueWith": "other"});
        assert_eq!(run(regex.clone(), &x, s("#en.wikipedia"), 0), s("en"));
        assert_eq!(run(regex, &x, s("wikidata"), 0), s("other"));
        assert_eq!(run(json!({"type": "regex", "expr": "^z"}), &x, s("abc"), 0), s("abc"), "a miss keeps the value");
        assert_eq!(run(json!({"type": "partial", "expr": "^a"}), &x, s("bc"), 0), V::Null);
        let search = json!({"type": "searchQuery", "query": {"type": "contains", "value": "WIK"}});
        assert_eq!(run(search, &x, s("wiki"), 0), s("wiki"));
        assert_eq!(run(json!({"type": "bucket", "size": 100}), &x, V::Long(-250), 0), V::Long(-300));
        assert_eq!(run(json!({"type": "bucket", "size": 2.5, "offset": 1}), &x, V::Long(5), 0), V::Double(3.5));
        assert_eq!(run(json!({"type": "bucket", "size": 2.5}), &x, V::Long(5), 0), V::Long(5), "a whole bucket");
        let deep = json!({"type": "cascade", "extractionFns": vec![json!({"type": "searchQuery",
            "query": {"type": "fragment", "values": ["a", "b", "c"]}}); 16]});
        let refusal = expression(&deep, &x).expect_err("refused before it is built");
        assert!(matches!(refusal, ExtractionError::ExpressionTooLong(_)), "{refusal}");
        let format = json!({"type": "stringFormat", "format": "ns:%s", "nullHandling": "returnNull"});
        assert_eq!(run(format.clone(), &x, s("Main"), 0), s("ns:Main"));
        assert_eq!(run(format, &x, V::Null, 0), V::Null);
        assert_eq!(run(json!({"type": "stringFormat", "format": "[%s]"}), &x, V::Null, 0), s("[null]"));
        let hour = json!({"type": "timeFormat", "format": "H", "timeZone": "Europe/Paris"});
        assert_eq!(run(hour, "__time", V::Null, 1_442_052_000_000), s("12"), "10:00 UTC is noon in Paris");
        let floored = json!({"type": "timeFormat", "format": "yyyy-MM-dd'T'HH:mm", "granularity": {"type": "period", "period": "PT1H", "timeZone": "Etc/UTC"}});
        assert_eq!(run(floored, "__time", V::Null, 1_442_052_345_000), s("2015-09-12T10:00"));
        for refused in [
            json!({"type": "javascript", "function": "x"}),
            json!({"type": "time"}),
            json!({"type": "upper"}).get("x").cloned().unwrap_or(json!(1)),
        ] {
            assert!(expression(&refused, &x).is_err(), "{refused}");
        }
    }
}

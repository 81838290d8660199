//! Summaries of segments built through the index and the writer, judged against the segments'
//! rows as the query engine reads them.

use super::*;
use crate::filter::Filter;
use crate::index::{IncrementalIndex, IndexConfig};
use crate::input::RecordParser;
use crate::row::{DimValue, Row};
use crate::segment::Segment;
use crate::spec::load_spec_value;
use crate::time::Interval;
use crate::value::Value;
use proptest::prelude::*;

const DIMS: [&str; 6] = ["s", "m", "l", "d", "f", "u"];

fn spec_parser() -> (IndexConfig, RecordParser) {
    let spec = load_spec_value(serde_json::json!({
        "type": "kafka",
        "spec": {
            "dataSchema": {
                "dataSource": "p",
                "timestampSpec": {"column": "t", "format": "millis"},
                "dimensionsSpec": {"dimensions": [
                    "s",
                    {"name": "m", "type": "string", "multiValueHandling": "SORTED_ARRAY"},
                    {"name": "l", "type": "long"},
                    {"name": "d", "type": "double"},
                    {"name": "f", "type": "float"},
                    {"name": "u", "type": "string", "createBitmapIndex": false}
                ]},
                "metricsSpec": [{"type": "count", "name": "count"}],
                "granularitySpec": {"segmentGranularity": "hour", "queryGranularity": "none", "rollup": false}
            },
            "ioConfig": {"topic": "p", "inputFormat": {"type": "json"}, "consumerProperties": {"bootstrap.servers": "b"}}
        }
    }))
    .expect("spec")
    .spec;
    (IndexConfig::from_spec(&spec), RecordParser::new(&spec).expect("parser"))
}

/// Words that test orderings, prefixes, numbers read from strings and LIKE's wildcards.
const WORDS: [&str; 16] =
    ["", "a", "ab", "abc", "b", "é", "zz", "0", "7", " 12", "12", "1e3", "-3.5", "NaN", "a%", "a_c"];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![4 => prop::sample::select(WORDS.to_vec()).prop_map(str::to_string), 1 => "[ab1]{0,4}"]
}

fn row() -> impl Strategy<Value = Row> {
    let string = || prop_oneof![1 => Just(DimValue::Null), 4 => word().prop_map(DimValue::Str)];
    let multi = prop_oneof![
        1 => Just(DimValue::Null),
        2 => word().prop_map(DimValue::Str),
        2 => prop::collection::btree_set(word(), 2..4).prop_map(|v| DimValue::Multi(v.into_iter().collect())),
    ];
    let long = prop_oneof![1 => Just(DimValue::Null), 4 => (-4i64..12).prop_map(DimValue::Long)];
    let double = || prop::option::of(-6i32..6).prop_map(|v| v.map(|v| v as f64 * 0.75));
    (0i64..3_600_000, string(), multi, long, double(), double(), string()).prop_map(|(t, s, m, l, d, f, u)| Row {
        time: t,
        dims: vec![
            s,
            m,
            l,
            d.map(DimValue::Double).unwrap_or(DimValue::Null),
            f.map(|v| DimValue::Float(v as f32)).unwrap_or(DimValue::Null),
            u,
        ],
        metrics: vec![Value::Null],
    })
}

fn column() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["s", "m", "l", "d", "f", "u", "gone", "count", "__time"]).prop_map(str::to_string)
}

fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        word(),
        (-5i32..13).prop_map(|v| v.to_string()),
        (-8i32..8).prop_map(|v| format!("{:?}", v as f64 * 0.75))
    ]
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        number_text().prop_map(serde_json::Value::from),
        (-5i64..13).prop_map(serde_json::Value::from),
        (-8i32..8).prop_map(|v| serde_json::Value::from(v as f64 * 0.75)),
    ]
}

fn leaf() -> impl Strategy<Value = Filter> {
    let kind = prop::sample::select(vec!["STRING", "LONG", "DOUBLE"]).prop_map(str::to_string);
    let pattern = prop::sample::select(vec!["a%", "ab%", "%b", "_", "%", "a_c", "é%", "1%", "zz", "a!%%", "!_%"]);
    prop_oneof![
        (column(), prop::option::of(number_text())).prop_map(|(dimension, value)| Filter::Selector {
            dimension,
            value,
            extraction_fn: None
        }),
        (column(), prop::collection::vec(prop::option::of(number_text()), 0..3))
            .prop_map(|(dimension, values)| Filter::In { dimension, values, extraction_fn: None }),
        (column(), kind.clone(), json_value()).prop_map(|(column, match_value_type, match_value)| Filter::Equals {
            column,
            match_value_type,
            match_value
        }),
        (
            column(),
            prop::option::of(number_text()),
            prop::option::of(number_text()),
            any::<(bool, bool)>(),
            prop::sample::select(vec![None, Some("lexicographic"), Some("numeric")]),
        )
            .prop_map(|(dimension, lower, upper, (lower_strict, upper_strict), ordering)| Filter::Bound {
                dimension,
                lower,
                upper,
                lower_strict,
                upper_strict,
                ordering: ordering.map(str::to_string),
                extraction_fn: None,
            }),
        (column(), kind, prop::option::of(json_value()), prop::option::of(json_value()), any::<(bool, bool)>())
            .prop_map(|(column, match_value_type, lower, upper, (lower_open, upper_open))| Filter::Range {
                column,
                match_value_type,
                lower,
                upper,
                lower_open,
                upper_open
            }),
        (column(), pattern, any::<bool>()).prop_map(|(dimension, p, escaped)| Filter::Like {
            dimension,
            pattern: p.to_string(),
            escape: escaped.then(|| "!".to_string()),
            extraction_fn: None,
        }),
        (column(), prop::sample::select(vec!["^a", "b$", "\\d", "^$", "é"])).prop_map(|(dimension, p)| Filter::Regex {
            dimension,
            pattern: p.to_string(),
            extraction_fn: None
        }),
        column().prop_map(|column| Filter::Null { column }),
        Just(Filter::True),
        Just(Filter::False),
        Just(Filter::Expression { expression: "l > 3".into() }),
    ]
}

fn any_filter() -> impl Strategy<Value = Filter> {
    leaf().prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|fields| Filter::And { fields }),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|fields| Filter::Or { fields }),
            inner.prop_map(|f| Filter::Not { field: Box::new(f) }),
        ]
    })
}

fn limits() -> impl Strategy<Value = SummaryLimits> {
    (
        prop::sample::select(vec![0usize, 1, 3, 64]),
        prop::sample::select(vec![0usize, 40, 1024]),
        prop::sample::select(vec![250usize, 16 * 1024]),
        prop::sample::select(vec![1usize, 2, 64]),
        1usize..11,
    )
        .prop_map(|(max_values, max_dimension_bytes, max_summary_bytes, max_bound_bytes, bits)| SummaryLimits {
            max_values,
            max_dimension_bytes,
            max_summary_bytes,
            max_bound_bytes,
            filter_bits_per_value: bits,
            min_filter_bits_per_value: 1,
        })
}

/// A row's time and dimension values, as a query reads them.
type ReadRow = (i64, Vec<Value>);

/// The rows of a segment of `rows` as a query reads them, and its summary read back from JSON.
fn segment(rows: &[Row], limits: &SummaryLimits) -> (Vec<ReadRow>, Option<SegmentSummary>) {
    let (config, parser) = spec_parser();
    let mut index = IncrementalIndex::new(config, Interval::new(0, 3_600_000));
    rows.iter().for_each(|r| index.add(r.clone(), parser.dimensions()));
    let seg = Segment::from_bytes("p", index.persist(Default::default()).expect("persist")).expect("open");
    let names: Vec<&str> = seg.directory().columns[1..]
        .iter()
        .filter(|c| c.kind != crate::segment::ColumnType::Metric)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, DIMS);
    let read = seg.read_rows().expect("rows").into_iter().map(|(t, dims, _)| {
        let values = dims
            .into_iter()
            .map(|d| match d {
                DimValue::Null => Value::Null,
                DimValue::Str(s) => Value::String(s),
                DimValue::Multi(v) => Value::Array(v.into_iter().map(Value::String).collect()),
                DimValue::Long(v) => Value::Long(v),
                // Queries read floats widened.
                DimValue::Float(v) => Value::Double(f64::from(v)),
                DimValue::Double(v) => Value::Double(v),
            })
            .collect();
        (t, values)
    });
    let summary = SegmentSummary::of(&seg, limits).expect("summary");
    let summary = summary.map(|s| {
        let json = serde_json::to_string(&s).expect("json");
        assert!(json.len() <= limits.max_summary_bytes, "{} bytes over {}", json.len(), limits.max_summary_bytes);
        serde_json::from_str(&json).expect("read back")
    });
    (read.collect(), summary)
}

/// Whether some row matches `filter`, evaluated row by row as the query engine does.
fn some_row_matches(filter: &Filter, rows: &[ReadRow]) -> Option<bool> {
    let compiled = filter
        .compile(&mut |name| match DIMS.iter().position(|d| *d == name) {
            Some(i) => i,
            None if name == "__time" => DIMS.len(),
            // Absent and metric columns read as null here; the summary says nothing of metrics.
            None => DIMS.len() + 1,
        })
        .ok()?;
    Some(rows.iter().any(|(t, values)| {
        let mut row = values.clone();
        row.push(Value::Long(*t));
        compiled.matches(&row, *t)
    }))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// No false negatives: a filter some row matches is never judged unable to match.
    #[test]
    fn a_filter_some_row_matches_may_match(
        rows in prop::collection::vec(row(), 1..24),
        filters in prop::collection::vec(any_filter(), 1..12),
        limits in limits(),
    ) {
        let (read, summary) = segment(&rows, &limits);
        let Some(summary) = summary else { return Ok(()) };
        for f in &filters {
            if some_row_matches(f, &read) == Some(true) {
                prop_assert!(may_match(f, &summary), "{} matches a row of {:?} but is pruned by {:?}",
                    serde_json::to_string(f).unwrap_or_default(), read, summary);
            }
        }
    }

    /// The judgement of a selector on a listed dimension is exact: it matches when a row
    /// holds its value.
    #[test]
    fn a_selector_on_listed_values_is_exact(rows in prop::collection::vec(row(), 1..24), value in word()) {
        let (read, summary) = segment(&rows, &SummaryLimits::default());
        let summary = summary.expect("fits");
        let f = Filter::Selector { dimension: "s".into(), value: Some(value), extraction_fn: None };
        prop_assert_eq!(may_match(&f, &summary), some_row_matches(&f, &read) == Some(true));
    }
}

#[test]
fn a_segment_summary_matches_its_columns() {
    let row = |s: DimValue, l: Option<i64>, f: Option<f32>| Row {
        time: 5,
        dims: vec![
            s,
            DimValue::Multi(vec!["p".into(), "q".into()]),
            l.map(DimValue::Long).unwrap_or(DimValue::Null),
            DimValue::Null,
            f.map(DimValue::Float).unwrap_or(DimValue::Null),
            DimValue::Null,
        ],
        metrics: vec![Value::Null],
    };
    let rows = [row(DimValue::Str("b".into()), Some(4), Some(0.1)), row(DimValue::Null, Some(-2), None)];
    let (_, summary) = segment(&rows, &SummaryLimits::default());
    let summary = summary.expect("fits");
    let col = |name: &str| summary.columns[name].clone();
    assert_eq!(
        col("s"),
        ColumnSummary::String(StringSummary {
            nulls: true,
            min: Some("b".into()),
            max: Some("b".into()),
            values: Some(vec!["b".into()]),
            ..StringSummary::default()
        })
    );
    let ColumnSummary::String(m) = col("m") else { panic!("string") };
    assert_eq!((m.nulls, m.values), (false, Some(vec!["p".to_string(), "q".to_string()])));
    assert_eq!(col("l"), ColumnSummary::Long(LongSummary { nulls: false, span: Some([-2, 4]) }));
    assert_eq!(col("d"), ColumnSummary::Double(DoubleSummary { nulls: true, span: None }));
    let widened = f64::from(0.1f32);
    assert_eq!(
        col("f"),
        ColumnSummary::Double(DoubleSummary { nulls: true, span: Some(NumberSpan(Some(widened), Some(widened))) })
    );
    let ColumnSummary::String(u) = col("u") else { panic!("string") };
    assert!(u.nulls && u.min.is_none() && u.values.is_none(), "a dimension without bitmaps: nulls from its ids");
    assert_eq!(col("count"), ColumnSummary::Other);
    assert_eq!(summary.num_rows, 2);
}

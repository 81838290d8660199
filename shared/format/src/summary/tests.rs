//! Judgements of each filter on summaries built by hand, and the limits a summary keeps to.

use super::*;
use crate::filter::Filter;

fn filter(json: &str) -> Filter {
    serde_json::from_str(json).expect("filter json")
}

/// A summary of one row count and the given columns.
fn summary(columns: Vec<(&str, ColumnSummary)>) -> SegmentSummary {
    let columns = columns.into_iter().map(|(n, c)| (n.to_string(), c)).collect();
    SegmentSummary { version: SUMMARY_VERSION, num_rows: 10, columns }
}

fn strings(values: &[&str], nulls: bool, limits: &SummaryLimits) -> ColumnSummary {
    ColumnSummary::of_strings(values.iter().copied(), nulls, limits)
}

/// Limits under which a string dimension keeps a filter rather than its values.
fn filtered() -> SummaryLimits {
    SummaryLimits { max_values: 0, ..SummaryLimits::default() }
}

/// Limits under which a string dimension keeps its range only.
fn range_only() -> SummaryLimits {
    SummaryLimits { max_values: 0, max_dimension_bytes: 0, ..SummaryLimits::default() }
}

/// Judges each `(filter, expected)` against `s`, naming the filter on a mismatch.
fn expect(s: &SegmentSummary, cases: &[(&str, bool)]) {
    for (json, expected) in cases {
        assert_eq!(may_match(&filter(json), s), *expected, "{json} on {s:?}");
    }
}

#[test]
fn selector_and_in_use_the_listed_values() {
    let s = summary(vec![("d", strings(&["a", "b", "c"], false, &SummaryLimits::default()))]);
    expect(
        &s,
        &[
            (r#"{"type":"selector","dimension":"d","value":"b"}"#, true),
            (r#"{"type":"selector","dimension":"d","value":"bb"}"#, false),
            (r#"{"type":"selector","dimension":"d","value":null}"#, false),
            (r#"{"type":"in","dimension":"d","values":["x","c"]}"#, true),
            (r#"{"type":"in","dimension":"d","values":["x",null]}"#, false),
            (r#"{"type":"equals","column":"d","matchValueType":"STRING","matchValue":"a"}"#, true),
            (r#"{"type":"null","column":"d"}"#, false),
        ],
    );
    let with_nulls = summary(vec![("d", strings(&["a"], true, &SummaryLimits::default()))]);
    expect(
        &with_nulls,
        &[
            (r#"{"type":"selector","dimension":"d","value":null}"#, true),
            (r#"{"type":"in","dimension":"d","values":["x",null]}"#, true),
            (r#"{"type":"null","column":"d"}"#, true),
        ],
    );
}

#[test]
fn selector_on_a_high_cardinality_dimension_uses_the_filter_and_the_range() {
    let values: Vec<String> = (0..500).map(|i| format!("page {i:04}")).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let s = summary(vec![("page", strings(&refs, false, &filtered()))]);
    let ColumnSummary::String(col) = &s.columns["page"] else { panic!("string") };
    assert!(col.values.is_none() && col.bloom.is_some(), "{col:?}");
    let selector = |v: &str| Filter::Selector { dimension: "page".into(), value: Some(v.into()), extraction_fn: None };
    assert!(refs.iter().all(|v| may_match(&selector(v), &s)), "every value held matches");
    assert!(!may_match(&selector("page 9999"), &s), "above the largest value");
    assert!(!may_match(&selector("other"), &s), "above the largest value");
    assert!(!may_match(&selector("a"), &s), "below the smallest value");
    let inside: Vec<String> = (0..2000).map(|i| format!("page {i:04}x")).collect();
    let passed = inside.iter().filter(|v| may_match(&selector(v), &s)).count();
    assert!(passed < 60, "{passed} of 2000 values within the range but not held pass the filter");
    // With its range only, a dimension still rules out values outside it.
    let s = summary(vec![("page", strings(&refs, false, &range_only()))]);
    assert!(may_match(&selector("page 0100x"), &s));
    assert!(!may_match(&selector("page 9999"), &s));
}

#[test]
fn typed_equality_reads_numbers_as_druid_does() {
    let s = summary(vec![
        ("l", ColumnSummary::of_longs([Some(3), Some(9), None])),
        ("d", ColumnSummary::of_doubles([Some(-1.5), Some(2.5)])),
        ("s", strings(&["7", " 12 ", "x"], false, &range_only())),
        ("w", strings(&["x", "y"], false, &range_only())),
    ]);
    expect(
        &s,
        &[
            // A long matches a string by its digits.
            (r#"{"type":"selector","dimension":"l","value":"5"}"#, true),
            (r#"{"type":"selector","dimension":"l","value":"5.0"}"#, false),
            (r#"{"type":"selector","dimension":"l","value":"10"}"#, false),
            (r#"{"type":"selector","dimension":"l","value":null}"#, true),
            (r#"{"type":"equals","column":"l","matchValueType":"LONG","matchValue":9}"#, true),
            (r#"{"type":"equals","column":"l","matchValueType":"LONG","matchValue":10}"#, false),
            (r#"{"type":"equals","column":"l","matchValueType":"LONG","matchValue":"x"}"#, false),
            (r#"{"type":"equals","column":"d","matchValueType":"DOUBLE","matchValue":2.5}"#, true),
            (r#"{"type":"equals","column":"d","matchValueType":"DOUBLE","matchValue":2.6}"#, false),
            (r#"{"type":"selector","dimension":"d","value":"-1.5"}"#, true),
            (r#"{"type":"selector","dimension":"d","value":"abc"}"#, false),
            (r#"{"type":"null","column":"d"}"#, false),
            // A string dimension compared as numbers: its values that read as numbers.
            (r#"{"type":"equals","column":"s","matchValueType":"LONG","matchValue":12}"#, true),
            (r#"{"type":"equals","column":"s","matchValueType":"LONG","matchValue":13}"#, false),
            (r#"{"type":"equals","column":"w","matchValueType":"LONG","matchValue":1}"#, false),
        ],
    );
}

#[test]
fn bounds_compare_with_the_range_lexicographically_or_numerically() {
    let s = summary(vec![
        ("s", strings(&["b", "c", "d"], false, &range_only())),
        ("l", ColumnSummary::of_longs([Some(10), Some(20)])),
        ("n", strings(&["10", "2", "x"], false, &range_only())),
    ]);
    let bound = |dim: &str, lower: &str, upper: &str, strict: bool, ordering: &str| {
        format!(
            r#"{{"type":"bound","dimension":"{dim}","lower":{lower},"upper":{upper},"lowerStrict":{strict},"upperStrict":{strict},"ordering":"{ordering}"}}"#
        )
    };
    let cases = [
        (bound("s", r#""a""#, r#""b""#, false, "lexicographic"), true),
        (bound("s", r#""a""#, r#""b""#, true, "lexicographic"), false),
        (bound("s", r#""d""#, "null", true, "lexicographic"), false),
        (bound("s", r#""cz""#, "null", false, "lexicographic"), true),
        (bound("s", r#""e""#, "null", false, "lexicographic"), false),
        (bound("l", r#""20""#, "null", false, "numeric"), true),
        (bound("l", r#""20""#, "null", true, "numeric"), false),
        (bound("l", "null", r#""9.5""#, false, "numeric"), false),
        // A long compared as text: any.
        (bound("l", r#""3""#, r#""4""#, false, "lexicographic"), true),
        // "10" and "2" read as numbers; "x" does not.
        (bound("n", r#""3""#, r#""9""#, false, "numeric"), true),
        (bound("n", r#""11""#, "null", false, "numeric"), false),
    ];
    for (json, expected) in &cases {
        assert_eq!(may_match(&filter(json), &s), *expected, "{json}");
    }
    expect(
        &s,
        &[
            (r#"{"type":"range","column":"l","matchValueType":"LONG","lower":15,"upper":16}"#, true),
            (r#"{"type":"range","column":"l","matchValueType":"LONG","lower":20,"lowerOpen":true}"#, false),
            (r#"{"type":"range","column":"s","matchValueType":"STRING","upper":"b","upperOpen":true}"#, false),
        ],
    );
}

#[test]
fn a_cut_largest_value_bounds_as_any_value_it_starts() {
    let long = "m".repeat(100);
    let limits = SummaryLimits { max_bound_bytes: 8, ..range_only() };
    let s = summary(vec![("s", strings(&["a", &long], false, &limits))]);
    let ColumnSummary::String(col) = &s.columns["s"] else { panic!("string") };
    assert_eq!((col.max.as_deref(), col.max_cut), (Some("mmmmmmmm"), true));
    let selector = |v: &str| Filter::Selector { dimension: "s".into(), value: Some(v.into()), extraction_fn: None };
    assert!(may_match(&selector(&long), &s));
    assert!(may_match(&selector("mmmmmmmmmmmmz"), &s), "a value the cut range cannot rule out");
    assert!(!may_match(&selector("n"), &s));
    // Cut on a character boundary.
    let limits = SummaryLimits { max_bound_bytes: 2, ..range_only() };
    let s = summary(vec![("s", strings(&["éé", "éé"], false, &limits))]);
    let ColumnSummary::String(col) = &s.columns["s"] else { panic!("string") };
    assert_eq!((col.min.as_deref(), col.max.as_deref()), (Some("é"), Some("é")));
    assert!(may_match(&selector("éé"), &s));
}

#[test]
fn like_uses_its_literal_start_and_regex_may_match() {
    let s = summary(vec![("s", strings(&["apple", "apricot", "banana"], false, &range_only()))]);
    expect(
        &s,
        &[
            (r#"{"type":"like","dimension":"s","pattern":"ap%"}"#, true),
            (r#"{"type":"like","dimension":"s","pattern":"ban%"}"#, true),
            (r#"{"type":"like","dimension":"s","pattern":"c%"}"#, false),
            (r#"{"type":"like","dimension":"s","pattern":"a%"}"#, true),
            (r#"{"type":"like","dimension":"s","pattern":"aa%"}"#, false),
            (r#"{"type":"like","dimension":"s","pattern":"%z"}"#, true),
            (r#"{"type":"like","dimension":"s","pattern":"zebra"}"#, false),
            (r#"{"type":"like","dimension":"s","pattern":"c!%","escape":"!"}"#, false),
            (r#"{"type":"regex","dimension":"s","pattern":"^zzz"}"#, true),
        ],
    );
    // With the values listed, a pattern is tried on each.
    let s = summary(vec![("s", strings(&["apple", "banana"], false, &SummaryLimits::default()))]);
    expect(
        &s,
        &[
            (r#"{"type":"like","dimension":"s","pattern":"%nan%"}"#, true),
            (r#"{"type":"like","dimension":"s","pattern":"%pear%"}"#, false),
            (r#"{"type":"regex","dimension":"s","pattern":"^zzz"}"#, false),
        ],
    );
}

#[test]
fn and_or_not_combine_what_rows_may_give() {
    let s = summary(vec![
        ("one", strings(&["x"], false, &SummaryLimits::default())),
        ("one_or_null", strings(&["x"], true, &SummaryLimits::default())),
        ("many", strings(&["x", "y"], false, &filtered())),
    ]);
    let sel = |d: &str, v: &str| format!(r#"{{"type":"selector","dimension":"{d}","value":"{v}"}}"#);
    let not = |f: &str| format!(r#"{{"type":"not","field":{f}}}"#);
    let and = |a: &str, b: &str| format!(r#"{{"type":"and","fields":[{a},{b}]}}"#);
    let or = |a: &str, b: &str| format!(r#"{{"type":"or","fields":[{a},{b}]}}"#);
    let cases = [
        // Every row is x: nothing is not x.
        (not(&sel("one", "x")), false),
        // A null row is unknown, and so is its negation.
        (not(&sel("one_or_null", "x")), false),
        (not(&sel("one", "y")), true),
        (not(&not(&sel("one", "x"))), true),
        (not(r#"{"type":"null","column":"one_or_null"}"#), true),
        (not(r#"{"type":"null","column":"one"}"#), true),
        // A filter cannot tell what every row holds: either.
        (not(&sel("many", "x")), true),
        (and(&sel("one", "x"), &sel("many", "y")), true),
        (and(&sel("one", "x"), &sel("many", "z")), false),
        (or(&sel("one", "z"), &sel("many", "z")), false),
        (or(&sel("one", "z"), &sel("many", "y")), true),
        (not(&and(&sel("one", "x"), &sel("one", "x"))), false),
        (not(&or(&sel("one", "y"), &sel("one", "x"))), false),
        (r#"{"type":"and","fields":[]}"#.to_string(), true),
        (r#"{"type":"or","fields":[]}"#.to_string(), false),
        (r#"{"type":"true"}"#.to_string(), true),
        (r#"{"type":"false"}"#.to_string(), false),
        (not(r#"{"type":"false"}"#), true),
    ];
    for (json, expected) in &cases {
        assert_eq!(may_match(&filter(json), &s), *expected, "{json}");
    }
}

#[test]
fn an_absent_column_is_null_in_every_row() {
    let s = summary(vec![("d", strings(&["a"], false, &SummaryLimits::default()))]);
    expect(
        &s,
        &[
            (r#"{"type":"selector","dimension":"gone","value":null}"#, true),
            (r#"{"type":"selector","dimension":"gone","value":"a"}"#, false),
            (r#"{"type":"not","field":{"type":"selector","dimension":"gone","value":"a"}}"#, false),
            (r#"{"type":"null","column":"gone"}"#, true),
            (r#"{"type":"bound","dimension":"gone","lower":"a"}"#, false),
            (r#"{"type":"like","dimension":"gone","pattern":"%"}"#, false),
        ],
    );
}

#[test]
fn what_the_summary_does_not_hold_may_match() {
    let s = summary(vec![("d", strings(&["a"], false, &SummaryLimits::default())), ("count", ColumnSummary::Other)]);
    expect(
        &s,
        &[
            (r#"{"type":"selector","dimension":"count","value":"12345"}"#, true),
            (r#"{"type":"bound","dimension":"__time","lower":"0","ordering":"numeric"}"#, true),
            (r#"{"type":"expression","expression":"d == 'zzz'"}"#, true),
            (r#"{"type":"regex","dimension":"d","pattern":"(["}"#, true),
        ],
    );
    let v = filter(r#"{"type":"selector","dimension":"d","value":"zzz"}"#);
    assert!(!may_match(&v, &s));
    let pruner = SegmentPruner::new(&v, &["d"]).expect("compiles");
    assert!(pruner.may_match(&s), "a virtual column named like a dimension shadows it");
    let newer = SegmentSummary { version: SUMMARY_VERSION + 1, ..s.clone() };
    assert!(may_match(&v, &newer), "a summary of another version says nothing");
    let empty = SegmentSummary { num_rows: 0, ..s };
    assert!(!may_match(&filter(r#"{"type":"true"}"#), &empty), "no row, no match");
}

#[test]
fn limits_choose_values_a_filter_or_the_range() {
    let few = ["a", "b"];
    let ColumnSummary::String(s) = strings(&few, false, &SummaryLimits::default()) else { panic!() };
    assert_eq!(s.values, Some(vec!["a".to_string(), "b".to_string()]));
    let many: Vec<String> = (0..100).map(|i| format!("{i:03}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let ColumnSummary::String(s) = strings(&refs, false, &SummaryLimits::default()) else { panic!() };
    // 100 values at 10 bits each: 4 blocks of 32 bytes.
    assert_eq!((s.values.is_none(), s.bloom.as_ref().map(BloomFilter::num_blocks)), (true, Some(4)));
    assert_eq!(s.numbers, Some(NumberSpan(Some(0.0), Some(99.0))));
    // Over its budget at the fewest bits per value: the range only.
    let tight = SummaryLimits { max_dimension_bytes: 32, ..SummaryLimits::default() };
    let ColumnSummary::String(s) = strings(&refs, false, &tight) else { panic!() };
    assert!(s.bloom.is_none() && s.values.is_none() && s.min.is_some());
    // Cut to its budget while it keeps enough bits per value.
    let cut = SummaryLimits { max_dimension_bytes: 64, min_filter_bits_per_value: 4, ..SummaryLimits::default() };
    let ColumnSummary::String(s) = strings(&refs, false, &cut) else { panic!() };
    assert_eq!(s.bloom.as_ref().map(BloomFilter::num_blocks), Some(2));
}

#[test]
fn a_summary_over_its_budget_drops_filters_then_ranges() {
    let many: Vec<String> = (0..600).map(|i| format!("value {i:04}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let limits = SummaryLimits::default();
    let columns = (0..20).map(|i| (format!("d{i:02}"), strings(&refs, true, &limits))).collect();
    let s = SegmentSummary::from_columns(5, columns, &limits).expect("fits");
    assert!(s.json_bytes() <= limits.max_summary_bytes, "{} bytes", s.json_bytes());
    let filters = s.columns.values().filter(|c| matches!(c, ColumnSummary::String(s) if s.bloom.is_some())).count();
    assert!((1..20).contains(&filters), "{filters} of 20 filters kept");
    let small = SummaryLimits { max_summary_bytes: 700, ..limits };
    let columns = (0..20).map(|i| (format!("d{i:02}"), strings(&refs, true, &limits))).collect();
    let s = SegmentSummary::from_columns(5, columns, &small).expect("fits");
    assert!(s.columns.values().any(|c| *c == ColumnSummary::Other) && s.json_bytes() <= 700, "{s:?}");
    assert!(s.columns.values().any(|c| *c != ColumnSummary::Other), "only as many ranges dropped as needed");
    let columns = (0..40).map(|i| (format!("dimension name {i:02}"), ColumnSummary::Other)).collect();
    assert_eq!(SegmentSummary::from_columns(5, columns, &small), None, "names alone over the budget");
}

#[test]
fn reads_back_from_json_and_a_bad_summary_reads_as_none() {
    let s = summary(vec![
        ("s", strings(&["a", "b"], true, &SummaryLimits::default())),
        ("f", strings(&["a", "b"], false, &filtered())),
        ("l", ColumnSummary::of_longs([Some(1), None])),
        ("d", ColumnSummary::of_doubles([Some(f64::NAN), Some(1.0)])),
        ("m", ColumnSummary::Other),
    ]);
    let json = serde_json::to_string(&s).expect("json");
    assert!(json.starts_with(r#"{"version":1,"numRows":10,"columns":{"#), "{json}");
    assert!(json.contains(r#""l":{"type":"long","nulls":true,"span":[1,1]}"#), "{json}");
    assert!(json.contains(r#""d":{"type":"double","span":[null,null]}"#), "{json}");
    assert_eq!(serde_json::from_str::<SegmentSummary>(&json).expect("read back"), s);
    #[derive(serde::Deserialize)]
    struct Record {
        #[serde(default, deserialize_with = "lenient")]
        summary: Option<SegmentSummary>,
    }
    let read = |json: &str| serde_json::from_str::<Record>(json).expect("record").summary;
    assert_eq!(read(&format!(r#"{{"summary":{json}}}"#)), Some(s));
    assert_eq!(read(r#"{"summary":{"version":1,"numRows":"ten"}}"#), None);
    assert_eq!(read("{}"), None);
    let future = r#"{"summary":{"version":1,"numRows":3,"columns":{"x":{"type":"json","depth":2}}}}"#;
    assert_eq!(read(future).map(|s| s.columns["x"].clone()), Some(ColumnSummary::Other));
}

#[test]
fn number_spans_unbound_what_nan_and_infinities_reach() {
    assert_eq!(NumberSpan::of([]), None);
    assert_eq!(NumberSpan::of([2.0, -1.0]), Some(NumberSpan(Some(-1.0), Some(2.0))));
    assert_eq!(NumberSpan::of([2.0, f64::INFINITY]), Some(NumberSpan(Some(2.0), None)));
    assert_eq!(NumberSpan::of([f64::NEG_INFINITY, 2.0]), Some(NumberSpan(None, Some(2.0))));
    assert_eq!(NumberSpan::of([f64::NAN, 2.0]), Some(NumberSpan(None, None)));
}

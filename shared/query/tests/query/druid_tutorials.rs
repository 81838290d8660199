//! Golden tests from Druid's tutorials.

use crate::common::*;
use sluice_format::row::DimValue;
use sluice_format::time::format_iso;

#[test]
fn rollup_tutorial_gives_druids_documented_rows() {
    let spec = spec("rollup-kafka-supervisor.json");
    let data = std::fs::read_to_string(data_path("rollup-data.json")).expect("rollup data");
    let (indexes, counts) = index_records(&spec, data.lines().map(str::as_bytes));
    assert_eq!(counts, Counts { rows: 9, ..Default::default() });
    let mut rows = Vec::new();
    for (chunk, index) in &indexes {
        // Persist each row separately-ish: every index becomes one hydrant, merged alone.
        let merged = merge_all(&[persist(index, &format!("hydrant-{chunk}"))], 5_000_000);
        for seg in merged {
            for (t, dims, metrics) in seg.read_rows().expect("rows") {
                let dims: Vec<String> = dims
                    .iter()
                    .map(|d| match d {
                        DimValue::Str(s) => s.clone(),
                        other => format!("{other:?}"),
                    })
                    .collect();
                let metrics: Vec<String> = metrics.iter().map(|m| format!("{m:?}")).collect();
                rows.push(format!("{} {} {}", format_iso(t), dims.join(" "), metrics.join(" ")));
            }
        }
    }
    // Druid's rollup tutorial: __time, srcIP, dstIP, count, packets, bytes.
    assert_eq!(
        rows,
        vec![
            "2018-01-01T01:01:00.000Z 1.1.1.1 2.2.2.2 Long(Some(3)) Long(Some(286)) Long(Some(35937))",
            "2018-01-01T01:02:00.000Z 1.1.1.1 2.2.2.2 Long(Some(2)) Long(Some(415)) Long(Some(366260))",
            "2018-01-01T01:03:00.000Z 1.1.1.1 2.2.2.2 Long(Some(1)) Long(Some(49)) Long(Some(10204))",
            "2018-01-02T21:33:00.000Z 7.7.7.7 8.8.8.8 Long(Some(2)) Long(Some(161)) Long(Some(100288))",
            "2018-01-02T21:35:00.000Z 7.7.7.7 8.8.8.8 Long(Some(1)) Long(Some(12)) Long(Some(2818))",
        ]
    );
}

#[test]
fn wikipedia_sample_loads_under_the_tutorial_spec() {
    let spec = spec("wikipedia-kafka-supervisor.json");
    let lines = wikipedia_lines();
    assert_eq!(lines.len(), 39_244);
    let (indexes, counts) = index_records(&spec, lines.iter().map(|l| l.as_bytes()));
    assert_eq!(counts, Counts { rows: 39_244, ..Default::default() });
    // 39,232 rows fall on 2015-09-12; twelve stray rows fall on the days around it.
    let chunks: Vec<String> = indexes.keys().map(|&t| format_iso(t)[..10].to_string()).collect();
    assert_eq!(chunks.len(), 13);
    assert_eq!((chunks[0].as_str(), chunks[12].as_str()), ("2015-09-08", "2015-09-20"));
    let day = indexes.values().find(|i| format_iso(i.interval().start).starts_with("2015-09-12")).expect("main day");
    assert_eq!(day.num_rows(), 39_232);
    let seg = persist(day, "wikipedia-2015-09-12");
    assert_eq!(seg.num_rows(), 39_232);
    check_bitmaps(&seg);
    let channels = seg.dictionary("channel").expect("channel");
    assert!(channels.contains(&"#en.wikipedia".to_string()));
    // Druid's tutorial: the most edited page of the day is "Wikipedia:Vandalismusmeldung" (33 edits).
    let pages = seg.read_rows().expect("rows");
    let page_col = 12;
    let edits = pages.iter().filter(|r| r.1[page_col] == DimValue::Str("Wikipedia:Vandalismusmeldung".into())).count();
    assert_eq!(edits, 33);
}

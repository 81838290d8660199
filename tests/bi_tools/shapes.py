"""The native queries Turnilo (through plywood) and Grafana's Druid plugin send, over the
Wikipedia sample, each checked against DuckDB answering the same question over the same rows.

Usage: shapes.py URL DATA.json.gz
URL is a Druid API (`sluice serve --allow-operations`) holding the sample as datasource
`wikipedia`; DATA is the sample itself. Registers the lookup `country_names` the plywood shapes
name, sends every file under plywood/ and grafana/ as its tool sends it (native queries to
/druid/v2, SQL bodies to /druid/v2/sql), and prints one JSON object: per file, whether it ran,
the rows compared and the first difference; files named MAY_REFUSE (and the doubleMean one) must
be refused with a clear error. Exits 1 when a file fails.

Where the files come from is in README.md beside this script.
"""

import json
import os
import sys
import time

import duckdb

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "superset"))
import charts  # noqa: E402
from charts import plain, post  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DAY = "__time >= TIMESTAMP '2015-09-12 00:00:00' AND __time < TIMESTAMP '2015-09-13 00:00:00'"
ISO = "strftime({}, '%Y-%m-%dT%H:%M:%S.%gZ')"
FLAGS = ["isAnonymous", "isMinor", "isNew", "isRobot", "isUnpatrolled"]
HOUR = ISO.format("date_trunc('hour', __time)")
MINUTE = ISO.format("date_trunc('minute', __time)")
COUNTRY_NAMES = {"US": "United States", "FR": "France", "DE": "Germany", "IT": "Italy", "JP": "Japan"}


def duck(data: str):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    text = ["time", "channel", "cityName", "comment", "countryIsoCode", "countryName", "namespace", "page",
            "regionIsoCode", "regionName", "user"]
    types = {**{c: "VARCHAR" for c in text}, **{c: "BOOLEAN" for c in FLAGS}, "metroCode": "BIGINT",
             "added": "BIGINT", "deleted": "BIGINT", "delta": "BIGINT"}
    columns = "{" + ", ".join(f"\"{c}\": '{t}'" for c, t in types.items()) + "}"
    con.execute(f"CREATE TABLE raw AS SELECT * FROM read_json(?, format = 'newline_delimited', columns = {columns})", [data])
    flags = ", ".join(f"lower(CAST({c} AS VARCHAR)) AS {c}" for c in FLAGS)
    con.execute(
        "CREATE VIEW wikipedia AS SELECT CAST(replace(time, 'Z', '') AS TIMESTAMP) AS __time, channel, cityName, comment, "
        f"countryIsoCode, countryName, {flags}, CAST(metroCode AS VARCHAR) AS metroCode, namespace, page, regionIsoCode, "
        "regionName, \"user\", added, deleted, delta FROM raw"
    )
    con.execute("CREATE TABLE country_names (k VARCHAR, v VARCHAR)")
    con.executemany("INSERT INTO country_names VALUES (?, ?)", list(COUNTRY_NAMES.items()))
    return con


# Rows out of Druid's answers.
def ts(*keys, skip_empty=None):
    def rows(a):
        out = [[r["timestamp"]] + [r["result"].get(k) for k in keys] for r in a]
        return [r for r in out if skip_empty is None or r[1 + keys.index(skip_empty)] not in (None, 0)]
    return rows


def total(*keys):
    return lambda a: [[a[0]["result"].get(k) for k in keys]]


def topn(*keys, timed=False):
    return lambda a: [([r["timestamp"]] if timed else []) + [e.get(k) for k in keys] for r in a for e in r["result"]]


def group(*keys, timed=False):
    return lambda a: [([r["timestamp"]] if timed else []) + [r["event"].get(k) for k in keys] for r in a]


def scan(*keys):
    def rows(a):
        out = []
        for batch in a:
            at = {c: i for i, c in enumerate(batch["columns"])}
            out += [[e[at[k]] for k in keys] for e in batch["events"]]
        return out
    return rows


def sql_rows(a):
    return a[1:]  # after the header


# file -> (rows of our answer, DuckDB's SQL, how rows compare)
CHECKS = {
    "plywood/01_introspect_segmentMetadata.json": (
        lambda a: sorted([c] for c in a[0]["columns"]),
        "SELECT column_name FROM (DESCRIBE wikipedia) ORDER BY 1",
        "ordered",
    ),
    "plywood/02_introspect_timeBoundary_no_bound.json": (
        lambda a: [[a[0]["result"]["minTime"], a[0]["result"]["maxTime"]]],
        f"SELECT {ISO.format('min(__time)')}, {ISO.format('max(__time)')} FROM wikipedia",
        "ordered",
    ),
    "plywood/03_maxTime_timeBoundary.json": (
        lambda a: [[a[0]["result"]["maxTime"]]],
        f"SELECT {ISO.format('max(__time)')} FROM wikipedia",
        "ordered",
    ),
    "plywood/04_totals_timeseries_all.json": (
        total("added", "deleted", "count"),
        f"SELECT SUM(added), SUM(deleted), COUNT(*) FROM wikipedia WHERE {DAY}",
        "ordered",
    ),
    "plywood/05_topN_metric_by_measure.json": (
        topn("channel", "added"),
        f"SELECT channel, SUM(added) s FROM wikipedia WHERE {DAY} GROUP BY 1 ORDER BY s DESC LIMIT 10",
        ("cut", 1),
    ),
    "plywood/06_topN_dimension_lexicographic.json": (
        topn("page", "count"),
        f"SELECT page, COUNT(*) FROM wikipedia WHERE {DAY} GROUP BY 1 ORDER BY page LIMIT 50",
        "ordered",
    ),
    "plywood/07_topN_inverted_dimension.json": (
        topn("page", "count"),
        f"SELECT page, COUNT(*) FROM wikipedia WHERE {DAY} GROUP BY 1 ORDER BY page DESC LIMIT 50",
        "ordered",
    ),
    "plywood/08_topN_inverted_metric.json": (
        topn("countryName", "delta"),
        f"SELECT countryName, SUM(delta) s FROM wikipedia WHERE {DAY} GROUP BY 1 ORDER BY s LIMIT 5",
        ("cut", 1),
    ),
    "plywood/09_timeseries_period_PT1H.json": (
        ts("added", "MillisecondsInInterval"),
        f"SELECT {HOUR}, SUM(added), 3600000 FROM wikipedia WHERE {DAY} GROUP BY 1",
        "set",
    ),
    "plywood/10_timeseries_nested_under_topN_selector_filter.json": (
        ts("added", "MillisecondsInInterval"),
        f"SELECT {HOUR}, SUM(added), 3600000 FROM wikipedia "
        f"WHERE {DAY} AND channel = '#en.wikipedia' GROUP BY 1",
        "set",
    ),
    "plywood/11_groupBy_two_dims_limitSpec.json": (
        group("channel", "namespace", "added", "count"),
        f"SELECT channel, namespace, SUM(added) s, COUNT(*) FROM wikipedia WHERE {DAY} GROUP BY 1, 2 ORDER BY s DESC LIMIT 50",
        ("cut", 2),
    ),
    "plywood/12_groupBy_time_timeFormat_extraction.json": (
        group("time", "channel", "added"),
        f"SELECT strftime(date_trunc('hour', __time), '%Y-%m-%dT%H:%M:%SZ') t, channel, SUM(added) FROM wikipedia "
        f"WHERE {DAY} GROUP BY 1, 2 ORDER BY t LIMIT 100",
        ("cut", 0),
    ),
    "plywood/13_topN_numberBucket_bucket_extraction.json": (
        topn("delta", "count"),
        f"SELECT CAST(CAST(floor(delta / 100) * 100 AS BIGINT) AS VARCHAR) b, COUNT(*) FROM wikipedia "
        f"WHERE {DAY} GROUP BY 1 ORDER BY CAST(b AS BIGINT)",
        "ordered",
    ),
    "plywood/14_filters_and_in_search_regex_not.json": (
        total("count", "added"),
        f"SELECT COUNT(*), SUM(added) FROM wikipedia WHERE {DAY} AND channel IN ('#en.wikipedia', '#de.wikipedia') "
        "AND contains(lower(page), 'trump') AND regexp_matches(\"user\", '^[A-Z]') AND NOT (countryName = 'United States')",
        "ordered",
    ),
    "plywood/15_filter_bound_numeric_value_mode.json": (
        total("__VALUE__"),
        f"SELECT COUNT(*) FROM wikipedia WHERE {DAY} AND added >= 10 AND added < 1000",
        "ordered",
    ),
    "plywood/16_cardinality_countDistinct.json": (
        total("users", "count"),
        f"SELECT COUNT(DISTINCT \"user\"), COUNT(*) FROM wikipedia WHERE {DAY}",
        "approximate",
    ),
    "plywood/17_postAggregation_expression_division.json": (
        total("avg_added", "ratio"),
        f"SELECT SUM(added) / COUNT(*), SUM(added) / SUM(deleted) FROM wikipedia WHERE {DAY}",
        "ordered",
    ),
    "plywood/18_topN_filtered_aggregator.json": (
        topn("countryName", "en_added", "count"),
        f"SELECT countryName, SUM(added) FILTER (WHERE channel = '#en.wikipedia') s, COUNT(*) FROM wikipedia "
        f"WHERE {DAY} GROUP BY 1 ORDER BY s DESC NULLS LAST LIMIT 10",
        ("cut", 1),
    ),
    "plywood/19_groupBy_compare_previous_interval_filters.json": (
        group("channel", "added", "_previous__added", "_delta__added"),
        "SELECT channel, SUM(added) FILTER (WHERE __time >= TIMESTAMP '2015-09-12' AND __time < TIMESTAMP '2015-09-13') s, "
        "SUM(added) FILTER (WHERE __time >= TIMESTAMP '2015-09-05' AND __time < TIMESTAMP '2015-09-06') p, "
        "s - p FROM wikipedia WHERE (__time >= TIMESTAMP '2015-09-12' AND __time < TIMESTAMP '2015-09-13') "
        "OR (__time >= TIMESTAMP '2015-09-05' AND __time < TIMESTAMP '2015-09-06') GROUP BY 1 ORDER BY s DESC LIMIT 5",
        ("cut", 1),
    ),
    "plywood/20_groupBy_compare_timeseries_virtualColumn.json": (
        group("time", "added", "_previous__added", "_delta__added", "MillisecondsInInterval"),
        "SELECT epoch_ms(date_trunc('hour', CASE WHEN __time >= TIMESTAMP '2015-09-12' AND __time < TIMESTAMP '2015-09-13' "
        "THEN __time ELSE __time + INTERVAL 7 DAY END)) t, "
        "SUM(added) FILTER (WHERE __time >= TIMESTAMP '2015-09-12' AND __time < TIMESTAMP '2015-09-13') s, "
        "SUM(added) FILTER (WHERE __time >= TIMESTAMP '2015-09-05' AND __time < TIMESTAMP '2015-09-06') p, s - p, 3600000 "
        "FROM wikipedia WHERE (__time >= TIMESTAMP '2015-09-12' AND __time < TIMESTAMP '2015-09-13') "
        "OR (__time >= TIMESTAMP '2015-09-05' AND __time < TIMESTAMP '2015-09-06') GROUP BY 1 ORDER BY t",
        "ordered",
    ),
    "plywood/21_scan_raw_data.json": (
        scan("__time", "page", "user", "added"),
        f"SELECT epoch_ms(__time), page, \"user\", added FROM wikipedia WHERE {DAY}",
        ("sample", 100),
    ),
    "plywood/22_groupBy_no_aggregations.json": (
        group("isRobot"),
        f"SELECT DISTINCT isRobot FROM wikipedia WHERE {DAY}",
        "set",
    ),
    "plywood/23_groupBy_extraction_fns_cascade_virtualColumn.json": (
        group("cc", "chanNs", "commentLength", "country", "firstLetter", "hour", "label", "lang", "count"),
        "SELECT upper(regionIsoCode), channel || '/' || namespace, CAST(length(comment) AS DOUBLE), "
        "coalesce(n.v, countryIsoCode), upper(substr(page, 1, 1)), hour(__time), "
        "CASE WHEN namespace IS NULL THEN NULL ELSE 'ns:' || namespace END, "
        "nullif(regexp_extract(channel, '#([a-z]+)\\.', 1), ''), COUNT(*) c "
        f"FROM wikipedia LEFT JOIN country_names n ON n.k = countryIsoCode WHERE {DAY} GROUP BY ALL ORDER BY c DESC LIMIT 50",
        ("cut", 8),
    ),
    "grafana/01_timeseries_simple_granularity_minute.json": (
        ts("count", "added", skip_empty="count"),
        f"SELECT {MINUTE}, COUNT(*), SUM(added) FROM wikipedia "
        f"WHERE {DAY} AND countryName = 'France' GROUP BY 1",
        "set",
    ),
    "grafana/02_timeseries_all_aggregators_postaggregators.json": (
        total("count", "added", "deleted", "delta_x2", "min_delta", "max_delta", "users", "en_edits", "net",
              "avg_added", "pct_en", "users_final", "max_of", "ratio"),
        "SELECT COUNT(*), SUM(added), SUM(deleted), SUM(delta * 2), MIN(delta), MAX(delta), COUNT(DISTINCT \"user\"), "
        "COUNT(*) FILTER (WHERE channel = '#en.wikipedia'), SUM(added) - SUM(deleted), SUM(added) / COUNT(*), "
        "COUNT(*) FILTER (WHERE channel = '#en.wikipedia') / COUNT(*) * 100, COUNT(DISTINCT \"user\"), "
        f"greatest(SUM(added), SUM(deleted)), SUM(added) // SUM(deleted) FROM wikipedia WHERE {DAY}",
        "approximate",
    ),
    "grafana/03_timeseries_duration_granularity_interval_ms_variable.json": (
        ts("added", skip_empty="added"),
        f"SELECT {MINUTE}, SUM(added) s FROM wikipedia WHERE {DAY} GROUP BY 1 HAVING s <> 0",
        "set",
    ),
    "grafana/04_topN_numeric_metric_default_dimension.json": (
        topn("region", "delta"),
        f"SELECT regionName, SUM(delta) s FROM wikipedia WHERE {DAY} AND countryName = 'France' GROUP BY 1 ORDER BY s DESC LIMIT 50",
        ("cut", 1),
    ),
    "grafana/05_topN_inverted_metric_filter_with_cascade_extractionFn.json": (
        topn("page", "count", timed=True),
        f"SELECT {HOUR} h, page, COUNT(*) c FROM wikipedia "
        f"WHERE {DAY} AND lower(substr(page, 1, 3)) = 'tal' GROUP BY 1, 2 ORDER BY h, c LIMIT 10000",
        ("per_bucket_smallest", 10),
    ),
    "grafana/06_topN_dimension_metric_lexicographic_previousStop.json": (
        topn("channel", "added"),
        f"SELECT channel, SUM(added) FROM wikipedia WHERE {DAY} AND channel > '#de' GROUP BY 1 ORDER BY channel LIMIT 25",
        "ordered",
    ),
    "grafana/07_groupBy_two_default_dimensions_granularity_minute.json": (
        group("country", "region", "delta", timed=True),
        f"SELECT {MINUTE}, countryName, regionName, SUM(delta) FROM wikipedia "
        f"WHERE {DAY} AND countryName = 'France' GROUP BY ALL",
        "set",
    ),
    "grafana/08_groupBy_limitSpec_having_postAggregations_json_mode.json": (
        group("channel", "isRobot", "edits", "added", "added_per_edit"),
        f"SELECT channel, isRobot, COUNT(*) e, SUM(added) a, SUM(added) / COUNT(*) FROM wikipedia WHERE {DAY} "
        "GROUP BY 1, 2 HAVING e > 100 AND a <> 0 ORDER BY e DESC, channel LIMIT 20",
        "ordered",
    ),
    "grafana/10_groupBy_virtualColumn_expression_filter_extractionFn_filters.json": (
        group("lang", "net", timed=True),
        f"SELECT {HOUR}, nullif(regexp_extract(channel, '#([a-z]+)[.]', 1), ''), "
        "SUM(added - deleted) FROM wikipedia "
        f"WHERE {DAY} AND added - deleted > 0 AND hour(timezone('Europe/Paris', CAST(__time AS TIMESTAMPTZ))) = 12 "
        "AND coalesce(nullif(regexp_extract(channel, '#([a-z]+)[.]', 1), ''), 'other') IN ('en', 'fr') "
        "AND (CASE countryIsoCode WHEN 'DE' THEN 'Germany' WHEN 'FR' THEN 'France' ELSE countryIsoCode END) = 'France' "
        "AND floor(delta / 10) * 10 >= 0 GROUP BY ALL",
        "set",
    ),
    "grafana/11_scan_dashboard_start_slash_period_interval.json": (
        scan("__time", "page", "user", "added"),
        "SELECT epoch_ms(__time), page, \"user\", added FROM wikipedia "
        "WHERE __time >= TIMESTAMP '2015-09-12' AND __time < TIMESTAMP '2015-09-17' AND countryName = 'France'",
        "set",
    ),
    "grafana/12_scan_order_descending_limit_virtualColumns_in_filter.json": (
        scan("__time", "page", "user", "v_abs_delta"),
        f"SELECT epoch_ms(__time) t, page, \"user\", abs(delta) FROM wikipedia "
        f"WHERE {DAY} AND channel IN ('#en.wikipedia', '#fr.wikipedia') ORDER BY t DESC LIMIT 100",
        ("cut", 0),
    ),
    "grafana/13_search_contains_searchDimensions_sort.json": (
        lambda a: [[h["dimension"], h["value"], h["count"]] for r in a for h in r["result"]],
        f"SELECT 'regionName', regionName, COUNT(*) FROM wikipedia WHERE {DAY} AND countryName = 'France' "
        "AND contains(lower(regionName), 'ari') GROUP BY 2 UNION ALL "
        f"SELECT 'cityName', cityName, COUNT(*) FROM wikipedia WHERE {DAY} AND countryName = 'France' "
        "AND contains(lower(cityName), 'ari') GROUP BY 2",
        "set",
    ),
    "grafana/14_timeBoundary_bound_null_empty_context_key.json": (
        lambda a: [[a[0]["result"]["minTime"], a[0]["result"]["maxTime"]]],
        f"SELECT {ISO.format('min(__time)')}, {ISO.format('max(__time)')} "
        f"FROM wikipedia WHERE {DAY}",
        "ordered",
    ),
    "grafana/15_timeBoundary_maxTime_with_filter.json": (
        lambda a: [[a[0]["result"]["maxTime"]]],
        f"SELECT {ISO.format('max(__time)')} FROM wikipedia WHERE {DAY} AND channel = '#en.wikipedia'",
        "ordered",
    ),
    "grafana/16_dataSourceMetadata.json": (
        lambda a: [[a[0]["result"]["maxIngestedEventTime"]]],
        f"SELECT {ISO.format('max(__time)')} FROM wikipedia",
        "ordered",
    ),
    "grafana/17_segmentMetadata_all_analysisTypes_toInclude.json": (
        lambda a: sorted([c] for c in a[0]["columns"]),
        "SELECT column_name FROM (DESCRIBE wikipedia) ORDER BY 1",
        "ordered",
    ),
    "grafana/18_sql_panel_query_POST_druid_v2_sql.json": (
        sql_rows,
        f"SELECT {ISO.format('__time')}, channel, cityName, page, added, deleted, delta, \"user\" "
        "FROM wikipedia WHERE cityName = 'Paris' AND __time >= TIMESTAMP '2015-09-12' AND __time <= TIMESTAMP '2015-09-13'",
        "set",
    ),
    "grafana/19_sql_variable_query_select_distinct.json": (
        sql_rows,
        "SELECT DISTINCT countryName FROM wikipedia WHERE countryName IS NOT NULL",
        "set",
    ),
    "grafana/20_filters_logical_in_bound_regex_interval_columnComparison_true.json": (
        total("count"),
        "SELECT COUNT(*) FROM wikipedia WHERE __time >= TIMESTAMP '2015-09-12 08:00:00' AND __time < TIMESTAMP '2015-09-12 20:00:00' "
        "AND (channel IN ('#en.wikipedia', '#de.wikipedia') OR regexp_matches(page, '^Talk:')) AND NOT (isRobot = 'true') "
        "AND added >= 10 AND added <= 1000 AND countryIsoCode > 'A' AND countryIsoCode <= 'M' "
        "AND countryName IS NOT DISTINCT FROM regionName AND upper(\"user\") = 'Mr.Z-man'",
        "ordered",
    ),
    "grafana/21_like_filter_escape_field_renamed_escapte.json": (
        total("count"),
        f"SELECT COUNT(*) FROM wikipedia WHERE {DAY} AND page LIKE '100!%%'",
        "ordered",
    ),
}

# Files a server refuses (as Druid does without extensions or JavaScript), and what the
# error must name.
REFUSED = {
    "plywood/24_MAY_REFUSE_topN_javascript_extractionFn.json": "javascript",
    "plywood/25_MAY_REFUSE_approxHistogram_quantile.json": "approxHistogram",
    "grafana/09_MAY_REFUSE_groupBy_limitSpec_as_built_by_ui_no_dimension.json": "dimension",
    "grafana/22_MAY_REFUSE_search_filter_query_dropped.json": "query",
    "grafana/23_MAY_REFUSE_javascript_aggregator_filter_postAggregator.json": "javascript",
    "grafana/24_first_last_any_mean_string_aggregators_longLast_ui_bug.json": "doubleMean",
    "grafana/25_MAY_REFUSE_query_datasource_serialised_under_dash_key.json": "query",
}


def rows_equal(ours, theirs, approximate=False) -> str | None:
    return charts.compare(ours, theirs, "approximate" if approximate else "ordered")


def compare(ours: list, theirs: list, how) -> str | None:
    """The first difference, or None."""
    key = lambda row: json.dumps(row, default=str)
    if how in ("set", "approximate", "ordered"):
        return charts.compare(ours, theirs, how)
    kind, k = how
    if kind == "cut":
        # Ordered by column k, cut at a limit: the keys agree in order, and the rows whose key
        # is not tied with the last one agree as sets (ties at the cut may differ).
        if [r[k] for r in ours] != [r[k] for r in theirs]:
            return f"keys {[r[k] for r in ours][:8]} != DuckDB's {[r[k] for r in theirs][:8]}"
        last = ours[-1][k] if ours else None
        strict = lambda rows: sorted((r for r in rows if r[k] != last), key=key)
        return rows_equal(strict(ours), strict(theirs))
    if kind == "sample":
        sample = {key(r) for r in theirs}
        strangers = [r for r in ours if key(r) not in sample]
        return None if len(ours) == k and not strangers else f"{len(ours)} rows, not in the sample {strangers[:1]}"
    if kind == "per_bucket_smallest":
        # Per bucket the `k` smallest counts (ties at the cut may pick other values), each
        # value's count DuckDB's.
        counts = {(r[0], r[1]): r[2] for r in theirs}
        buckets = {}
        for r in theirs:
            buckets.setdefault(r[0], []).append(r[2])
        wrong = [r for r in ours if counts.get((r[0], r[1])) != r[2]]
        ours_counts = {}
        for r in ours:
            ours_counts.setdefault(r[0], []).append(r[2])
        smallest = {b: sorted(c)[:k] for b, c in buckets.items()}
        if wrong or {b: sorted(c) for b, c in ours_counts.items()} != smallest:
            return f"wrong counts {wrong[:2]} or not the smallest per bucket"
        return None
    return f"unknown comparison {how}"


def main() -> None:
    url, data = sys.argv[1], sys.argv[2]
    # A version greater than any earlier run's.
    lookup = {"version": f"v{time.time_ns()}", "lookupExtractorFactory": {"type": "map", "map": COUNTRY_NAMES}}
    status, body = post(url, "/druid/coordinator/v1/lookups/config", {"__default": {"country_names": lookup}})
    if status >= 300:
        sys.exit(f"registering the lookup: {status} {body}")
    con = duck(data)
    out, failed = {}, 0
    files = sorted(f"{tool}/{name}" for tool in ("plywood", "grafana") for name in os.listdir(os.path.join(HERE, tool)))
    for f in files:
        query = json.load(open(os.path.join(HERE, f)))
        path = "/druid/v2/sql/" if query.get("queryType") == "sql" else "/druid/v2/"
        status, body = post(url, path, query)
        if f in REFUSED:
            ok = status == 400 and REFUSED[f] in body
            out[f] = {"refused": status == 400, "difference": None if ok else f"{status}: {body[:200]}"}
            failed += not ok
            continue
        if f not in CHECKS:
            out[f] = {"ran": status == 200, "difference": "no DuckDB check for this file"}
            failed += 1
            continue
        if status != 200:
            out[f] = {"ran": False, "error": body[:300]}
            failed += 1
            continue
        extract, duck_sql, how = CHECKS[f]
        ours = [[plain(v) for v in row] for row in extract(json.loads(body))]
        theirs = [[plain(v) for v in row] for row in con.execute(duck_sql).fetchall()]
        difference = compare(ours, theirs, how)
        out[f] = {"ran": True, "rows": len(ours), "difference": difference}
        failed += difference is not None
    out["passed"] = f"{len(files) - failed} of {len(files)}"
    json.dump(out, sys.stdout, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

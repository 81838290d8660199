"""Superset's charts over the Wikipedia sample: the SQL Superset's Druid engine writes for nine
ordinary charts, sent through pydruid's SQLAlchemy dialect as Superset sends it, each checked
against DuckDB answering the same chart over the same rows.

Usage: charts.py URL DATA.json.gz
URL is a Druid API (`sluice serve`) holding the sample as datasource `wikipedia`; DATA is the
sample itself. Prints one JSON object: per chart, whether it ran, the rows compared and the first
difference; exits 1 when a chart fails.

The Druid SQL is Superset's (superset/db_engine_specs/druid.py): time grains as
`TIME_FLOOR(CAST("__time" AS TIMESTAMP), 'P1D')`, the week grains through `TIMESTAMPADD` and
`FLOOR(... TO WEEK)`, time filters as `TIME_PARSE('...')`, a series limit as a first query for the
top series and a second restricted to them (Superset's way without joins).
"""

import datetime
import json
import math
import sys
import urllib.error
import urllib.request
import warnings
from urllib.parse import urlparse

import duckdb
import sqlalchemy

T = '"__time"'
SEPT = f"{T} >= TIME_PARSE('2015-09-12T00:00:00') AND {T} < TIME_PARSE('2015-09-13T00:00:00')"
MORNING = f"{T} >= TIME_PARSE('2015-09-12T00:00:00') AND {T} < TIME_PARSE('2015-09-12T06:00:00')"
DUCK_SEPT = "__time >= TIMESTAMP '2015-09-12 00:00:00' AND __time < TIMESTAMP '2015-09-13 00:00:00'"
DUCK_MORNING = "__time >= TIMESTAMP '2015-09-12 00:00:00' AND __time < TIMESTAMP '2015-09-12 06:00:00'"

# name -> (Superset's Druid SQL, DuckDB's, how rows compare)
CHARTS = {
    "time series, day grain": (
        f"""SELECT TIME_FLOOR(CAST({T} AS TIMESTAMP), 'P1D') AS "__timestamp", COUNT(*) AS "count"
FROM "wikipedia" WHERE {T} >= TIME_PARSE('2015-09-01T00:00:00') AND {T} < TIME_PARSE('2015-10-01T00:00:00')
GROUP BY TIME_FLOOR(CAST({T} AS TIMESTAMP), 'P1D') ORDER BY "count" DESC LIMIT 10000""",
        """SELECT date_trunc('day', __time), COUNT(*) FROM wikipedia
WHERE __time >= TIMESTAMP '2015-09-01' AND __time < TIMESTAMP '2015-10-01' GROUP BY 1""",
        "set",
    ),
    "time series, 5-minute grain": (
        f"""SELECT TIME_FLOOR(CAST({T} AS TIMESTAMP), 'PT5M') AS "__timestamp", SUM("added") AS "SUM(added)"
FROM "wikipedia" WHERE {MORNING} GROUP BY TIME_FLOOR(CAST({T} AS TIMESTAMP), 'PT5M') LIMIT 10000""",
        f"""SELECT time_bucket(INTERVAL 5 MINUTE, __time), SUM(added) FROM wikipedia WHERE {DUCK_MORNING} GROUP BY 1""",
        "set",
    ),
    "time series, week ending Saturday": (
        f"""SELECT TIMESTAMPADD(DAY, 5, FLOOR(TIMESTAMPADD(DAY, 1, CAST({T} AS TIMESTAMP)) TO WEEK)) AS "__timestamp",
COUNT(*) AS "count" FROM "wikipedia"
GROUP BY TIMESTAMPADD(DAY, 5, FLOOR(TIMESTAMPADD(DAY, 1, CAST({T} AS TIMESTAMP)) TO WEEK)) LIMIT 10000""",
        """SELECT date_trunc('week', __time + INTERVAL 1 DAY) + INTERVAL 5 DAY, COUNT(*) FROM wikipedia GROUP BY 1""",
        "set",
    ),
    "top-N bars": (
        f"""SELECT "channel" AS "channel", SUM("added") AS "SUM(added)" FROM "wikipedia" WHERE {SEPT}
GROUP BY "channel" ORDER BY "SUM(added)" DESC LIMIT 10""",
        f"""SELECT channel, SUM(added) AS s FROM wikipedia WHERE {DUCK_SEPT} GROUP BY 1 ORDER BY s DESC LIMIT 10""",
        "ordered",
    ),
    "table with filters": (
        f"""SELECT "countryName" AS "countryName", "cityName" AS "cityName", COUNT(*) AS "count",
SUM("delta") AS "SUM(delta)" FROM "wikipedia"
WHERE {SEPT} AND "countryName" IN ('United States', 'France', 'Japan') AND "isRobot" = 'false'
GROUP BY "countryName", "cityName" ORDER BY "count" DESC, "cityName" LIMIT 50""",
        f"""SELECT countryName, cityName, COUNT(*) AS c, SUM(delta) FROM wikipedia
WHERE {DUCK_SEPT} AND countryName IN ('United States', 'France', 'Japan') AND isRobot = 'false'
GROUP BY 1, 2 ORDER BY c DESC, cityName NULLS FIRST LIMIT 50""",
        "ordered",
    ),
    "time series with a series limit": (
        "series limit",
        f"""WITH top AS (SELECT channel FROM wikipedia WHERE {DUCK_MORNING} GROUP BY 1 ORDER BY SUM(added) DESC LIMIT 5)
SELECT date_trunc('hour', __time), channel, SUM(added) FROM wikipedia
WHERE {DUCK_MORNING} AND channel IN (SELECT channel FROM top) GROUP BY 1, 2""",
        "set",
    ),
    "big number with a date filter": (
        f"""SELECT COUNT(*) AS "count" FROM "wikipedia"
WHERE {T} >= TIME_PARSE('2015-09-12T00:00:00') AND {T} < TIME_PARSE('2015-09-12T12:00:00')""",
        """SELECT COUNT(*) FROM wikipedia WHERE __time >= TIMESTAMP '2015-09-12 00:00:00'
AND __time < TIMESTAMP '2015-09-12 12:00:00'""",
        "set",
    ),
    "big number with a trendline, distinct users": (
        f"""SELECT TIME_FLOOR(CAST({T} AS TIMESTAMP), 'PT1H') AS "__timestamp", COUNT(DISTINCT "user") AS "COUNT_DISTINCT(user)"
FROM "wikipedia" WHERE {MORNING} GROUP BY TIME_FLOOR(CAST({T} AS TIMESTAMP), 'PT1H') LIMIT 10000""",
        f"""SELECT date_trunc('hour', __time), COUNT(DISTINCT "user") FROM wikipedia WHERE {DUCK_MORNING} GROUP BY 1""",
        "approximate",
    ),
    "SQL Lab sample": (
        'SELECT * FROM "wikipedia" LIMIT 100',
        "SELECT * FROM wikipedia",
        "sample",
    ),
}


def series_limit(conn) -> list:
    """Superset's series limit without joins: the top series first, then the chart restricted to them."""
    top = conn.execute(
        sqlalchemy.text(
            f"""SELECT "channel" AS "channel__", SUM("added") AS "mme_inner__" FROM "wikipedia" WHERE {MORNING}
GROUP BY "channel" ORDER BY "mme_inner__" DESC LIMIT 5"""
        )
    ).fetchall()
    names = ", ".join("'" + r[0].replace("'", "''") + "'" for r in top)
    return conn.execute(
        sqlalchemy.text(
            f"""SELECT TIME_FLOOR(CAST({T} AS TIMESTAMP), 'PT1H') AS "__timestamp", "channel" AS "channel",
SUM("added") AS "SUM(added)" FROM "wikipedia" WHERE {MORNING} AND "channel" IN ({names})
GROUP BY TIME_FLOOR(CAST({T} AS TIMESTAMP), 'PT1H'), "channel" ORDER BY "SUM(added)" DESC LIMIT 10000"""
        )
    ).fetchall()


def post(url: str, path: str, body, method: str = "POST") -> tuple[int, str]:
    """The status and body of `method path` with `body` as JSON (none: no body)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def duck(data: str):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(
        "CREATE TABLE raw AS SELECT * FROM read_json(?, format = 'newline_delimited', columns = {"
        "time: 'VARCHAR', channel: 'VARCHAR', cityName: 'VARCHAR', countryName: 'VARCHAR', "
        "isRobot: 'BOOLEAN', \"user\": 'VARCHAR', added: 'BIGINT', delta: 'BIGINT', page: 'VARCHAR'})",
        [data],
    )
    con.execute(
        "CREATE VIEW wikipedia AS SELECT CAST(replace(time, 'Z', '') AS TIMESTAMP) AS __time, channel, cityName, "
        "countryName, lower(CAST(isRobot AS VARCHAR)) AS isRobot, \"user\", added, delta, page FROM raw"
    )
    return con


def plain(v):
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def same(a, b, approximate: bool) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        tolerance = 0.03 if approximate else 1e-9
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=0 if approximate else 1e-9)
    return a == b


def compare(ours: list, theirs: list, how: str) -> str | None:
    """The first difference, or None."""
    key = lambda row: json.dumps(row, default=str)
    if how in ("set", "approximate"):
        ours, theirs = sorted(ours, key=key), sorted(theirs, key=key)
    if len(ours) != len(theirs):
        return f"{len(ours)} rows, DuckDB {len(theirs)}"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if len(a) != len(b) or not all(same(x, y, how == "approximate") for x, y in zip(a, b)):
            return f"row {i}: {a} != DuckDB's {b}"
    return None


def main() -> None:
    # pydruid 0.6.9's dialect predates SQLAlchemy 2's statement cache.
    warnings.simplefilter("ignore")
    url, data = sys.argv[1], sys.argv[2]
    where = urlparse(url)
    engine = sqlalchemy.create_engine(f"druid://{where.hostname}:{where.port}/druid/v2/sql/")
    con = duck(data)
    out, failed = {}, 0
    with engine.connect() as conn:
        for name, (sql, duck_sql, how) in CHARTS.items():
            try:
                rows = series_limit(conn) if sql == "series limit" else conn.execute(sqlalchemy.text(sql)).fetchall()
                ours = [[plain(v) for v in row] for row in rows]
            except Exception as e:  # a refusal is what this reports
                out[name] = {"ran": False, "error": str(e)[:300]}
                failed += 1
                continue
            if how == "sample":
                # Any 100 rows: each a row of the sample, with the sample's columns.
                columns = {c for c in rows[0]._mapping.keys()} if rows else set()
                missing = sorted({c[0] for c in con.execute("DESCRIBE wikipedia").fetchall()} - columns)
                sample = {tuple(plain(v) for v in r) for r in con.execute('SELECT __time, page, "user", added FROM wikipedia').fetchall()}
                strangers = [r for r in rows if (r.__time, r.page, r.user, r.added) not in sample]
                difference = None
                if len(ours) != 100 or missing or strangers:
                    difference = f"{len(ours)} rows, columns missing {missing}, not in the sample {strangers[:1]}"
            else:
                theirs = [[plain(v) for v in row] for row in con.execute(duck_sql).fetchall()]
                difference = compare(ours, theirs, how)
            out[name] = {"ran": True, "rows": len(ours), "difference": difference}
            failed += difference is not None
    out["passed"] = f"{len(CHARTS) - failed} of {len(CHARTS)}"
    json.dump(out, sys.stdout, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

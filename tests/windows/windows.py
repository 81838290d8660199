"""Window functions against DuckDB: the shapes dashboards write (ranks, running and partition
totals, a share of the total, moving averages, LAG/LEAD, NTILE, first and last values, named
windows, a window over ungrouped rows, ORDER BY and LIMIT over the windowed rows), each answered
by the API and by DuckDB over the same rows.

Usage: windows.py URL DATA.json.gz
URL is a Druid API (`sluice serve`) holding the sample as datasource `wikipedia`; DATA is the
sample. Prints one JSON object (per query: the rows compared and the first difference); exits 1
when a query fails. Window ORDER BY keys are unique within their partitions wherever the
function would otherwise pick between tied rows (ROW_NUMBER, LAG, LEAD, ROWS frames), and
DuckDB is told to order nulls as Druid does (first ascending, last descending).
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "superset"))
from charts import compare, duck, plain, post  # noqa: E402

H = "TIME_FLOOR(__time, 'PT1H')"
DH = "date_trunc('hour', __time)"

# name -> (Druid SQL, DuckDB SQL, how rows compare)
QUERIES = {
    "rank by count": (
        "SELECT channel, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM wikipedia GROUP BY channel",
        "SELECT channel, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM wikipedia GROUP BY channel",
        "set",
    ),
    "partition totals": (
        """SELECT channel, isRobot, SUM(added) AS s, SUM(SUM(added)) OVER (PARTITION BY channel) AS total
FROM wikipedia GROUP BY channel, isRobot""",
        """SELECT channel, isRobot, SUM(added) AS s, SUM(SUM(added)) OVER (PARTITION BY channel) AS total
FROM wikipedia GROUP BY channel, isRobot""",
        "set",
    ),
    "running total per channel": (
        f"""SELECT channel, {H} AS h, SUM(delta) AS d, SUM(SUM(delta)) OVER (PARTITION BY channel ORDER BY {H}) AS running
FROM wikipedia WHERE channel IN ('#en.wikipedia', '#de.wikipedia') GROUP BY 1, 2""",
        f"""SELECT channel, {DH} AS h, SUM(delta) AS d, SUM(SUM(delta)) OVER (PARTITION BY channel ORDER BY {DH}) AS running
FROM wikipedia WHERE channel IN ('#en.wikipedia', '#de.wikipedia') GROUP BY 1, 2""",
        "set",
    ),
    "ranks and distributions": (
        """SELECT countryName, COUNT(*) AS n, DENSE_RANK() OVER (ORDER BY COUNT(*) DESC) AS dr,
PERCENT_RANK() OVER (ORDER BY COUNT(*)) AS pr, CUME_DIST() OVER (ORDER BY COUNT(*)) AS cd,
NTILE(4) OVER (ORDER BY COUNT(*), countryName) AS nt FROM wikipedia WHERE countryName IS NOT NULL GROUP BY 1""",
        """SELECT countryName, COUNT(*) AS n, DENSE_RANK() OVER (ORDER BY COUNT(*) DESC) AS dr,
PERCENT_RANK() OVER (ORDER BY COUNT(*)) AS pr, CUME_DIST() OVER (ORDER BY COUNT(*)) AS cd,
NTILE(4) OVER (ORDER BY COUNT(*), countryName) AS nt FROM wikipedia WHERE countryName IS NOT NULL GROUP BY 1""",
        "set",
    ),
    "lag and lead by hour": (
        f"""SELECT {H} AS h, COUNT(*) AS n, LAG(COUNT(*)) OVER (ORDER BY {H}) AS prev,
LEAD(COUNT(*), 2, 0) OVER (ORDER BY {H}) AS next2 FROM wikipedia GROUP BY 1""",
        f"""SELECT {DH} AS h, COUNT(*) AS n, LAG(COUNT(*)) OVER (ORDER BY {DH}) AS prev,
LEAD(COUNT(*), 2, 0) OVER (ORDER BY {DH}) AS next2 FROM wikipedia GROUP BY 1""",
        "set",
    ),
    "moving average and sliding minimum": (
        f"""SELECT {H} AS h, COUNT(*) AS n,
AVG(COUNT(*)) OVER (ORDER BY {H} ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS ma,
MIN(COUNT(*)) OVER (ORDER BY {H} ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS mn FROM wikipedia GROUP BY 1""",
        f"""SELECT {DH} AS h, COUNT(*) AS n,
AVG(COUNT(*)) OVER (ORDER BY {DH} ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS ma,
MIN(COUNT(*)) OVER (ORDER BY {DH} ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS mn FROM wikipedia GROUP BY 1""",
        "set",
    ),
    "first and last values": (
        """SELECT channel, COUNT(*) AS n, FIRST_VALUE(channel) OVER (ORDER BY COUNT(*) DESC, channel) AS top,
LAST_VALUE(channel) OVER (ORDER BY COUNT(*) DESC, channel ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
AS bottom FROM wikipedia GROUP BY 1""",
        """SELECT channel, COUNT(*) AS n, FIRST_VALUE(channel) OVER (ORDER BY COUNT(*) DESC, channel) AS top,
LAST_VALUE(channel) OVER (ORDER BY COUNT(*) DESC, channel ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
AS bottom FROM wikipedia GROUP BY 1""",
        "set",
    ),
    "share of the total": (
        "SELECT channel, 100.0 * COUNT(*) / SUM(COUNT(*)) OVER () AS pct FROM wikipedia GROUP BY 1",
        "SELECT channel, 100.0 * COUNT(*) / SUM(COUNT(*)) OVER () AS pct FROM wikipedia GROUP BY 1",
        "set",
    ),
    "named window": (
        """SELECT channel, COUNT(*) AS n, RANK() OVER w AS r, ROW_NUMBER() OVER w AS rn FROM wikipedia GROUP BY 1
WINDOW w AS (ORDER BY COUNT(*) DESC, channel)""",
        """SELECT channel, COUNT(*) AS n, RANK() OVER w AS r, ROW_NUMBER() OVER w AS rn FROM wikipedia GROUP BY 1
WINDOW w AS (ORDER BY COUNT(*) DESC, channel)""",
        "set",
    ),
    "order and limit over the windowed rows": (
        """SELECT channel, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM wikipedia GROUP BY 1
ORDER BY r, channel LIMIT 5""",
        """SELECT channel, COUNT(*) AS n, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM wikipedia GROUP BY 1
ORDER BY r, channel LIMIT 5""",
        "ordered",
    ),
    "window over ungrouped rows": (
        """SELECT page, added, COUNT(*) OVER (PARTITION BY page) AS edits, MAX(added) OVER (PARTITION BY page) AS most
FROM wikipedia WHERE channel = '#sv.wikipedia'""",
        """SELECT page, added, COUNT(*) OVER (PARTITION BY page) AS edits, MAX(added) OVER (PARTITION BY page) AS most
FROM wikipedia WHERE channel = '#sv.wikipedia'""",
        "set",
    ),
}


def nulls_as_druid(sql: str) -> str:
    """DuckDB's window ORDER BY keys with Druid's null order."""
    sql = sql.replace(" DESC)", " DESC NULLS LAST)").replace(" DESC,", " DESC NULLS LAST,")
    return sql


def main() -> None:
    url, data = sys.argv[1], sys.argv[2]
    con = duck(data)
    out, failed = {}, 0
    for name, (sql, duck_sql, how) in QUERIES.items():
        status, text = post(url, "/druid/v2/sql", {"query": sql, "resultFormat": "array"})
        if status != 200:
            out[name] = {"ran": False, "error": text[:300]}
            failed += 1
            continue
        ours = [[plain(v) for v in row] for row in json.loads(text)]
        theirs = [[plain(v) for v in row] for row in con.execute(nulls_as_druid(duck_sql)).fetchall()]
        difference = compare(ours, theirs, how)
        out[name] = {"ran": True, "rows": len(ours), "difference": difference}
        failed += difference is not None
    out["passed"] = f"{len(QUERIES) - failed} of {len(QUERIES)}"
    json.dump(out, sys.stdout, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
